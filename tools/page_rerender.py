"""How long a page takes to re-render after one control changes, measured with Streamlit's AppTest.

    python -m tools.page_rerender [--rounds 3] [--pages views/sqrt_dk.py ...]

For each page: one warm-up run at defaults (fills the caches), then every control is changed in turn,
`rounds` times, to a random valid value, and each `at.run()` is timed. Prints per-page median, p90
and max in milliseconds. The first change to an uncached value pays for the computation; that is
the figure a student feels, so it is kept in the statistics.
"""

from __future__ import annotations

import argparse
import pathlib
import random
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from explorer.ui.registry import PAGES  # noqa: E402
from tools.controls import controls, set_random  # noqa: E402


def measure(path: str, rounds: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page(path)
    at.run()
    times = []
    for _ in range(rounds):
        for kind, widget in list(controls(at)):
            if not set_random(kind, widget, rng):
                continue
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
            if at.exception:
                raise SystemExit(f"{path}: exception after changing {widget.key}: {at.exception[0].message}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages", nargs="*", default=[p.path for p in PAGES])
    args = parser.parse_args()
    print("| page | changes | median ms | p90 ms | max ms |\n| --- | ---: | ---: | ---: | ---: |")
    for path in args.pages:
        t = sorted(1000 * x for x in measure(path, args.rounds, args.seed))
        if not t:
            print(f"| {path} | 0 | - | - | - |")
            continue
        p90 = t[min(len(t) - 1, int(0.9 * len(t)))]
        print(f"| {path} | {len(t)} | {statistics.median(t):.0f} | {p90:.0f} | {t[-1]:.0f} |")


if __name__ == "__main__":
    main()
