"""Tables for "Softmax saturation and temperature": saturation against d_k, one row against T, worked examples.

    p = softmax(z / T),   dp_i / dz_j = p_i (delta_ij - p_j),   i.e.  J = diag(p) - p p^T

A one-hot p makes every entry of J vanish: a saturated softmax passes (almost) no gradient back.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pandas as pd
import torch

from attn_core._checks import check_int, check_positive
from attn_core.naive import masked_softmax
from attn_core.stats import entropy, jacobian_norm, random_logits, softmax_jacobian
from explorer import notes
from explorer.charts import saturation as charts
from explorer.ui.cache import cached

D_K_SWEEP = tuple(2**i for i in range(11))  # 1 .. 1024
SWEEP_ROWS = 256  # queries per d_k: enough for a stable mean and median of the Jacobian norm
TEMPERATURES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
# 0.01 .. 10^4 at 20 points per decade, plus every temperature the page offers, so its marker sits on a grid point
T_GRID = tuple(sorted({float(t) for t in np.logspace(-2, 4, 121)} | set(TEMPERATURES)))
SERIES = ("unscaled", "scaled")

# The lecture notes' two rows: raw dot products at d_k = 64 and the same row divided by sqrt(64) = 8.
NOTES_UNSCALED = (20.0, 0.0, -20.0)
NOTES_SCALED = (2.5, 0.0, -2.5)
# What the notes print for softmax of these rows, rounded by hand; the page sets the true values beside them.
# The keys name the same claims in explorer.notes, which gives the verdict (one source of truth).
NOTES_ROUNDED = (
    ("softmax_20_0", (20.0, 0.0, -20.0), (0.9999, 0.0001, 0.0)),
    ("softmax_2_5", (2.5, 0.0, -2.5), (0.92, 0.08, 0.0)),
    ("softmax_3", (3.0, -3.0), (0.95, 0.05)),
)

# |dp_i/dz_j| <= 1/4 (p(1 - p) and p_i p_j both peak at 1/4): one colour scale fits every Jacobian.
JACOBIAN_LIMIT = 0.25
MAX_LOGITS = 16
MAX_ABS_LOGIT = 1000.0
_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@cached(16)
def saturation_sweep(n_keys: int, seed: int, n_rows: int = SWEEP_ROWS) -> pd.DataFrame:
    """Entropy, largest weight and Jacobian norm of softmax(logits) at T = 1 for d_k = 1..1024, unscaled and scaled.

    Columns: d_k, series, entropy, max_weight, jacobian_norm (means over rows, as saturation_summary computes them),
    jacobian_median (the typical row: the mean is held up by the few rows whose top logits happen to tie).
    The scaled and unscaled logits of one d_k come from the same q and k: drawn once, the scaled ones divided by
    sqrt(d_k) as random_logits(scaled=True) divides them.
    """
    check_int("n_keys", n_keys, minimum=2)
    rows = []
    for d_k in D_K_SWEEP:
        unscaled = random_logits(d_k, n_rows, n_keys, scaled=False, seed=seed)  # (n_rows, n_keys)
        for series, logits in zip(SERIES, (unscaled, unscaled / math.sqrt(d_k)), strict=True):
            per_row = _jacobian_norms(masked_softmax(logits))  # (n_rows,)
            rows.append(
                {"d_k": d_k, "series": series, **_summary(logits), "jacobian_median": float(per_row.quantile(0.5))}
            )
    return pd.DataFrame(rows)


def _summary(logits: torch.Tensor) -> dict[str, float]:
    """saturation_summary(logits) (T = 1), its Jacobians made a block of rows at a time: the same numbers."""
    p = torch.softmax(logits.to(torch.float64) / 1.0, dim=-1)  # (n_rows, n_keys), as saturation_summary makes it
    return {
        "entropy": float(entropy(p).mean()),
        "max_weight": float(p.amax(dim=-1).mean()),
        "jacobian_norm": float(_jacobian_norms(p).mean()),
    }


def _jacobian_norms(p: torch.Tensor, block: int = 64) -> torch.Tensor:
    """jacobian_norm(p) for (n_rows, n_keys) weights, `block` rows at a time: each row's norm is the same, but the
    (n_rows, n_keys, n_keys) Jacobians of all 256 rows (8 MB at n = 64) were allocated and faulted in afresh for
    every d_k, 3-10x slower than blocks of 64 rows (tests/explorer/test_tables_saturation.py proves equality)."""
    return torch.cat([jacobian_norm(rows) for rows in p.split(block)])  # (n_rows,)


@cached(16)
def sweep_parts(n_keys: int, seed: int) -> dict:
    """The sweep cut once per (n, seed), not on every run: each chart's CSV columns ("jacobian", "entropy",
    "max_weight") and, by d_k, its two rows indexed by series for the page's metrics ("at")."""
    df = saturation_sweep(n_keys, seed)
    return {
        "jacobian": df[["d_k", "series", "jacobian_norm", "jacobian_median"]],
        "entropy": df[["d_k", "series", "entropy"]],
        "max_weight": df[["d_k", "series", "max_weight"]],
        "at": {d_k: rows.set_index("series") for d_k, rows in df.groupby("d_k")},
    }


FAR = 2.0  # the mean ‖J‖ is "far above" the median from this ratio on


def _from_on(d_ks, holds) -> int | None:
    """The smallest d_k from which `holds` is true at every larger d_k of the sweep (None: not at 1024)."""
    start = None
    for d_k, ok in zip(d_ks, holds, strict=True):
        start = (start or d_k) if ok else None
    return start


@cached(64)
def sweep_facts(sweep: pd.DataFrame, d_k: int) -> dict:
    """What the sweep's charts show, for the page's sentences about them (computed, so true at every n and d_k).

    first/peak/end: the unscaled median ‖J‖ at d_k 1, at its largest (peak_d_k) and at d_k 1024; lo/hi: the
    scaled median's range; below_from: the d_k from which the unscaled median stays below the scaled one
    (d_k 1 excluded: both are the same logits there); mean/median/ratio: the unscaled row at d_k;
    far_from: the d_k from which the unscaled mean stays FAR times above the median or more.
    """
    u = sweep[sweep.series == "unscaled"].set_index("d_k")
    s = sweep[sweep.series == "scaled"].set_index("d_k")
    later = u.index[1:]
    ratio = u.jacobian_norm / u.jacobian_median.where(u.jacobian_median > 0)
    return {
        "first": float(u.jacobian_median.iloc[0]),
        "peak": float(u.jacobian_median.max()),
        "peak_d_k": int(u.jacobian_median.idxmax()),
        "end": float(u.jacobian_median.iloc[-1]),
        "end_d_k": int(u.index[-1]),
        "lo": float(s.jacobian_median.min()),
        "hi": float(s.jacobian_median.max()),
        "below_from": _from_on(later, (u.jacobian_median < s.jacobian_median)[later]),
        "mean": float(u.jacobian_norm[d_k]),
        "median": float(u.jacobian_median[d_k]),
        "ratio": float(ratio[d_k]) if ratio[d_k] == ratio[d_k] else float("inf"),
        "far_from": _from_on(u.index, (ratio.fillna(float("inf")) >= FAR)),
    }


def _row_stats(p: torch.Tensor) -> dict[str, float]:
    # + 0.0 turns the -0.0 of a one-hot row (-(1 log 1) = -0.0) into 0.0, which prints without a sign
    h = float(entropy(p)) + 0.0
    return {"entropy": h, "max_weight": float(p.max()), "jacobian_norm": float(jacobian_norm(p))}


def _one_query(d_k: int, n_keys: int, series: str, seed: int) -> torch.Tensor:
    """The first query's logits against n_keys keys, sorted largest first: shape (n_keys,)."""
    z = random_logits(d_k, 1, n_keys, scaled=series == "scaled", seed=seed)[0]
    return z.sort(descending=True).values


@cached(64)
def temperature_curve(d_k: int, n_keys: int, seed: int) -> pd.DataFrame:
    """Entropy of one query's softmax(z / T) over T_GRID, for the unscaled and the scaled logits.

    Columns: series, temperature, entropy. It rises from 0 (argmax) to log(n_keys) (uniform).
    """
    check_int("n_keys", n_keys, minimum=2)
    grid = torch.tensor(T_GRID, dtype=torch.float64).unsqueeze(-1)  # (n_T, 1)
    curves = []
    for series in SERIES:
        h = entropy(masked_softmax(_one_query(d_k, n_keys, series, seed) / grid))  # (n_T,)
        curves.append(pd.DataFrame({"series": series, "temperature": T_GRID, "entropy": h.numpy()}))
    return pd.concat(curves, ignore_index=True)


@cached(128)
def temperature_row(d_k: int, n_keys: int, temperature: float, seed: int):
    """The same query's weights softmax(z / T) at one temperature, unscaled and scaled.

    Returns (row, now): row has series, rank (0 = largest logit), logit, weight; now has series,
    temperature and the entropy, largest weight and Jacobian norm of the weights.
    """
    check_int("n_keys", n_keys, minimum=2)
    temperature = check_positive("temperature", temperature)
    rows, now = [], []
    for series in SERIES:
        z = _one_query(d_k, n_keys, series, seed)  # (n_keys,)
        p = masked_softmax(z / temperature)  # (n_keys,)
        rows.append(pd.DataFrame({"series": series, "rank": range(n_keys), "logit": z.numpy(), "weight": p.numpy()}))
        now.append({"series": series, "temperature": temperature, **_row_stats(p)})
    return pd.concat(rows, ignore_index=True), pd.DataFrame(now)


@cached(128)
def bar_rows(d_k: int, n_keys: int, temperature: float, scale: str, seed: int) -> pd.DataFrame:
    """The weights the bar chart draws, as its CSV offers them: temperature_row's rows of one scale, with T."""
    row, _ = temperature_row(d_k, n_keys, temperature, seed)
    return row[row.series == scale].assign(temperature=temperature)


@cached(32)
def softmax_example(logits: tuple[float, ...]):
    """softmax of one short row of logits at T = 1, with its Jacobian.

    Returns (weights, jacobian, stats): weights has i, logit, weight, self_gradient (dp_i/dz_i);
    jacobian has i, j, value (long form, one row per cell); stats holds entropy, max_weight,
    jacobian_norm (Frobenius), one_minus_max (1 - largest weight, which rounding to 1 would hide) and
    top_gradient (dp_k/dz_k for the largest weight p_k).
    """
    z = torch.tensor(logits, dtype=torch.float64)  # (n,)
    if z.dim() != 1 or z.numel() < 2 or not torch.isfinite(z).all():
        raise ValueError(f"logits must be a flat sequence of at least 2 finite numbers, got {logits!r}")
    p = masked_softmax(z)  # (n,)
    jac = softmax_jacobian(p)  # (n, n)
    n = z.numel()
    weights = pd.DataFrame(
        {"i": range(n), "logit": z.numpy(), "weight": p.numpy(), "self_gradient": jac.diag().numpy()}
    )
    ii, jj = np.meshgrid(range(n), range(n), indexing="ij")
    cells = pd.DataFrame({"i": ii.ravel(), "j": jj.ravel(), "value": jac.numpy().ravel()})
    # 1 - max(p) as the sum of the other weights: 1.0 - 0.999999998 would lose digits to cancellation.
    top = int(p.argmax())
    others = torch.ones(n, dtype=torch.bool)
    others[top] = False
    stats = _row_stats(p) | {"one_minus_max": float(p[others].sum()), "top_gradient": float(jac[top, top])}
    return weights, cells, stats


@cached(64)
def jacobian_html(logits: tuple[float, ...]) -> str:
    """softmax_example(logits)'s Jacobian as the page shows it: an HTML table tinted on the fixed ±JACOBIAN_LIMIT
    scale (charts.jacobian_html), made once per row of logits, as rendering a Styler costs more than its maths."""
    _, cells, _ = softmax_example(logits)
    uuid = hashlib.blake2b(repr(logits).encode(), digest_size=5).hexdigest()  # one per row of logits, stable
    return charts.jacobian_html(cells, JACOBIAN_LIMIT, uuid)


@cached(1)
def notes_check() -> pd.DataFrame:
    """The notes' hand-rounded softmax values beside the computed ones.

    Columns: key (the claim in explorer.notes), logits, notes, computed (strings), largest_gap
    (absolute), worst_factor: the largest ratio between a non-zero printed weight and the true one, either
    way round, and verdict (right/inexact/wrong, as the claims table judges it). A weight printed as 1e-4
    that is really 2e-9 is close in absolute terms yet 5 orders of magnitude off, and it is that small weight
    which sets the gradient.
    """
    out = []
    for key, logits, rounded in NOTES_ROUNDED:
        p = masked_softmax(torch.tensor(logits, dtype=torch.float64)).numpy()
        claimed = np.array(rounded)
        printed = claimed > 0
        ratio = claimed[printed] / p[printed]
        out.append(
            {
                "key": key,
                "logits": _fmt_vector(logits),
                "notes": _fmt_vector(rounded),
                "computed": _fmt_vector(p),
                "largest_gap": float(np.abs(p - claimed).max()),
                "worst_factor": float(np.maximum(ratio, 1 / ratio).max()),
                "verdict": notes.check(key).verdict,
            }
        )
    return pd.DataFrame(out)


def _fmt_weight(v: float) -> str:
    """4 significant digits, writing a weight within 1e-4 of 1 as 1 − ε so that ε is not rounded away."""
    return f"1 − {1 - v:.3g}" if 0.9999 < v < 1 else f"{v:.4g}"


def _fmt_vector(values) -> str:
    return "[" + ", ".join(_fmt_weight(float(v)) for v in values) + "]"


def parse_logits(text: str) -> tuple[float, ...]:
    """Strictly parse "2, 0.5, -1e1": 2..16 comma-separated finite decimals in [-1000, 1000].

    Raises ValueError naming the offending entry; accepts the typographic minus sign the page prints.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("type at least 2 comma-separated numbers, e.g. 4, 1, 0")
    parts = [part.strip() for part in text.replace("\u2212", "-").split(",")]
    if len(parts) > MAX_LOGITS:
        raise ValueError(f"at most {MAX_LOGITS} numbers, got {len(parts)}")
    values = []
    for position, part in enumerate(parts, start=1):
        if not _FLOAT.fullmatch(part):
            raise ValueError(f"entry {position} is not a number; separate numbers with commas")  # never echo it
        value = float(part)
        if abs(value) > MAX_ABS_LOGIT:
            raise ValueError(f"entry {position} ({part}) must lie in [-{MAX_ABS_LOGIT:g}, {MAX_ABS_LOGIT:g}]")
        values.append(value)
    if len(values) < 2:
        raise ValueError(f"type at least 2 comma-separated numbers, got {len(values)}")
    return tuple(values)
