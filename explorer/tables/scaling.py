"""Tables for "Memory and time scaling": benchmark rows, log-log slopes, guide lines, recorded runs.

Every measurement comes from attn_core.bench (run_benchmark); this module only lays the rows out,
fits slopes to them and reads the recorded CSVs in benchmarks/: the scaling runs, and the Triton kernel's
speed record on a GPU (tools.gpu_check's gpu_attention.csv), told apart by their columns. The method
and source keys in the DataFrames stay English identifiers; the headers and names a reader sees are
arguments (`names`, `headers`), English by default, so a page can pass them in the viewer's language.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import functools
import io
import json
import math
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from attn_core.bench import (
    DTYPES,
    HEADROOM_STATUS,
    METHODS,
    ROW_FIELDS,
    TIME_LIMIT_STATUS,
    BenchConfig,
    Progress,
    default_methods,
    hardware_info,
    run_benchmark,
    status_parts,
)
from attn_core.budget import budget_bytes
from attn_core.tiled import default_blocks, tiled_working_bytes, tiled_working_parts
from explorer.ui.cache import Store, cached
from explorer.ui.i18n import LANGUAGES, catalog

N_MIN = 128
MAX_N_OPTIONS = tuple(2**i for i in range(9, 14))  # 512 .. 8192
AUTO = "auto"  # the tile size option that leaves the choice to tiled_attention (default_blocks)
BLOCK_OPTIONS = (AUTO, 32, 64, 128, 256, 512)
FIT_POINTS = 3  # slopes are fitted to the largest n, where fixed overheads matter least
# Five timed calls: their median ignores two slow ones, and their p10-p90 band bounds the slope (time_range).
REPEATS, WARMUP = 5, 1
NOISY_WIDTH = 0.5  # a time slope whose range is wider than this is too noisy to state (quiet runs give 0.1-0.2)
BUSY_SHARE = 0.6  # an entry whose thread had the CPU less than this share of its wall time ran on a busy server
TIME_THEORY = 2.0  # 4 B H n^2 d FLOPs for every method (causal: half of them, still n^2)
MEMORY_THEORY = {"naive": 2.0, "naive_masked": 2.0, "sdpa": 1.0, "triton": 1.0}  # tiled: from its byte count
METHOD_LABELS = {
    "naive": "naive",
    "naive_masked": "naive + causal mask",
    "tiled": "tiled (online softmax)",
    "sdpa": "torch SDPA",
    "triton": "Triton flash kernel",
}
MIB = 2**20
BUDGET_STEPS_MIB = (16, 64, 256, 1024, 4096)
# The headers of the tables a reader sees, by column key: English defaults, a page passes its own.
NOT_MEASURED_HEADERS = {"method": "method", "n": "n", "reason": "reason"}
RESULT_HEADERS = {
    "method": "method",
    "n": "n",
    "causal": "causal",
    "median": "median ms",
    "spread": "p10–p90 ms",
    "peak": "peak MiB",
    "scores": "n×n scores MiB (theory)",
    "ratio": "peak ÷ scores",
    "status": "status",
}
LISTING_HEADERS = {"run": "run", "setup": "setup", "torch": "torch", "command": "command"}
# The columns that make a CSV a scaling run (attn_core.bench), or a record of kernel speeds (tools.gpu_check)
SCALING_COLUMNS = frozenset({"method", "n", "status", "time_ms_median", "peak_mem_bytes"})
KERNEL_COLUMNS = frozenset({"mode", "dtype", "d", "causal", "n", "method", "backend", "candidate", "status", "tflops"})
KERNEL_GROUP = ["dtype", "d", "causal"]  # one summary row each, per mode
# The Triton kernel's default setting in a kernel record: the first of its tuned candidates, per mode
DEFAULT_CANDIDATE = {"fwd": "f0:", "fwd_bwd": "b0:"}
KERNEL_HEADERS = {
    "dtype": "dtype",
    "d": "d",
    "causal": "causal",
    "n": "n",
    "ours": "Triton TFLOP/s",
    "sdpa": "best SDPA TFLOP/s",
    "backend": "SDPA back-end",
    "ratio": "Triton ÷ SDPA",
}
QUANTITIES = {"time": "time", "memory": "memory"}  # the slope table's column names: "<quantity> · <source>"


def live_device() -> str:
    """Where the page measures: the GPU when there is one (then the Triton kernel runs too), else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def shown_by_default(device: str) -> tuple[str, ...]:
    """naive, tiled, SDPA, and the Triton kernel where it runs compiled; naive + causal mask only on request."""
    offered = method_options(device)
    return tuple(m for m in default_methods(device) if m != "naive_masked" and m in offered)


@functools.cache
def method_options(device: str) -> tuple[str, ...]:
    """The harness methods a page offers on `device`: the Triton kernel only where it runs compiled (triton_runs)."""
    return METHODS if triton_runs(device) else tuple(m for m in METHODS if m != "triton")


def triton_runs(device: str) -> bool:
    """Whether attn_core.flash_attention runs compiled on `device`: a CUDA GPU with triton installed. On a CPU
    it runs only under Triton's interpreter (TRITON_INTERPRET=1), exact but far too slow to time: for tests."""
    if torch.device(device).type != "cuda" or not torch.cuda.is_available():
        return False  # decided before importing triton, which is slow and optional
    from attn_core import flash_compiled

    return flash_compiled(device)


def budget_options() -> tuple[float, ...]:
    """Naive memory budgets a page may offer: the steps up to the library's own budget (attn_core.budget),
    which a shared classroom host sets low; that budget itself when it lies below every step."""
    limit = budget_bytes() / MIB
    return tuple(b for b in BUDGET_STEPS_MIB if b <= limit) or (limit,)


def sizes(max_n: int) -> tuple[int, ...]:
    """Powers of two from N_MIN up to max_n: 128, 256, ..., max_n."""
    if isinstance(max_n, bool) or not isinstance(max_n, int) or max_n < N_MIN:
        raise ValueError(f"max_n must be an integer >= {N_MIN}, got {max_n!r}")
    return tuple(2**i for i in range(int(math.log2(N_MIN)), int(math.log2(max_n)) + 1))


@dataclasses.dataclass(frozen=True)
class LiveSettings:
    """What a live run of the page measures with, its methods aside: the form's fields, the seed and the device.
    One value for every function that measures or describes a run; frozen, so equal settings are equal cache keys.

    block: one tile size for queries and keys, or AUTO for tiled_attention's own choice at each n.
    time_limit_s: once a method has run this long, its remaining (larger) n are skipped, not run.
    """

    max_n: int
    d: int
    heads: int
    causal: bool
    block: int | str
    budget_mb: float
    seed: int = 0
    device: str = "cpu"
    time_limit_s: float | None = None


def live_config(methods, settings: LiveSettings) -> BenchConfig:
    """The BenchConfig of one live run of the page (BenchConfig validates every field)."""
    block = None if settings.block == AUTO else settings.block
    return BenchConfig(
        device=settings.device,
        ns=sizes(settings.max_n),
        d=settings.d,
        heads=settings.heads,
        causal=settings.causal,
        methods=tuple(methods),
        repeats=REPEATS,
        warmup=WARMUP,
        memory_budget_mb=float(settings.budget_mb),
        block_q=block,
        block_k=block,
        seed=settings.seed,
        time_limit_s=settings.time_limit_s,
    )


def run_method(method: str, settings: LiveSettings, progress: Progress | None = None) -> pd.DataFrame:
    """One method of the live run at every n, as a DataFrame with the harness's ROW_FIELDS columns.

    One method per call so that a page can cache each method apart: hiding one costs nothing. The time
    limit therefore bounds each method's run: its smallest n always runs, the larger ones only while
    the method has taken less than time_limit_s. What the process may still take is its host's to say (a server
    runs it inside explorer.ui.heavy.heavy_slot, which lends bench its Host).
    """
    config = live_config([method], settings)
    clock = CpuShare(progress)
    rows = pd.DataFrame(run_benchmark(config, clock), columns=list(ROW_FIELDS))
    return rows.assign(cpu_share=clock.shares(len(rows)))


class CpuShare:
    """A progress callback that also notes, per entry, the share of its wall time the measuring thread spent on
    a CPU (time.thread_time): about 1 when it ran undisturbed, far less when other work held the cores or the
    GIL, which slows every timed call alike, so the repeats can agree on a wrong time. run_benchmark calls
    progress before each entry and once at the end: consecutive calls bracket one entry."""

    def __init__(self, progress: Progress | None = None):
        self.progress, self.marks = progress, []

    def __call__(self, done: int, total: int, entry: str) -> None:
        self.marks.append((time.perf_counter(), time.thread_time()))
        if self.progress is not None:
            self.progress(done, total, entry)

    def shares(self, entries: int) -> list[float]:
        """One share per entry (NaN where no bracket was recorded)."""
        out = [math.nan] * entries
        for i in range(min(entries, len(self.marks) - 1)):
            (w0, c0), (w1, c1) = self.marks[i], self.marks[i + 1]
            out[i] = min(1.0, (c1 - c0) / (w1 - w0)) if w1 > w0 else math.nan
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class Measured:
    """One method's live rows, named by their setting and the moment they were measured (`cache_key`: equal names,
    equal rows), so what is made from them is keyed by that, never by hashing the rows. `kept`: keepable(rows)."""

    rows: pd.DataFrame
    cache_key: tuple
    kept: bool
    ended: float = 0.0  # time.monotonic() when measure() returned


_MEASURED = Store(64)  # live runs by (method, settings), for the whole server
# An unkept run answers every student who opens the same setting within this many seconds of its end, with the
# page's words on why it is not kept. Measuring afresh for each of them would only add to the load that made the
# run unkept (a class on the page measured ~one run a student, each on a busier server) and make each wait in the
# heavy line; after this the next student measures afresh.
SHARE_UNKEPT_S = 60.0


def measured(method: str, settings: LiveSettings, measure: Callable[[], pd.DataFrame], since: float = -math.inf):
    """One method's live rows (a Measured) for the whole server: measure() runs once per setting, a second caller
    asking meanwhile waiting for the first one's rows. Rows that are not keepable (memory cut them short, the server
    was busy, or their repeats disagree) answer for SHARE_UNKEPT_S only, and only a caller who saw none that ended
    at `since` or later (time.monotonic(): a student who pressed "Run benchmark" under a run the server did not keep
    asks for a newer one)."""

    def run() -> Measured:
        rows = measure()
        return Measured(rows, (method, settings, time.time_ns()), keepable(rows), time.monotonic())

    def fresh(run: Measured) -> bool:
        return run.kept or (run.ended > since and run.ended > time.monotonic() - SHARE_UNKEPT_S)

    return _MEASURED.get_once((method, settings), run, fresh)


@cached(64)
def live_rows(runs: tuple[Measured, ...]) -> pd.DataFrame:
    """The rows of the methods' runs, one frame."""
    return pd.concat([run.rows for run in runs], ignore_index=True)


@cached(32)
def run_facts(rows: pd.DataFrame) -> dict:
    """What the page says of a live run beside its charts and tables: short (entries skipped for the server's
    memory) and need (the least one of them needed, MiB), busy (fitted entries measured on a busy server), noisy
    (methods too noisy to state a slope), late (out_of_time) and tiles (tile_text)."""
    short = short_of_memory(rows)
    return {
        "short": short,
        "need": smallest_need_mib(rows) if short else math.nan,
        "busy": busy_entries(rows),
        "noisy": too_noisy(rows),
        "late": out_of_time(rows),
        "tiles": tile_text(rows),
    }


def short_of_memory(rows: pd.DataFrame) -> int:
    """How many entries were skipped because the process had too little memory left (its host's room)."""
    return int(rows.status.astype(str).str.startswith(HEADROOM_STATUS).sum())


def smallest_need_mib(rows: pd.DataFrame) -> float:
    """The least memory that an entry skipped for the server's memory needed (its status says how much)."""
    return min(float(fields["need"]) for kind, fields in map(status_parts, rows.status) if kind == "headroom")


def points(rows: pd.DataFrame, source: str) -> pd.DataFrame:
    """The measured entries in chart form: source, method, n, time_ms (p10..p90), peak_mib, scores_mib."""
    ok = rows[rows.status == "ok"]
    return pd.DataFrame(
        {
            "source": source,
            "method": ok.method.to_numpy(),
            "n": ok.n.astype(int).to_numpy(),
            "time_ms": ok.time_ms_median.astype(float).to_numpy(),
            "time_p10": ok.time_ms_p10.astype(float).to_numpy(),
            "time_p90": ok.time_ms_p90.astype(float).to_numpy(),
            "peak_mib": ok.peak_mem_bytes.astype(float).to_numpy() / MIB,
            "scores_mib": ok.theory_scores_bytes.astype(float).to_numpy() / MIB,
            "tiles_mib": tiled_model_bytes(ok) / MIB,
            "cpu_share": ok.cpu_share.astype(float).to_numpy() if "cpu_share" in ok else math.nan,
        }
    )


@cached(32)
def chart_points(rows: pd.DataFrame, recorded: pd.DataFrame | None = None) -> pd.DataFrame:
    """The charts' points: the live rows', and a recorded run's when one is overlaid."""
    overlay = [] if recorded is None else [points(recorded, "recorded")]
    return pd.concat([points(rows, "live"), *overlay], ignore_index=True)


# The columns of each chart's CSV export, by the quantity it draws
CSV_COLUMNS = {
    "time_ms": ("source", "method", "n", "time_ms", "time_p10", "time_p90"),
    "peak_mib": ("source", "method", "n", "peak_mib", "scores_mib"),
}


@cached(32)
def chart_csv(pts: pd.DataFrame, value: str) -> pd.DataFrame:
    """The points of the chart of `value` ("time_ms" or "peak_mib") as its CSV export holds them."""
    return pts[list(CSV_COLUMNS[value])]


def tiled_model_bytes(rows: pd.DataFrame) -> np.ndarray:
    """What tiled_attention's own byte count (tiled_working_bytes) says each tiled row needs at its n and tile
    sizes: the n x d arrays plus the tiles. NaN for other methods and rows without their sizes."""
    needed = ["d", "heads", "batch", "dtype", "block_q", "block_k"]
    out = np.full(len(rows), math.nan)
    if not set(needed) <= set(rows.columns):
        return out
    for i, r in enumerate(rows.itertuples(index=False)):
        sizes = [getattr(r, c) for c in needed]
        if r.method == "tiled" and not any(pd.isna(v) for v in sizes) and str(r.dtype) in DTYPES:
            b = int(r.batch) * int(r.heads)
            n, d = int(r.n), int(r.d)
            causal = bool(getattr(r, "causal", True))  # the live rows carry no mask: no mask tiles
            tiles = int(r.block_q), int(r.block_k)
            out[i] = tiled_working_bytes(b, n, n, d, d, DTYPES[str(r.dtype)], *tiles, masked=False, causal=causal)
    return out


def not_measured(
    rows: pd.DataFrame, names: Mapping[str, str] = METHOD_LABELS, headers: Mapping[str, str] = NOT_MEASURED_HEADERS
) -> pd.DataFrame:
    """Entries the harness skipped (over the memory budget or the time limit, no GPU) or that failed, with
    the harness's reason. headers: method, n, reason."""
    bad = rows[rows.status != "ok"]
    table = pd.DataFrame({"method": bad.method.map(names), "n": bad.n, "reason": bad.status})
    return table.rename(columns=headers).reset_index(drop=True)


def out_of_time(rows: pd.DataFrame) -> dict[str, int]:
    """method -> the smallest n skipped because the time limit had passed (methods that hit it only)."""
    late = rows[rows.status.astype(str).str.startswith(TIME_LIMIT_STATUS)]
    return {m: int(g.n.min()) for m, g in late.groupby("method", sort=False)}


def results_table(
    rows: pd.DataFrame, names: Mapping[str, str] = METHOD_LABELS, headers: Mapping[str, str] = RESULT_HEADERS
) -> pd.DataFrame:
    """Time, measured peak memory beside one n x n score matrix, and their ratio, per entry.

    headers: method, n, causal, median, spread, peak, scores, ratio, status.
    """
    peak = rows.peak_mem_bytes.astype(float) / MIB
    scores = rows.theory_scores_bytes.astype(float) / MIB
    table = pd.DataFrame(
        {
            "method": rows.method.map(names),
            "n": rows.n,
            "causal": rows.causal.astype(bool),
            "median": rows.time_ms_median.astype(float),
            "spread": [_span(a, b) for a, b in zip(rows.time_ms_p10, rows.time_ms_p90, strict=True)],
            "peak": peak,
            "scores": scores,
            "ratio": peak / scores,
            "status": rows.status,
        }
    )
    return table.rename(columns=headers).reset_index(drop=True)


def status_text(status: str, words: Mapping[str, str]) -> str:
    """A harness status (bench.status_parts) in the reader's words, by its kind; what only the harness can say (an
    error's message) stays as it wrote it."""
    kind, fields = status_parts(status)
    if kind == "budget" and fields["copies"]:
        kind = "budget_copies"
    return words[kind].format(**fields)


@cached(32)
def not_measured_in_words(
    rows: pd.DataFrame, names: Mapping[str, str], headers: Mapping[str, str], words: Mapping[str, str]
) -> pd.DataFrame:
    """not_measured with each reason in the reader's words (status_text)."""
    return _in_words(not_measured(rows, names, headers), headers["reason"], words)


@cached(32)
def results_in_words(
    rows: pd.DataFrame, names: Mapping[str, str], headers: Mapping[str, str], words: Mapping[str, str]
) -> pd.DataFrame:
    """results_table with each status in the reader's words (status_text)."""
    return _in_words(results_table(rows, names, headers), headers["status"], words)


def _in_words(table: pd.DataFrame, column: str, words: Mapping[str, str]) -> pd.DataFrame:
    return table.assign(**{column: [status_text(s, words) for s in table[column]]})


def describe_fields(config: BenchConfig) -> dict:
    """What a live run measured, as the fields of the page's one-line description (so a screenshot
    explains itself): lo, hi, d, heads, batch, dtype, block (AUTO or a size), causal (bool), budget, seed, device."""
    return {
        "lo": config.ns[0],
        "hi": config.ns[-1],
        "d": config.d,
        "heads": config.heads,
        "batch": config.batch,
        "dtype": config.dtype,
        "block": AUTO if config.block_q is None else config.block_q,
        "causal": config.causal,
        "budget": config.memory_budget_mb,
        "seed": config.seed,
        "device": config.device,
    }


def _span(lo, hi) -> str:
    return "" if pd.isna(lo) else f"{lo:.2f}–{hi:.2f}"


# --- slopes and guide lines -----------------------------------------------------------------


def loglog_slope(n, y) -> float:
    """Least-squares slope p of log y = p log n + c: y ~ n^p."""
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    if n.shape != y.shape or n.ndim != 1 or len(n) < 2:
        raise ValueError(f"n and y must be 1-d of one length >= 2, got shapes {n.shape} and {y.shape}")
    if not (np.all(n > 0) and np.all(y > 0) and np.all(np.isfinite(y))):
        raise ValueError("n and y must be finite and > 0 to fit a log-log slope")
    if len(np.unique(n)) < 2:
        raise ValueError("n must hold at least two distinct values to fit a slope")
    return float(np.polyfit(np.log(n), np.log(y), 1)[0])


def slope_range(n, lo, hi) -> tuple[float, float]:
    """The least and the greatest least-squares log-log slope of any points lying within [lo, hi] at each n.

    The slope is sum_i w_i log y_i with w_i = (x_i - mean x) / sum (x - mean x)^2, x = log n: it is least with
    y_i at lo where w_i > 0 and at hi where w_i < 0, greatest the other way round. With [lo, hi] the p10-p90 of
    each entry's repeats, every slope the repeats allow lies inside: one slow call, however slow, moves the
    median to another of the repeats, which lies inside too."""
    n, lo, hi = (np.asarray(a, dtype=float) for a in (n, lo, hi))
    loglog_slope(n, lo), loglog_slope(n, hi)  # the same checks as one fit
    if np.any(lo > hi):
        raise ValueError("each lo must be <= its hi")
    x = np.log(n)
    w = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    low, high = np.log(lo), np.log(hi)
    return float(np.sum(w * np.where(w > 0, low, high))), float(np.sum(w * np.where(w > 0, high, low)))


SLOPE_COLUMNS = [
    "source", "method", "time_slope", "time_lo", "time_hi", "time_stated", "memory_slope", "memory_theory",
    "fit_from", "fit_to",
]  # fmt: skip


@cached(32)
def slopes(pts: pd.DataFrame, last: int = FIT_POINTS) -> pd.DataFrame:
    """Per (source, method): log-log slopes of time and peak memory over the `last` largest n.

    Columns: source, method; time_slope (of the medians), time_lo and time_hi (slope_range over the p10-p90
    bars), time_stated (time_slope, NaN when the range is wider than NOISY_WIDTH: too noisy to state);
    memory_slope, memory_theory (what the method's memory model predicts at these n: MEMORY_THEORY, or for the
    tiled path the slope of tiled_working_bytes at its tile sizes); fit_from, fit_to. NaN below 2 points.
    """
    if isinstance(last, bool) or not isinstance(last, int) or last < 2:
        raise ValueError(f"last must be an integer >= 2, got {last!r}")
    rows = [_fit(source, method, g.sort_values("n").tail(last)) for (source, method), g in _groups(pts)]
    return pd.DataFrame(rows, columns=SLOPE_COLUMNS)


def _groups(pts: pd.DataFrame):
    return pts.groupby(["source", "method"], sort=False)


def _fit(source: str, method: str, top: pd.DataFrame) -> dict:
    row = dict.fromkeys(SLOPE_COLUMNS, math.nan) | {"source": source, "method": method}
    row |= {"fit_from": int(top.n.min()), "fit_to": int(top.n.max())}
    if len(top) < 2:
        return row
    row["time_slope"] = loglog_slope(top.n, top.time_ms)
    if {"time_p10", "time_p90"} <= set(top.columns) and top[["time_p10", "time_p90"]].notna().all().all():
        row["time_lo"], row["time_hi"] = slope_range(top.n, top.time_p10, top.time_p90)
        wide = row["time_hi"] - row["time_lo"] > NOISY_WIDTH
        # repeats that agree on a busy server may all be slowed alike: such a slope is not stated either
        busy = "cpu_share" in top and bool((top.cpu_share < BUSY_SHARE).any())
        row["time_stated"] = math.nan if wide or busy else row["time_slope"]
    row["memory_slope"] = loglog_slope(top.n, top.peak_mib)
    model = top.tiles_mib if "tiles_mib" in top else pd.Series(math.nan, index=top.index)
    fitted = method == "tiled" and model.notna().all()
    row["memory_theory"] = loglog_slope(top.n, model) if fitted else MEMORY_THEORY.get(method, math.nan)
    return row


@cached(32)
def slope_summary(
    slope_df: pd.DataFrame,
    short: Mapping[str, str] | None = None,
    names: Mapping[str, str] = METHOD_LABELS,
    quantities: Mapping[str, str] = QUANTITIES,
    index_name: str = "method",
) -> pd.DataFrame:
    """One row per method (named by `names`), one column per (quantity, source): the slope table a reader
    compares, time columns first.

    Columns are "<quantity> · <source>": `quantities` names time and memory, `short` renames sources,
    e.g. {"live run on this machine (cpu)": "live"}; index_name heads the column of method names.
    """
    if slope_df.empty:
        return pd.DataFrame()
    short = short or {}
    methods = [m for m in METHOD_LABELS if m in set(slope_df.method)]
    by = slope_df.set_index(["method", "source"])
    columns = {}
    for quantity in ("time", "memory"):
        for source in sorted(dict.fromkeys(slope_df.source)):  # by source key: the same order in any language
            cells = [by.loc[(m, source)] if (m, source) in by.index else None for m in methods]
            values = [_time_cell(c) if quantity == "time" else _memory_cell(c) for c in cells]
            columns[f"{quantities[quantity]} · {short.get(source, source)}"] = values
    table = pd.DataFrame(columns, index=pd.Index([names.get(m, m) for m in methods], name=index_name))
    return table


def time_text(slope: float, lo: float, hi: float, stated: float) -> str:
    """A time slope as the page writes it everywhere: "1.93 (1.85–2.01)", its range in brackets; "? (0.40–3.90)"
    when the range is too wide to state one; the bare slope when no range is known; "" without a slope."""
    if math.isnan(slope):
        return ""
    if math.isnan(lo) or math.isnan(hi):
        return f"{slope:.2f}"
    return f"{'?' if math.isnan(stated) else f'{slope:.2f}'} ({lo:.2f}–{hi:.2f})"


def _time_cell(row) -> str:
    return "" if row is None else time_text(row.time_slope, row.time_lo, row.time_hi, row.time_stated)


def _memory_cell(row) -> float:
    return math.nan if row is None else float(row.memory_slope)


@cached(64)
def guide_lines(pts: pd.DataFrame, column: str, anchor_source: str = "live") -> pd.DataFrame:
    """O(n^2) and O(n) reference lines through the lowest `column` value at the anchor's largest n.

    Drawn over every n in pts; columns guide, n, value. Empty when the anchor source has no points.
    """
    anchor = pts[pts.source == anchor_source]
    if anchor.empty:
        return pd.DataFrame(columns=["guide", "n", "value"])
    n0 = anchor.n.max()
    y0 = anchor.loc[anchor.n == n0, column].min()
    ns = np.geomspace(pts.n.min(), pts.n.max(), 24)
    frames = [
        pd.DataFrame({"guide": name, "n": ns, "value": y0 * (ns / n0) ** power})
        for name, power in (("O(n²)", 2), ("O(n)", 1))
    ]
    return pd.concat(frames, ignore_index=True)


@cached(32)
def score_matrix_line(pts: pd.DataFrame, source: str = "live") -> pd.DataFrame:
    """The theoretical bytes of one n x n score matrix (B*H*n^2*itemsize) at the measured n: n, value."""
    s = pts[pts.source == source].drop_duplicates("n").sort_values("n")
    return pd.DataFrame({"n": s.n.to_numpy(), "value": s.scores_mib.to_numpy()})


# --- recorded runs and the download ---------------------------------------------------------


def recorded_files(folder) -> tuple[tuple[str, float], ...]:
    """(path, modification time) of every CSV in `folder`, sorted: a cache key that sees new files."""
    folder = Path(folder)
    if not folder.is_dir():
        return ()
    return tuple((str(p), p.stat().st_mtime) for p in sorted(folder.glob("*.csv")))


def read_header(path, aliases: Mapping[str, str] | None = None) -> tuple[dict, set[str]]:
    """The `# key: value` lines of a recorded CSV as a dict, and the names of its columns (the first other line),
    each a field of ROW_FIELDS where `aliases` (a column's name in another language -> its field) knows it."""
    header, aliases = {}, aliases or {}
    with open(path, encoding="utf-8-sig") as f:  # -sig: a file downloaded from a 中文 page starts with a BOM
        for line in f:
            if not line.startswith("#"):
                return header, {aliases.get(c, c) for c in next(csv.reader([line]), [])}
            key, _, value = line[1:].partition(":")
            header[key.strip()] = value.strip()
    return header, set()


def is_kernel_record(columns: set[str]) -> bool:
    """A CSV of kernel speeds (tools.gpu_check), not a scaling run: another kind of record, read by kernel_record."""
    return KERNEL_COLUMNS <= columns and not SCALING_COLUMNS <= columns


def read_recorded(path, aliases: Mapping[str, str] | None = None) -> tuple[dict, pd.DataFrame]:
    """(header, rows) of a CSV written by attn_core.bench or downloaded from the page: `# key: value` lines, then
    the rows; columns named in another language are renamed by `aliases` (name -> field)."""
    header, _columns = read_header(path)
    rows = pd.read_csv(path, comment="#", encoding="utf-8-sig").rename(columns=dict(aliases or {}))
    missing = SCALING_COLUMNS - set(rows.columns)
    if missing:
        raise ValueError(f"{path} is not a benchmark CSV: missing columns {sorted(missing)}")
    return header, rows


def recorded_shown(rows: pd.DataFrame, methods, offered) -> pd.DataFrame:
    """The rows of a recorded run to draw: the methods shown live, and those this machine does not offer (a GPU
    run's Triton kernel on a CPU server), which only a recorded run can show."""
    return rows[rows.method.isin(list(methods)) | ~rows.method.isin(list(offered))]


@cached(16)
def recorded_overlay(files, aliases, label: str, methods, offered) -> pd.DataFrame | None:
    """recorded_shown of the recorded run labelled `label` among recorded_runs(files, aliases); None without one."""
    run = next((r for r in recorded_runs(files, aliases) if r.get("label") == label), None)
    return None if run is None else recorded_shown(run["rows"], methods, offered)


def recorded_label(header: dict, rows: pd.DataFrame, path) -> str:
    """Device and date of a recorded run, e.g. "AMD EPYC (cpu), 2026-11-21"; the file name if unknown."""
    device = header.get("device") or (str(rows.device.iloc[0]) if "device" in rows and len(rows) else "")
    name = header.get("device_name") or ""
    date = header.get("date") or "undated"
    where = f"{name} ({device})" if name and device else name or device or Path(path).stem
    return f"{where}, {date}"


def recorded_setup(rows: pd.DataFrame) -> str:
    """The sizes a recorded run used, e.g. "d=64, heads=4, batch=1, dtype=float32, tile b=512"."""
    if rows.empty:
        return ""
    first = rows.iloc[0]
    parts = [f"{c}={first[c]}" for c in ("d", "heads", "batch", "dtype") if c in rows]
    return ", ".join(parts + ([f"tiles {tiles}"] if (tiles := tile_text(rows)) else []))


def tile_text(rows: pd.DataFrame) -> str:
    """The tile sizes of a run's tiled rows, e.g. "512×512" or, when they change with n, "128×128 … 256×512"."""
    if not {"block_q", "block_k", "n"} <= set(rows.columns):
        return ""
    tiled = rows.dropna(subset=["block_q", "block_k"]).sort_values("n")
    sizes = list(dict.fromkeys(f"{_number(q)}×{_number(k)}" for q, k in zip(tiled.block_q, tiled.block_k, strict=True)))
    return " … ".join([sizes[0], sizes[-1]] if len(sizes) > 1 else sizes)


@cached(32)
def setting_differences(live: pd.DataFrame, recorded: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(setting, live value, recorded value) wherever two runs' rows were measured differently: d, heads,
    batch, dtype, causal (of the methods that follow the flag), and the tiled rows' tile sizes at the n both
    measured. Values are numbers, dtype names and True/False only, never free text from a file."""
    follow = ["tiled", "sdpa", "triton"]
    diffs = []
    for column in ("d", "heads", "batch", "dtype", "causal"):
        pick = (lambda r: r[r.method.isin(follow)]) if column == "causal" else (lambda r: r)
        here, there = _values(pick(live), column), _values(pick(recorded), column)
        if here and there and here != there:
            diffs.append((column, here, there))
    both = set(live.n) & set(recorded.n) if "n" in recorded else set()
    here, there = tile_text(live[live.n.isin(both)]), tile_text(recorded[recorded.n.isin(both)])
    if here and there and here != there:
        diffs.append(("tiles", here, there))
    return diffs


def _values(rows: pd.DataFrame, column: str) -> str:
    """The distinct values of a column as text: known words as they are, anything else as a number or "?"."""
    if column not in rows or rows.empty:
        return ""
    known = {"float32", "float16", "bfloat16", "float64", "True", "False"}
    return ", ".join(sorted({str(v) if str(v) in known else _number(v) for v in rows[column].dropna()}))


def _number(value) -> str:
    try:
        return str(int(value))
    except (TypeError, ValueError, OverflowError):
        return "?"


def is_gpu(header: dict, rows: pd.DataFrame) -> bool:
    device = header.get("device") or (str(rows.device.iloc[0]) if "device" in rows and len(rows) else "")
    return device.startswith("cuda")


def bench_command(config: BenchConfig, csv_path: str | None = None) -> str:
    """The `python -m attn_core.bench` command line that repeats `config`."""
    args = ["python", "-m", "attn_core.bench", "--device", config.device, "--n", *map(str, config.ns)]
    args += ["--d", str(config.d), "--heads", str(config.heads), "--batch", str(config.batch)]
    args += ["--dtype", config.dtype] + (["--causal"] if config.causal else [])
    args += ["--methods", *config.methods, "--repeats", str(config.repeats), "--warmup", str(config.warmup)]
    args += ["--memory-budget-mb", f"{config.memory_budget_mb:g}"]
    args += [] if config.block_q is None else ["--block-q", str(config.block_q)]
    args += [] if config.block_k is None else ["--block-k", str(config.block_k)]
    args += ["--seed", str(config.seed)]
    args += ["--time-limit-s", f"{config.time_limit_s:g}"] if config.time_limit_s is not None else []
    return shlex.join(args + (["--csv", csv_path] if csv_path else []))


def results_csv(rows: pd.DataFrame, config: BenchConfig, columns: Mapping[str, str] | None = None) -> str:
    """The live rows in attn_core.bench's CSV format (header lines, then ROW_FIELDS): drop it in benchmarks/.

    columns: field -> the column's name in the viewer's language (a field not there keeps its name). Chinese names
    start the file with a byte-order mark, as every chart's CSV does (frame.csv_text): Excel reads UTF-8 only then.
    recorded_runs reads such a file back given the names as aliases."""
    header = {
        **hardware_info(config.device),
        "date": datetime.date.today().isoformat(),
        "command": bench_command(config),
        "config": json.dumps(dataclasses.asdict(config)),
    }
    out = io.StringIO()
    for key, value in header.items():
        out.write(f"# {key}: {value}\n")
    clean = rows[list(ROW_FIELDS)].astype(object).where(rows[list(ROW_FIELDS)].notna(), None)
    writer = csv.DictWriter(out, fieldnames=ROW_FIELDS, lineterminator="\n")
    names = {field: (columns or {}).get(field, field) for field in ROW_FIELDS}
    writer.writerow(names)
    writer.writerows(clean.to_dict("records"))
    return out.getvalue() if "".join(names.values()).isascii() else "\ufeff" + out.getvalue()


@cached(8)
def recorded_runs(files: tuple[tuple[str, float], ...], aliases: tuple[tuple[str, str], ...] = ()) -> list[dict]:
    """Every recorded scaling run as {path, label, setup, gpu, header, rows}, or {path, error} if unreadable.

    aliases: (a column's name in a language of the page, its field): a CSV downloaded from a 中文 page reads back.

    A kernel speed record (is_kernel_record) is another kind of record: left out here, without an error.

    Labels are unique: two runs on one device and date are told apart by their file names.
    """
    runs = []
    for path, _mtime in files:
        try:
            if is_kernel_record(read_header(path, dict(aliases))[1]):
                continue  # the Triton kernel's speed record: summarised by kernel_summary, not a run to draw
            header, rows = read_recorded(path, dict(aliases))
        except (ValueError, OSError, pd.errors.ParserError) as err:
            runs.append({"path": path, "error": str(err)})
            continue
        label = recorded_label(header, rows, path)
        runs.append(
            {"path": path, "label": label, "setup": recorded_setup(rows), "gpu": is_gpu(header, rows)}
            | {"header": header, "rows": rows}
        )
    labels = [r.get("label") for r in runs]
    for r in runs:
        if "label" in r and labels.count(r["label"]) > 1:
            r["label"] += f" · {Path(r['path']).name}"
    return runs


@functools.cache
def column_aliases() -> tuple[tuple[str, str], ...]:
    """(a results column's name in a language of the pages, its field) for every language and field: results_csv
    names the columns in the viewer's language, and recorded_runs reads a file downloaded from any page back."""
    return tuple((catalog(lang).get(f"scaling.csv_columns.{f}", f), f) for lang in LANGUAGES for f in ROW_FIELDS)


def recorded_listing(runs: list[dict], headers: Mapping[str, str] = LISTING_HEADERS) -> pd.DataFrame:
    """One row per readable recorded run: its label, sizes, torch version and the command that made it.

    headers: run, setup, torch, command.
    """
    table = pd.DataFrame(
        {
            "run": [r["label"] for r in runs],
            "setup": [r["setup"] for r in runs],
            "torch": [r["header"].get("torch", "") for r in runs],
            "command": [r["header"].get("command", "") for r in runs],
        }
    )
    return table.rename(columns=headers)


@cached(64)
def legend_slopes(slope_df: pd.DataFrame, column: str, prefer: str) -> dict[str, float]:
    """method -> slope in `column`, from the `prefer` source where it has one, else the first other."""
    ordered = pd.concat([slope_df[slope_df.source == prefer], slope_df[slope_df.source != prefer]])
    first = ordered.drop_duplicates("method")
    return dict(zip(first.method, first[column].astype(float), strict=True))


# --- the Triton kernel's recorded speed on a GPU --------------------------------------------


@cached(4)
def kernel_record(files: tuple[tuple[str, float], ...]) -> tuple[pd.DataFrame, dict]:
    """(rows, facts) of the newest kernel speed record among `files` (by its date, then its name); an empty frame
    and {} when there is none.

    facts: card, torch, triton, date (from the `# key: value` lines, "?" when absent), tokens (batch * n) and
    width (heads * d) as text, modes (those measured that have a default Triton candidate) and record (the name
    of its Markdown report beside it, else of the CSV)."""
    found = []
    for path, _mtime in files:
        try:
            header, columns = read_header(path)
        except (OSError, UnicodeDecodeError):
            continue  # recorded_runs reports an unreadable file
        if is_kernel_record(columns):
            found.append((header.get("date", ""), path, header))
    if not found:
        return pd.DataFrame(columns=sorted(KERNEL_COLUMNS)), {}
    _date, path, header = max(found)
    rows = pd.read_csv(path, comment="#")
    facts = {key: header.get(name) or "?" for key, name in (("card", "device_name"), ("torch", "torch"))}
    facts |= {"triton": header.get("triton") or "?", "date": header.get("date") or "?"}
    facts["tokens"] = _distinct(rows.batch * rows.n) if {"batch", "n"} <= set(rows.columns) else "?"
    facts["width"] = _distinct(rows.heads * rows.d) if {"heads", "d"} <= set(rows.columns) else "?"
    facts["modes"] = tuple(m for m in dict.fromkeys(rows["mode"]) if m in DEFAULT_CANDIDATE)
    report = Path(path).with_suffix(".md")  # tools.gpu_check writes its report beside the CSV
    facts["record"] = report.name if report.is_file() else Path(path).name
    return rows, facts


def _distinct(values: pd.Series) -> str:
    return ", ".join(str(int(v)) for v in sorted(set(values.dropna())))


@cached(16)
def kernel_summary(rows: pd.DataFrame, mode: str, headers: Mapping[str, str] = KERNEL_HEADERS) -> pd.DataFrame:
    """Per (dtype, d, causal) of one mode, at the largest n where both ran: the TFLOP/s of the Triton kernel's
    default candidate (DEFAULT_CANDIDATE), of the fastest SDPA back-end, and their ratio (> 1: ours is faster).

    headers: dtype, d, causal, n, ours, sdpa, backend, ratio. Rows in the record's order."""
    if mode not in DEFAULT_CANDIDATE:
        raise ValueError(f"mode must be one of {sorted(DEFAULT_CANDIDATE)}, got {mode!r}")
    keys = [*KERNEL_GROUP, "n"]
    ok = rows[(rows["mode"] == mode) & (rows.status == "ok") & (rows.tflops > 0)]
    ours = ok[(ok.method == "triton") & ok.candidate.astype(str).str.startswith(DEFAULT_CANDIDATE[mode])]
    sdpa = ok[ok.method == "sdpa"].sort_values("tflops", ascending=False, kind="stable").drop_duplicates(keys)
    both = ours[[*keys, "tflops"]].merge(sdpa[[*keys, "tflops", "backend"]], on=keys, suffixes=("_ours", "_sdpa"))
    top = both.loc[both.groupby(KERNEL_GROUP, sort=False).n.idxmax()]
    table = pd.DataFrame(
        {
            "dtype": top.dtype.astype(str),
            "d": top.d.astype(int),
            "causal": top.causal.astype(bool),
            "n": top.n.astype(int),
            "ours": top.tflops_ours.astype(float).round(1),
            "sdpa": top.tflops_sdpa.astype(float).round(1),
            "backend": top.backend.astype(str),
            "ratio": (top.tflops_ours / top.tflops_sdpa).astype(float).round(2),
        }
    )
    return table.rename(columns=headers).reset_index(drop=True)


# --- what the measured slopes say, and whether a run may be kept ------------------------------


def time_verdict(lo: float, hi: float, stated: float, theory: float = TIME_THEORY) -> str:
    """How a time slope compares with its FLOPs' exponent: "none" (no slope), "noisy" (range too wide), "holds"
    (the range holds it), "below" or "above" (the whole range lies below or above it)."""
    if math.isnan(lo) or math.isnan(hi):
        return "none"
    if math.isnan(stated):
        return "noisy"
    lo, hi = round(lo, 2), round(hi, 2)  # judged on the range as printed: "(1.70–2.00)" holds 2, whatever 1.998 says
    return "below" if hi < theory else "above" if lo > theory else "holds"


def memory_kind(method: str, tiles: str = "", peak: str = "arrays") -> str:
    """Which explanation a memory slope gets: "scores" (n x n arrays); "arrays" (SDPA, Triton: n x d arrays only);
    for the tiled path, by the part of its byte count holding the peak at the largest fitted n (tiled_peak_part):
    "check" (the range check, capped at one float64 slice), "grow" (its tiles change with n over the fit,
    tile_text's "…": not one tile size's O(n)), "tiles" (fixed tiles outweighing its n x d arrays) or "fixed"
    (fixed tiles, the n x d arrays dominating: towards O(n))."""
    if method in ("naive", "naive_masked"):
        return "scores"
    if method != "tiled":
        return "arrays"
    if peak == "check":
        return "check"
    return "grow" if "…" in tiles else "tiles" if peak == "tiles" else "fixed"


def _cut_to_n(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with the tile sizes tiled_attention used: a tile larger than n is cut to n (a 512 tile at n = 128 is
    128 x 128), so a fixed setting's tiles still grow with n below it."""
    if not {"block_q", "block_k", "n"} <= set(rows.columns) or rows.empty:
        return rows
    n = rows.n.astype(float)
    cut = {c: np.minimum(pd.to_numeric(rows[c], errors="coerce"), n) for c in ("block_q", "block_k")}  # None: NaN
    return rows.assign(**cut)


def tiled_peak_part(row) -> str:
    """Which part of tiled_working_parts holds a tiled row's peak: "check" (the range check where it reads q one
    capped slice at a time: it no longer grows with n), "tiles" or "arrays" (what grows with n, the range check's
    whole float64 copy of q included)."""

    def parts(n: int) -> dict:
        b, d, tiles = int(row["batch"]) * int(row["heads"]), int(row["d"]), (int(row["block_q"]), int(row["block_k"]))
        dtype, causal = DTYPES[str(row["dtype"])], bool(row["causal"])  # by key: a Series' .dtype is its own
        return tiled_working_parts(b, n, n, d, d, dtype, *tiles, masked=False, causal=causal)

    here = parts(int(row["n"]))
    if here["check"] > here["arrays"] + here["tiles"]:
        return "check" if parts(2 * int(row["n"]))["check"] < 1.5 * here["check"] else "arrays"
    return "tiles" if here["tiles"] > here["arrays"] else "arrays"


@cached(32)
def slope_facts(pts: pd.DataFrame, fitted: pd.DataFrame, rows: pd.DataFrame, source: str = "live") -> list[dict]:
    """Per method of `source`, in METHOD_LABELS order, what its sentence states: method, lo_n, hi_n, time (its
    time_text), verdict (time_verdict), memory, theory (memory_slope and memory_theory), kind (memory_kind),
    ratio (peak over one n x n score matrix at hi_n) and tiles (tile_text of the fitted `rows` of that method)."""
    mine = fitted[(fitted.source == source) & fitted.memory_slope.notna()].set_index("method")
    facts = []
    for method in (m for m in METHOD_LABELS if m in mine.index):
        f = mine.loc[method]
        top = pts[(pts.source == source) & (pts.method == method) & (pts.n == f.fit_to)].iloc[0]
        facts.append(
            {
                "method": method,
                "lo_n": int(f.fit_from),
                "hi_n": int(f.fit_to),
                "time": time_text(f.time_slope, f.time_lo, f.time_hi, f.time_stated),
                "lo": float(f.time_lo),
                "hi": float(f.time_hi),
                "verdict": _verdict(f, rows[rows.method == method]),
                "memory": float(f.memory_slope),
                "theory": float(f.memory_theory),
                "ratio": float(top.peak_mib / top.scores_mib),
                "tiles": tile_text(_cut_to_n(fitted_rows(rows[rows.method == method]))),
            }
        )
        fit = fitted_rows(rows[rows.method == method])
        held = [tiled_peak_part(r) for _, r in fit.iterrows()] if method == "tiled" else ["arrays"]
        peak = "check" if "check" in held else held[-1]  # a capped check at any fitted n flattens the slope
        facts[-1]["kind"] = memory_kind(method, facts[-1]["tiles"], peak)
    return facts


def _verdict(fit, rows: pd.DataFrame) -> str:
    """time_verdict, or "busy" when the slope was fitted to entries measured on a busy server (then not stated)."""
    if not math.isnan(fit.time_lo) and not busy_entries(rows).empty:
        return "busy"
    return time_verdict(fit.time_lo, fit.time_hi, fit.time_stated)


@cached(16)
def tiled_growth(d: int, heads: int, block, n: int = 512) -> float:
    """By what factor the tiled path's byte count (tiled_working_bytes) grows from n to 2n at these sizes and tile
    choice (AUTO: tiled_attention's own, default_blocks, at each n): the answer to the page's question."""

    def need(m: int) -> int:
        bq, bk = default_blocks(m, m) if block == AUTO else (block, block)
        return tiled_working_bytes(heads, m, m, d, d, torch.float32, bq, bk, masked=False, causal=False)

    return need(2 * n) / need(n)


def fitted_rows(rows: pd.DataFrame, last: int = FIT_POINTS) -> pd.DataFrame:
    """The measured rows the slopes are fitted to: per method, those at its `last` largest measured n."""
    ok = rows[rows.status == "ok"].sort_values("n")
    return ok.groupby("method", sort=False).tail(last)


def busy_entries(rows: pd.DataFrame) -> pd.DataFrame:
    """Fitted rows measured while the server was busy: the measuring thread had the CPU less than BUSY_SHARE of
    the entry's time (CpuShare). Rows without a share (a recorded run) are never counted."""
    if "cpu_share" not in rows:
        return rows.iloc[0:0]
    top = fitted_rows(rows)
    return top[top.cpu_share < BUSY_SHARE]


def too_noisy(rows: pd.DataFrame) -> list[str]:
    """Methods whose time slope, fitted to these rows, has a range wider than NOISY_WIDTH."""
    fitted = slopes(points(rows, "live"))
    return list(fitted.method[fitted.time_hi - fitted.time_lo > NOISY_WIDTH])


def keepable(rows: pd.DataFrame) -> bool:
    """Whether a live run may be kept for the whole server: nothing cut short for memory, no fitted entry measured
    while the server was busy, and every time slope narrow enough to state. Otherwise it serves only the session
    that measured it, and the next student measures afresh."""
    return not short_of_memory(rows) and busy_entries(rows).empty and not too_noisy(rows)
