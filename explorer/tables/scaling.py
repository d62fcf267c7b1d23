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
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from attn_core.bench import (
    HEADROOM_STATUS,
    METHODS,
    ROW_FIELDS,
    TIME_LIMIT_STATUS,
    BenchConfig,
    Headroom,
    Progress,
    default_methods,
    hardware_info,
    run_benchmark,
)
from attn_core.budget import budget_bytes

N_MIN = 128
MAX_N_OPTIONS = tuple(2**i for i in range(9, 14))  # 512 .. 8192
AUTO = "auto"  # the tile size option that leaves the choice to tiled_attention (default_blocks)
BLOCK_OPTIONS = (AUTO, 32, 64, 128, 256, 512)
FIT_POINTS = 3  # slopes are fitted to the largest n, where fixed overheads matter least
REPEATS, WARMUP = 3, 1  # few repeats: the page answers in about a second at its defaults
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
    from attn_core import flash_available

    interpreted = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
    return flash_available(device)[0] and not interpreted


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


def live_config(
    methods, max_n, d, heads, causal, block, budget_mb, seed, device="cpu", time_limit_s=None
) -> BenchConfig:
    """The BenchConfig of one live run of the page (BenchConfig validates every field).

    block: one tile size for queries and keys, or AUTO for tiled_attention's own choice at each n.
    time_limit_s: once a run has taken this long, its remaining (larger) n are skipped, not run.
    """
    block = None if block == AUTO else block
    return BenchConfig(
        device=device,
        ns=sizes(max_n),
        d=d,
        heads=heads,
        causal=causal,
        methods=tuple(methods),
        repeats=REPEATS,
        warmup=WARMUP,
        memory_budget_mb=float(budget_mb),
        block_q=block,
        block_k=block,
        seed=seed,
        time_limit_s=time_limit_s,
    )


def run_method(
    method,
    max_n,
    d,
    heads,
    causal,
    block,
    budget_mb,
    seed,
    device="cpu",
    progress: Progress | None = None,
    time_limit_s: float | None = None,
    headroom: Headroom | None = None,
) -> pd.DataFrame:
    """One method of the live run at every n, as a DataFrame with the harness's ROW_FIELDS columns.

    One method per call so that a page can cache each method apart: hiding one costs nothing. The time
    limit therefore bounds each method's run: its smallest n always runs, the larger ones only while
    the method has taken less than time_limit_s. headroom: what the process may still take (run_benchmark).
    """
    config = live_config([method], max_n, d, heads, causal, block, budget_mb, seed, device, time_limit_s)
    return pd.DataFrame(run_benchmark(config, progress, headroom), columns=list(ROW_FIELDS))


def short_of_memory(rows: pd.DataFrame) -> int:
    """How many entries were skipped because the process had too little memory left (run_benchmark's headroom)."""
    return int(rows.status.astype(str).str.startswith(HEADROOM_STATUS).sum())


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
        }
    )


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


def slopes(pts: pd.DataFrame, last: int = FIT_POINTS) -> pd.DataFrame:
    """Per (source, method): log-log slopes of time and peak memory over the `last` largest n.

    Columns: source, method, time_slope, memory_slope, fit_from, fit_to (NaN slopes below 2 points).
    """
    if isinstance(last, bool) or not isinstance(last, int) or last < 2:
        raise ValueError(f"last must be an integer >= 2, got {last!r}")
    rows = []
    for (source, method), g in pts.groupby(["source", "method"], sort=False):
        top = g.sort_values("n").tail(last)
        fit = len(top) >= 2
        rows.append(
            {
                "source": source,
                "method": method,
                "time_slope": loglog_slope(top.n, top.time_ms) if fit else math.nan,
                "memory_slope": loglog_slope(top.n, top.peak_mib) if fit else math.nan,
                "fit_from": int(top.n.min()),
                "fit_to": int(top.n.max()),
            }
        )
    cols = ["source", "method", "time_slope", "memory_slope", "fit_from", "fit_to"]
    return pd.DataFrame(rows, columns=cols)


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
    wide = slope_df.pivot_table(
        index="method", columns="source", values=["time_slope", "memory_slope"], sort=False, dropna=False
    )
    short = short or {}
    keys = sorted(wide.columns, key=lambda qs: (qs[0] != "time_slope", qs[1]))  # by source key: same in any language
    wide = wide[keys]
    wide.columns = [f"{quantities[q.removesuffix('_slope')]} · {short.get(s, s)}" for q, s in keys]
    order = [m for m in METHOD_LABELS if m in wide.index]
    return wide.loc[order].rename(index=names).rename_axis(index_name)


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


def read_header(path) -> tuple[dict, set[str]]:
    """The `# key: value` lines of a recorded CSV as a dict, and the names of its columns (the first other line)."""
    header = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                return header, set(next(csv.reader([line]), []))
            key, _, value = line[1:].partition(":")
            header[key.strip()] = value.strip()
    return header, set()


def is_kernel_record(columns: set[str]) -> bool:
    """A CSV of kernel speeds (tools.gpu_check), not a scaling run: another kind of record, read by kernel_record."""
    return KERNEL_COLUMNS <= columns and not SCALING_COLUMNS <= columns


def read_recorded(path) -> tuple[dict, pd.DataFrame]:
    """(header, rows) of a CSV written by attn_core.bench: `# key: value` lines, then the rows."""
    header, _columns = read_header(path)
    rows = pd.read_csv(path, comment="#")
    missing = SCALING_COLUMNS - set(rows.columns)
    if missing:
        raise ValueError(f"{path} is not a benchmark CSV: missing columns {sorted(missing)}")
    return header, rows


def recorded_shown(rows: pd.DataFrame, methods, offered) -> pd.DataFrame:
    """The rows of a recorded run to draw: the methods shown live, and those this machine does not offer (a GPU
    run's Triton kernel on a CPU server), which only a recorded run can show."""
    return rows[rows.method.isin(list(methods)) | ~rows.method.isin(list(offered))]


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


def results_csv(rows: pd.DataFrame, config: BenchConfig) -> str:
    """The live rows in attn_core.bench's CSV format (header lines, then ROW_FIELDS): drop it in benchmarks/."""
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
    writer.writeheader()
    writer.writerows(clean.to_dict("records"))
    return out.getvalue()


def recorded_runs(files: tuple[tuple[str, float], ...]) -> list[dict]:
    """Every recorded scaling run as {path, label, setup, gpu, header, rows}, or {path, error} if unreadable.

    A kernel speed record (is_kernel_record) is another kind of record: left out here, without an error.

    Labels are unique: two runs on one device and date are told apart by their file names.
    """
    runs = []
    for path, _mtime in files:
        try:
            if is_kernel_record(read_header(path)[1]):
                continue  # the Triton kernel's speed record: summarised by kernel_summary, not a run to draw
            header, rows = read_recorded(path)
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


def legend_slopes(slope_df: pd.DataFrame, column: str, prefer: str) -> dict[str, float]:
    """method -> slope in `column`, from the `prefer` source where it has one, else the first other."""
    ordered = pd.concat([slope_df[slope_df.source == prefer], slope_df[slope_df.source != prefer]])
    first = ordered.drop_duplicates("method")
    return dict(zip(first.method, first[column].astype(float), strict=True))


# --- the Triton kernel's recorded speed on a GPU --------------------------------------------


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
