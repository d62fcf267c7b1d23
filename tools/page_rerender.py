"""What one control change costs a page: the server's CPU time for the rerun, and its wall time.

    python -m tools.page_rerender [--rounds 3] [--seed 0] [--pages views/sqrt_dk.py ...]
    python -m tools.page_rerender --client ws [--rounds 3] ...     # a real server, as a browser drives it

Two clients. `apptest` (the default) runs the app in this process with Streamlit's AppTest and drives every kind
of control; AppTest always reruns the whole page. `ws` starts `streamlit run app.py` and drives it over its
websocket protocol as a browser does (tools/ws_client.py: sliders, select sliders, checkboxes and toggles of the
main area): a control drawn inside a section (st.fragment, explorer.ui.page.section) reruns only that section,
and that run is what is measured. The server writes each run's script-thread CPU to the file named by
ATTN_RUN_CPU_LOG (app.py for a whole run, page.section for a section run alone).

For each page: one run at defaults (fills the caches), then, `rounds` times, every control in turn is set to
a random valid value ("first": the first visit to that value may compute), set back to its previous value and
set to the new one again (both "warm": what the class asks for once one student has asked). Per run it reads
the CPU time of the script thread, measured by app.py itself (`time.thread_time()` from its first line to its
last), so AppTest's own work (protobuf parsing, element tree) is not counted; wall time is printed beside it.
Prints per page the median and p90 of the warm runs' CPU, the median of the first visits' CPU, and wall medians,
and how many times a control listed at a round's start was gone at its turn (an earlier change removed it: the
induction page's snapshot slider once the steps change) and was skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest, app_test, local_script_runner  # noqa: E402

from explorer.ui.registry import PAGES  # noqa: E402
from tools.controls import controls, set_random  # noqa: E402
from tools.server import streamlit_server  # noqa: E402
from tools.ws_client import WsSession  # noqa: E402

RUN_CPU = "_run_cpu_ms"  # written by app.py at the end of every run
# A server compiles each script once (one ScriptCache for app.py and every page); AppTest gives every run two fresh
# ones (its script runner's, for app.py, and its pages manager's, for the page), which would add the parse, the
# magic rewrite and the compile of the page (~10 ms) to every measured run.
_SCRIPTS = ScriptCache()
local_script_runner.ScriptCache = app_test.ScriptCache = lambda: _SCRIPTS


def _run(at: AppTest, path: str, what: str) -> tuple[float, float]:
    """(script CPU ms, wall ms) of one run."""
    start = time.perf_counter()
    at.run()
    wall = 1000 * (time.perf_counter() - start)
    if at.exception:
        raise SystemExit(f"{path}: exception after {what}: {at.exception[0].message}")
    return at.session_state[RUN_CPU], wall


def measure(path: str, rounds: int, seed: int) -> dict[str, list[float]]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page(path)
    at.run()
    return _drive(at, path, rounds, random.Random(seed))


def _find(at: AppTest, key: str):
    """The control `key` of the page as last drawn, or None if that run did not draw it."""
    return next((w for _, w in controls(at) if w.key == key), None)


def _drive(at: AppTest, path: str, rounds: int, rng: random.Random) -> dict:
    """Each control listed at a round's start, in turn: set, set back, set again. A control is looked up again
    before each change: a widget object from an earlier run is stale (a value set on it is not sent), and a control
    that an earlier change removed (the induction page's snapshot slider once the steps change) is skipped and
    counted."""
    out = {"first_cpu": [], "first_wall": [], "warm_cpu": [], "warm_wall": [], "gone": 0}
    for _ in range(rounds):
        for kind, key in [(kind, widget.key) for kind, widget in controls(at)]:
            widget = _find(at, key)
            if widget is None:
                out["gone"] += 1
                continue
            before = widget.value
            if not set_random(kind, widget, rng):
                continue
            after = widget.value
            cpu, wall = _run(at, path, f"changing {key}")
            out["first_cpu"].append(cpu)
            out["first_wall"].append(wall)
            for value in (before, after):  # back and forth: both states were computed once already
                found = _find(at, key)
                if found is None:  # its own change removed it
                    out["gone"] += 1
                    break
                found.set_value(value)
                cpu, wall = _run(at, path, f"setting {key} again")
                out["warm_cpu"].append(cpu)
                out["warm_wall"].append(wall)
    return out


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def _new_lines(log: pathlib.Path, seen: int) -> tuple[list[tuple[str, float]], int]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return [(kind, float(ms)) for kind, ms in (line.split() for line in lines[seen:])], len(lines)


async def _measure_ws(url: str, path: str, rounds: int, seed: int, log: pathlib.Path) -> dict[str, list[float]]:
    """The same back-and-forth as `measure`, over the websocket: each run's CPU from the server's log."""
    rng = random.Random(seed)
    out = {"first_cpu": [], "first_wall": [], "warm_cpu": [], "warm_wall": [], "sections": [0, 0], "unlogged": 0}
    seen = len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0
    async with WsSession(url) as session:
        await session.rerun(pathlib.Path(path).stem)
        _, seen = _new_lines(log, seen)

        async def one(state, kind: str) -> None:
            nonlocal seen
            run = await session.set(state)
            if run.errors:
                raise SystemExit(f"{path}: {run.errors[0]}")
            lines, seen = _new_lines(log, seen)
            if not lines:  # a fragment that is not a page.section logs nothing: not measured, not counted as 0
                out["unlogged"] += 1
                return
            out[f"{kind}_cpu"].append(sum(ms for _, ms in lines))
            out[f"{kind}_wall"].append(1000 * run.seconds)
            out["sections"][0] += all(k == "fragment" for k, _ in lines)
            out["sections"][1] += 1

        out["gone"] = await _drive_ws(session, rounds, rng, one)
    return out


async def _drive_ws(session: WsSession, rounds: int, rng: random.Random, one) -> int:
    """Each control listed at a round's start, in turn: `one(state, "first")`, then back and forth ("warm").
    A control that an earlier change removed (a control that depends on another) is skipped; how many, returned."""
    gone = 0
    for _ in range(rounds):
        for wid in sorted(session.controls):
            if wid not in session.controls:
                gone += 1
                continue
            before, picked = session.current(wid), session.pick_value(wid, rng)
            if picked is None:
                continue
            after = picked[1]
            await one(after, "first")
            for state in (before, after):  # back and forth: both values were computed once already
                if wid not in session.controls:  # its own change removed it
                    gone += 1
                    break
                await one(state, "warm")
    return gone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages", nargs="*", default=[p.path for p in PAGES])
    parser.add_argument("--client", choices=("apptest", "ws"), default="apptest")
    args = parser.parse_args()
    med = statistics.median
    if args.client == "ws":
        print(
            "| page | warm runs | section runs | warm CPU median ms | warm CPU p90 ms | first-visit CPU median ms "
            "| warm wall median ms | first-visit wall median ms | controls gone, skipped |\n| --- |" + " ---: |" * 8
        )
        with tempfile.TemporaryDirectory() as folder:
            log = pathlib.Path(folder) / "runs.log"
            os.environ["ATTN_RUN_CPU_LOG"] = str(log)  # the server started below inherits it
            with streamlit_server() as server:
                for path in args.pages:
                    m = asyncio.run(_measure_ws(server.url, path, args.rounds, args.seed, log))
                    if not m["warm_cpu"]:
                        print(f"| {path} | 0 | - | - | - | - | - | - | {m['gone']} |")
                        continue
                    alone, total = m["sections"]
                    if m["unlogged"]:
                        print(f"({path}: {m['unlogged']} runs logged no CPU time and are left out)", file=sys.stderr)
                    print(
                        f"| {path} | {len(m['warm_cpu'])} | {alone} of {total} | {med(m['warm_cpu']):.1f} "
                        f"| {_p90(m['warm_cpu']):.1f} | {med(m['first_cpu']):.1f} | {med(m['warm_wall']):.0f} "
                        f"| {med(m['first_wall']):.0f} | {m['gone']} |",
                        flush=True,
                    )
        return
    print(
        "| page | warm runs | warm CPU median ms | warm CPU p90 ms | first-visit CPU median ms "
        "| warm wall median ms | first-visit wall median ms | controls gone, skipped |\n| --- |" + " ---: |" * 7
    )
    for path in args.pages:
        m = measure(path, args.rounds, args.seed)
        if not m["warm_cpu"]:
            print(f"| {path} | 0 | - | - | - | - | - | {m['gone']} |")
            continue
        print(
            f"| {path} | {len(m['warm_cpu'])} | {med(m['warm_cpu']):.1f} | {_p90(m['warm_cpu']):.1f} "
            f"| {med(m['first_cpu']):.1f} | {med(m['warm_wall']):.0f} | {med(m['first_wall']):.0f} | {m['gone']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
