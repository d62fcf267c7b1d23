"""Train at once: a class presses Train on a training page together (tools.load_test --train same|different).

    python -m tools.load_test --train same --sessions 30 --out benchmarks/load_test_train_same.md
    python -m tools.load_test --train different --sessions 30 --action-timeout 500 \
        --out benchmarks/load_test_train_different.md   # a click may wait minutes on a busy machine

`same`: every session opens the teacher's link (the page's default settings, seed 0) and they press Train at the
same moment: the server should train once and every page end together. `different`: session k opens its own
settings (train_query(k): a task, a number of heads and the scale on or off, its own seed; d_model 64 and 300 steps,
the page's default work per click) and they all press Train together. For each session: when its result arrived
after the click, what its first status said (its place, the estimated end), how the run ended. The server's RSS is
sampled throughout (tools.load_test.MemorySampler).

`--train-page induction` does the same on "Watch an induction head form": its settings are the number of steps and
the seed, so `different` gives session k the page's default steps and seed k + 1.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field

DEFAULTS = {"learn_d_model": "64", "learn_steps": "300", "learn_layers": "1", "learn_lr": "auto"}
TASKS = ("reverse", "reorder", "copy_offset", "recall")
ESTIMATE = re.compile(r"be done in about (\d+) s")
PLACE = re.compile(r"number (\d+) in the server's training line")


@dataclass(frozen=True)
class TrainPage:
    """A page with a Train button: its name in the router, the button's widget key and the query of session k."""

    name: str
    button: str
    charts: int  # a finished run draws at least this many charts

    def query(self, k: int, mode: str, extra: dict[str, str] | None = None) -> str:
        if self.name == "learning":
            return train_query(k, mode, extra)
        return urllib.parse.urlencode({"seed": "0" if mode == "same" else str(k + 1)} | (extra or {}))


PAGES = {"learning": TrainPage("learning", "-learn_train", 3), "induction": TrainPage("induction", "-ind_train", 4)}


def train_query(k: int, mode: str, extra: dict[str, str] | None = None) -> str:
    """Session k's link: the defaults and seed 0 for all (`same`), or settings of its own (`different`)."""
    if mode == "same":
        params = {**DEFAULTS, "learn_task": "reverse", "learn_heads": "1", "learn_scaled": "true", "seed": "0"}
    else:
        params = {
            **DEFAULTS,
            "learn_task": TASKS[k % 4],
            "learn_heads": ("1", "2", "4")[(k // 4) % 3],
            "learn_scaled": "true" if (k // 12) % 2 == 0 else "false",
            "seed": str(k + 1),
        }
    return urllib.parse.urlencode(params | (extra or {}))


@dataclass
class TrainClick:
    """What one session saw: outcome finished (the trained charts drawn), full, error, timeout or failed."""

    query: str
    outcome: str = "failed"
    seconds: float = float("nan")  # click -> the page's run ended with the result
    place: int | None = None  # the first place its status showed (None: it never waited)
    estimate_s: float | None = None  # the first estimated end it showed, seconds after the click
    why: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """The first estimated end over the real time to the result: 1 is honest, 3 says three times too long."""
        if self.estimate_s is None or self.outcome != "finished" or not self.seconds > 0:
            return None
        return self.estimate_s / self.seconds


async def click_train(
    url: str, query: str, barrier: asyncio.Barrier, timeout_s: float, page: TrainPage = PAGES["learning"]
) -> TrainClick:
    from tools.ws_client import WsSession

    done = TrainClick(query)
    try:
        async with WsSession(url) as session:
            first = await session.rerun(page.name, query=query, timeout=timeout_s)
            button = next((w for w in first.widgets if w.endswith(page.button)), None)
            if button is None or first.errors:
                raise RuntimeError(f"no Train button, or an error: {first.errors}")
            await barrier.wait()
            start = time.perf_counter()
            run = await session.rerun(trigger=button, timeout=timeout_s)
            done.seconds = run.seconds
            texts = [(t - start, text) for t, text in run.progress]
            done.place = next((int(m[1]) for _, x in texts if (m := PLACE.search(x))), None)
            done.estimate_s = next((at + int(m[1]) for at, x in texts if (m := ESTIMATE.search(x))), None)
            done.why = list(run.errors) + list(run.warnings)
            full = any("Too many benchmarks and training runs" in w for w in run.warnings)
            drawn = run.charts >= page.charts
            done.outcome = "error" if run.errors else "full" if full else "finished" if drawn else "nothing"
    except TimeoutError:
        done.outcome = "timeout"
    except Exception as e:  # noqa: BLE001 - recorded, the others go on
        done.why.append(f"{type(e).__name__}: {str(e)[:200]}")
    return done


async def train_at_once(
    url: str, sessions: int, mode: str, timeout_s: float, extra=None, page: TrainPage = PAGES["learning"]
) -> list[TrainClick]:
    barrier = asyncio.Barrier(sessions)
    queries = [page.query(k, mode, extra) for k in range(sessions)]
    return await asyncio.gather(*(click_train(url, q, barrier, timeout_s, page) for q in queries))


def report(args, clicks: list[TrainClick], mem: dict[str, float], loads: tuple, command: str) -> tuple[str, bool]:
    from tools.load_test import machine

    m = machine()
    last = max((c.seconds for c in clicks if c.outcome == "finished"), default=float("nan"))
    finished = sum(c.outcome == "finished" for c in clicks)
    goals = [
        ("every click got its result", finished == len(clicks), f"{finished} of {len(clicks)}"),
        ("the last result within 60 s of the click", last <= 60, f"{last:.1f} s"),
        ("server RSS ≤ 1 GB (1024 MB) all along", mem["peak"] <= 1024, f"peak {mem['peak']:.0f} MB"),
    ]
    lines = [
        f"# Train at once on the {args.train_page} page: {len(clicks)} sessions, {args.train} settings",
        "",
        f"- date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM; load average (1, 5, 15 min) before "
        f"{loads[0]}, after {loads[1]} (the machine is shared with other work: timings are not quiet)",
        f"- versions: python {m['python']}, streamlit {m['streamlit']}, torch {m['torch']}",
        f"- command: `{command}`",
        f"- training slots: ATTN_TRAIN_SLOTS={os.environ.get('ATTN_TRAIN_SLOTS', '2 (default)')}",
        "",
        "| goal | met | measured |",
        "| --- | --- | --- |",
        *[f"| {g} | {'yes' if ok else 'NO'} | {v} |" for g, ok, v in goals],
        "",
        f"Server RSS: baseline {mem['baseline']:.0f} MB (after start and one warm visit to every page), peak "
        f"{mem['peak']:.0f} MB during the clicks (sampled every {args.mem_interval:g} s).",
        "",
        ratio_line(clicks),
        "",
        "| session | settings | outcome | click → result s | first place | first estimated end s | estimate / real |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for k, c in enumerate(clicks):
        estimate = "-" if c.estimate_s is None else f"{c.estimate_s:.0f}"
        ratio = "-" if c.ratio is None else f"{c.ratio:.2f}"
        lines.append(f"| {k} | `{c.query}` | {c.outcome} | {c.seconds:.1f} | {c.place or '-'} | {estimate} | {ratio} |")
    problems = [f"- session {k}: {w[:200]}" for k, c in enumerate(clicks) for w in c.why if c.outcome != "finished"]
    lines += ["", "## Problems", "", *(problems or ["none"]), ""]
    return "\n".join(lines), all(ok for _, ok, _ in goals)


def ratio_line(clicks: list[TrainClick]) -> str:
    """The first estimates against the real times to the result, over the runs that showed one."""
    ratios = sorted(c.ratio for c in clicks if c.ratio is not None)
    if not ratios:
        return "No run showed an estimated end before its result."
    return (
        f"First estimated end / real time to the result, over the {len(ratios)} runs that showed one: median "
        f"{statistics.median(ratios):.2f}, range {ratios[0]:.2f}-{ratios[-1]:.2f}."
    )


def train_main(args, command: str) -> bool:
    """Start a server, warm it, let args.sessions sessions press Train together; write or print the report."""
    from tools.load_test import MemorySampler, tree_rss_mb, warm_visit
    from tools.server import streamlit_server

    extra = dict(item.partition("=")[::2] for item in args.train_set)
    with streamlit_server() as srv:
        sampler = MemorySampler(srv.proc.pid, args.mem_interval)
        sampler.start()
        asyncio.run(warm_visit(srv.url))
        time.sleep(2)
        baseline = tree_rss_mb(srv.proc.pid)
        before = os.getloadavg()
        t0 = time.monotonic()
        clicks = asyncio.run(
            train_at_once(srv.url, args.sessions, args.train, args.action_timeout, extra, PAGES[args.train_page])
        )
        mem = {"baseline": baseline, "peak": sampler.peak_between(t0, time.monotonic())}
        sampler.stop.set()
    loads = tuple(" ".join(f"{x:.1f}" for x in load) for load in (before, os.getloadavg()))
    text, ok = report(args, clicks, mem, loads, command)
    if args.out:
        args.out.write_text(text)
    print(text)
    return ok
