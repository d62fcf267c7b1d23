"""What one Train click adds to a server's memory at its peak, measured against the estimate the line checks.

    python -m tools.train_memory                     # the learning pages' heaviest settings and a few smaller ones
    python -m tools.train_memory --out benchmarks/train_memory.md

Each setting runs in a fresh process of its own, warmed as a server is before anyone trains (the page's untrained
view and a two-step run of the same settings: torch's lazy imports and first allocations belong to the server, not
to the click), its allocator settled as the server's is (heavy.settle_allocator). Then the kernel's peak-RSS mark
is reset (`/proc/self/clear_refs`), the click's training runs with one torch thread, as the training line runs it,
and its need is the peak resident memory (VmHWM) less the resident memory before it; what it still holds after,
its result kept (a finished run stays on the shelf), is shown beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import subprocess
import sys

# (page, task, d_model or d_k, heads, layers, steps): the heaviest each page allows, then smaller ones
SETTINGS = [
    ("learning", "reverse", 256, 4, 2, 100),
    ("learning", "recall", 256, 4, 2, 100),
    ("learning", "reverse", 256, 4, 1, 300),
    ("learning", "recall", 128, 4, 1, 1000),
    ("learning", "reorder", 128, 2, 2, 300),
    ("learning", "reverse", 64, 1, 1, 300),
    ("learning", "recall", 16, 1, 1, 300),
    ("learning_scale", "reverse", 256, 1, 1, 300),
    ("learning_scale", "recall", 64, 1, 1, 300),
]


def _kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(re.search(rf"^{field}:\s+(\d+) kB", status.read(), re.M)[1])


def learning_click(task: str, d_model: int, heads: int, layers: int, steps: int):
    """(the click's run, its config, its training line cost) as the learning page makes them."""
    from attn_core.learn import train
    from explorer.tables import learning as tables

    cfg = tables.learn_config(task, d_model, heads, layers, tables.AUTO, steps, True, 1)
    return (lambda c: train(c)), cfg, tables.cost(cfg)


def scale_click(task: str, d_k: int, heads: int, layers: int, steps: int):
    """The same for the √d_k page (heads and layers: 1, its only model): two runs, scaled and unscaled."""
    from attn_core.learn.scaling import compare_scaling
    from explorer.tables import learning as tables

    cfg = tables.scale_config(task, d_k, 1.0, steps, 1)
    return (lambda c: compare_scaling(c)), cfg, tables.cost(cfg, runs=2)


CLICKS = {"learning": learning_click, "learning_scale": scale_click}  # a page that trains adds its own


def click(page: str, *settings):
    return CLICKS[page](*settings)


def measure_one(setting: list) -> dict:
    """In this (fresh) process: the click's peak growth of resident memory, in MiB, beside the line's estimate."""
    import gc
    from dataclasses import replace

    from attn_core.learn import one_thread
    from explorer.tables import learning as tables
    from explorer.ui.heavy import settle_allocator

    settle_allocator()  # as the server does at its start (app.py)
    run, cfg, _ = click(*setting)
    with one_thread():
        tables.untrained(cfg)
        run(replace(cfg, steps=2))
        gc.collect()
        before = _kib("VmRSS")
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")  # the peak-RSS mark back to the RSS now
        result = run(cfg)
        peak, after = _kib("VmHWM"), _kib("VmRSS")
    del result
    return {"setting": setting, "peak_mib": (peak - before) / 1024, "kept_mib": (after - before) / 1024}


def measure(setting: tuple) -> dict:
    """measure_one in a fresh process, with the estimate the line checks."""
    out = subprocess.run(
        [sys.executable, "-m", "tools.train_memory", "--one", json.dumps(setting)],
        capture_output=True, text=True, check=True, cwd=pathlib.Path(__file__).resolve().parents[1],
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1]) | {"estimate_mib": click(*setting)[2][2]}


def report(rows: list[dict]) -> str:
    """A Markdown table of the measured rows beside the estimate the training line checks (computed here, so that a
    changed estimate can be laid beside saved measurements: --rows)."""
    from explorer.tables import learning as tables
    from tools.load_test import machine

    m = machine()
    lines = [
        "| page | task | d_model (d_k) | heads | layers | steps | work (flops) | measured peak growth MiB "
        "| kept after MiB | estimate MiB | estimate / measured |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        page, task, width, heads, layers, steps = r["setting"]
        _, cfg, cost = click(*r["setting"])
        r |= {"work": tables.work(cfg), "estimate_mib": cost[2]}
        lines.append(
            f"| {page} | {task} | {width} | {heads} | {layers} | {steps} | {r['work']:.2g} | {r['peak_mib']:.1f} "
            f"| {r['kept_mib']:.1f} | {r['estimate_mib']:.1f} | {r['estimate_mib'] / max(r['peak_mib'], 0.1):.2f} |"
        )
    head = (
        f"- date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; machine: {m['nproc']} CPUs "
        f"({m['cpu']}), {m['memory']} RAM; python {m['python']}, torch {m['torch']}; command: "
        f"`python -m tools.train_memory`"
    )
    return "\n".join([head, "", *lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: measure this one setting
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--rows", type=pathlib.Path, help="JSON file of measured rows: written if absent, else read")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(json.loads(args.one))))
        return
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = [measure(s) for s in SETTINGS]
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    text = report(rows)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
