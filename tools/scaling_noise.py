"""How far noise moves the scaling page's time slopes: the page's own measurement (explorer.tables.scaling.run_method)
at its default setting, several times, with the old fit (median of 3 calls, no range) beside the new one (median of
REPEATS calls, the range the p10-p90 bars allow, the CPU share, whether the server would keep the run).

    python -m tools.scaling_noise --trials 4 [--max-n 1024]
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import pandas as pd

from explorer.tables import scaling as tables

METHODS = ("naive", "tiled", "sdpa")


def one_run(repeats: int, max_n: int) -> pd.DataFrame:
    with mock.patch.object(tables, "REPEATS", repeats):
        settings = tables.LiveSettings(max_n, 64, 4, False, tables.AUTO, 256)
        parts = [tables.run_method(m, settings) for m in METHODS]
    return pd.concat(parts, ignore_index=True)


def summary(rows: pd.DataFrame) -> dict:
    fitted = tables.slopes(tables.points(rows, "live")).set_index("method")
    out = {m: tables.time_text(*fitted.loc[m, ["time_slope", "time_lo", "time_hi", "time_stated"]]) for m in METHODS}
    out["tiled memory"] = (
        f"{fitted.loc['tiled', 'memory_slope']:.2f} (model {fitted.loc['tiled', 'memory_theory']:.2f})"
    )
    out["min CPU share"] = f"{tables.fitted_rows(rows).cpu_share.min():.0%}"
    out["kept"] = "yes" if tables.keepable(rows) else "no"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--max-n", type=int, default=1024)
    args = parser.parse_args()
    lines = []
    for trial in range(args.trials):
        for label, repeats in (("old: median of 3", 3), (f"new: median of {tables.REPEATS}", tables.REPEATS)):
            start = time.perf_counter()
            rows = one_run(repeats, args.max_n)
            s = summary(rows)
            old = {m: f"{tables.loglog_slope(*_top(rows, m)):.2f}" for m in METHODS}
            shown = old if repeats == 3 else {m: s[m] for m in METHODS}
            load = os.getloadavg()[0]
            cells = [str(trial + 1), label, *shown.values(), s["tiled memory"], s["min CPU share"]]
            cells += ["–" if repeats == 3 else s["kept"], f"{load:.1f}", f"{time.perf_counter() - start:.1f}"]
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)


def _top(rows: pd.DataFrame, method: str):
    top = tables.fitted_rows(rows[rows.method == method])
    return top.n, top.time_ms_median


if __name__ == "__main__":
    main()
