"""What the page "Watch an induction head form" costs: one Train click, and its warm reruns.

    python -m tools.induction_bench click 400 0   # in a fresh process: seconds of each model, peak RSS growth (JSON)
    python -m tools.induction_bench rerun         # warm rerun CPU of the plain and the trained view (JSON lines)

Recorded in benchmarks/induction_page.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import time


def _kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(re.search(rf"^{field}:\s+(\d+) kB", status.read(), re.M)[1])


def click(steps: int, seed: int) -> dict:
    """One click as the training line runs it (one torch thread), after the server's warm-up: the untrained view
    and a 40-step click of another seed (torch's first allocations belong to the server, not to the click)."""
    from attn_core.learn import one_thread
    from explorer.tables import induction as tables
    from explorer.ui.heavy import settle_allocator

    settle_allocator()
    pair = tables.pair_config(steps, seed)
    with one_thread():
        tables.untrained_pair(pair)
        tables.train_pair(tables.pair_config(40, seed + 1))
        gc.collect()
        before = _kib("VmRSS")
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")  # the peak-RSS mark back to the RSS now
        start, cpu = time.perf_counter(), time.thread_time()
        result = tables.train_pair(pair)
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu
        peak, after = _kib("VmHWM"), _kib("VmRSS")
    f = tables.facts(result, steps)
    return {
        "steps": steps, "seed": seed, "wall_s": wall, "cpu_s": cpu,
        "wall_s_each": [r.seconds for r in result], "cpu_s_each": [r.cpu_seconds for r in result],
        "peak_mib": (peak - before) / 1024, "kept_mib": (after - before) / 1024, "estimate_mib": tables.cost(pair)[2],
        "phase": tables.phase_changes(result), "induction": [f["ind"], f["one_ind"]],
        "repeated": [f["rep_two"], f["rep_one"]],
    }  # fmt: skip


def _summary(view: str, out: dict) -> dict:
    from tools.page_rerender import _p90

    warm, first = out["warm_cpu"], out["first_cpu"]
    return {
        "view": view, "warm_runs": len(warm), "warm_cpu_median_ms": statistics.median(warm),
        "warm_cpu_p90_ms": _p90(warm), "first_cpu_median_ms": statistics.median(first),
        "warm_wall_median_ms": statistics.median(out["warm_wall"]),
    }  # fmt: skip


def trained_reruns() -> dict:
    """The default click of seed 0 on the shelf, then each control of the trained view set, set back, set again.
    (tools.page_rerender's loop cannot: the snapshot slider it lists is gone once it has changed the steps.)"""
    from streamlit.testing.v1 import AppTest

    from attn_core.learn import one_thread
    from explorer.tables import induction as tables
    from explorer.ui import training
    from tools.page_rerender import ROOT, RUN_CPU

    with one_thread():
        pair = tables.train_pair(tables.pair_config(tables.DEFAULT_STEPS, 0))
        training.results().put(("induction", tables.DEFAULT_STEPS, 0), pair)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page("views/induction.py")
    at.run()
    out = {"first_cpu": [], "first_wall": [], "warm_cpu": [], "warm_wall": []}

    def run(kind: str) -> None:
        start = time.perf_counter()
        at.run()
        if at.exception:
            raise SystemExit(at.exception[0].message)
        out[f"{kind}_cpu"].append(at.session_state[RUN_CPU])
        out[f"{kind}_wall"].append(1000 * (time.perf_counter() - start))

    steps = [int(o) for o in at.select_slider(key="ind_snapshot").options]
    changes = [("select_slider", "ind_snapshot", steps[-1], s) for s in (steps[5], steps[10], steps[20])]
    changes += [("button_group", "ind_map", "two:1", m) for m in ("two:0", "one:0")]
    changes += [("multiselect", "ind_knockout", [], h) for h in (["L0H0"], ["L0H0", "L1H3"])]
    changes += [("radio", "ind_mode", "zero", "mean")]
    for kind, key, back, value in changes:
        for state, what in ((value, "first"), (back, "warm"), (value, "warm")):
            getattr(at, kind)(key=key).set_value(state)
            run(what)
        getattr(at, kind)(key=key).set_value(back)
        run("warm")
    return _summary(f"trained ({tables.DEFAULT_STEPS} steps): snapshot, maps, knockout, mode", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("click")
    one.add_argument("steps", type=int)
    one.add_argument("seed", type=int)
    sub.add_parser("rerun")
    args = parser.parse_args()
    if args.what == "click":
        print(json.dumps(click(args.steps, args.seed)))
        return
    from tools.page_rerender import measure

    print(json.dumps(_summary("untrained (plain view)", measure("views/induction.py", 2, 0))), flush=True)
    print(json.dumps(trained_reruns()))


if __name__ == "__main__":
    main()
