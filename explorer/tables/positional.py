"""Tables for "Positional encoding": the code, its dot products, the shift rotation, aliasing, lost symmetry.

PE(pos, 2i) = sin(pos w_i),  PE(pos, 2i+1) = cos(pos w_i),  w_i = base^(-2i/d)
PE(i) . PE(j) = sum_i cos((i - j) w_i)            a function of the offset i - j only
PE(pos + k) = M_k PE(pos)                          M_k: one 2x2 rotation by k w_i per frequency

The functions the page calls keep their results for the whole server (@cached), shared and read-only.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from attn_core._checks import check_int
from attn_core.naive import naive_attention
from attn_core.positional import frequencies, shift_matrix, single_period_encoding, sinusoidal_encoding
from attn_core.symmetry import equivariance_error, make_permutation
from explorer.ui.cache import cached

MAX_CELLS = 8192  # heatmaps larger than this are thinned to every s-th position before charting
COLLISION_TOL = 1e-9  # codes closer than this are identical; distinct integer positions differ by >= 2 sin(pi/T)
SEARCH_LIMIT = 50_000  # above lcm(11, 13, 15, 16) = 34320, the largest the page allows (4 periods <= 16)
ALIAS_WINDOW = 480  # positions drawn in the aliasing chart at most


def _cells(x: torch.Tensor, row: str, col: str, value: str, rows=None, cols=None) -> pd.DataFrame:
    """A matrix as one row per cell: columns row, col, value (rows/cols: the labels, default 0..size-1)."""
    r, c = x.shape
    rows = torch.arange(r) if rows is None else rows
    cols = torch.arange(c) if cols is None else cols
    return pd.DataFrame(
        {row: rows.repeat_interleave(c).numpy(), col: cols.repeat(r).numpy(), value: x.reshape(-1).numpy()}
    )


@cached(32)
def encoding_table(n: int, d_model: int, base: float) -> pd.DataFrame:
    """PE for positions 0..n-1, one row per (position, dimension); thinned to at most MAX_CELLS cells."""
    pe = sinusoidal_encoding(n, d_model, base=base)  # (n, d)
    stride = max(1, math.ceil(n * d_model / MAX_CELLS))
    positions = torch.arange(0, n, stride)
    return _cells(pe[positions], "position", "dimension", "value", rows=positions)


def periods(d_model: int, base: float) -> tuple[float, float]:
    """The periods, in positions, of the fastest and the slowest pair of dimensions: 2 pi / omega."""
    omega = frequencies(d_model, base=base)
    return float(2 * math.pi / omega.max()), float(2 * math.pi / omega.min())


@cached(32)
def gram_by_offset(n: int, d_model: int, base: float) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """All n^2 dot products p_i . p_j grouped by offset i - j.

    Returns (gram, by_offset, spread): gram has i, j, dot (thinned like encoding_table); by_offset has offset,
    lo, hi, mean, pairs, theory = sum_k cos(offset w_k); spread is the largest hi - lo over all offsets.
    """
    pe = sinusoidal_encoding(n, d_model, base=base)
    gram = pe @ pe.T  # (n, n)
    idx = torch.arange(n)
    offset = (idx[:, None] - idx[None, :]).reshape(-1).numpy()
    flat = pd.DataFrame({"offset": offset, "dot": gram.reshape(-1).numpy()})
    by_offset = flat.groupby("offset").dot.agg(lo="min", hi="max", mean="mean", pairs="size").reset_index()
    w = frequencies(d_model, base=base)
    offsets = torch.tensor(by_offset.offset.to_numpy(), dtype=torch.float64)
    by_offset["theory"] = torch.cos(offsets[:, None] * w[None, :]).sum(dim=1).numpy()
    stride = max(1, math.ceil(n * n / MAX_CELLS))
    keep = torch.arange(0, n, stride)
    return (
        _cells(gram[keep][:, keep], "i", "j", "dot", rows=keep, cols=keep),
        by_offset,
        float((by_offset.hi - by_offset.lo).max()),
    )


@cached(64)
def shift_check(pos: int, k: int, d_model: int, base: float, n: int, freq: int) -> dict:
    """PE(pos + k) against M_k PE(pos), at `pos` and at every position 0..n-1 with the same M_k.

    Returns error_at_pos, error_all (max over positions), m_k (DataFrame row, col, value: its non-zero
    entries, 2 d_model of d_model^2), block (the 2x2 block of frequency `freq`, as nested lists) and angle (k w_freq).
    """
    check_int("pos", pos)
    check_int("freq", freq, minimum=0, maximum=d_model // 2 - 1)
    m = shift_matrix(k, d_model, base=base)  # (d, d)
    pe = sinusoidal_encoding(n, d_model, base=base)  # rows are PE(0..n-1)
    shifted = sinusoidal_encoding(n, d_model, base=base, start=k)  # PE(k..k+n-1)
    errors = (pe @ m.T - shifted).abs().amax(dim=1)  # row p: max |M_k PE(p) - PE(p + k)|
    one = sinusoidal_encoding(1, d_model, base=base, start=pos)[0]
    target = sinusoidal_encoding(1, d_model, base=base, start=pos + k)[0]
    return {
        "error_at_pos": float((m @ one - target).abs().max()),
        "error_all": float(errors.max()),
        "m_k": _cells(m, "row", "col", "value").query("value != 0").reset_index(drop=True),
        "block": m[2 * freq : 2 * freq + 2, 2 * freq : 2 * freq + 2].tolist(),
        "angle": float(k * frequencies(d_model, base=base)[freq]),
    }


@cached(64)
def rotation_circle(n: int, d_model: int, base: float, freq: int, pos: int, k: int) -> pd.DataFrame:
    """(sin, cos) of frequency `freq` for positions 0..n-1 and pos, pos + k: points on the unit circle.

    Columns: position, sin, cos, role ("position" / "pos" / "pos + k").
    """
    w = frequencies(d_model, base=base)
    check_int("freq", freq, minimum=0, maximum=len(w) - 1)
    positions = list(range(n)) + [pos, pos + k]
    roles = ["position"] * n + ["pos", "pos + k"]
    angles = torch.tensor(positions, dtype=torch.float64) * w[freq]
    sin, cos = torch.sin(angles).numpy(), torch.cos(angles).numpy()
    return pd.DataFrame({"position": positions, "sin": sin, "cos": cos, "role": roles})


def _check_periods(periods: tuple[int, ...]) -> tuple[int, ...]:
    if not periods:
        raise ValueError("periods must hold at least one period, got none")
    for p in periods:
        check_int("period", p, minimum=1)
    return periods


def multi_period_encoding(n: int, periods: tuple[int, ...]) -> torch.Tensor:
    """(n, 2 * len(periods)): one [sin, cos] pair per period, side by side."""
    return torch.cat([single_period_encoding(n, p) for p in _check_periods(periods)], dim=-1)


def collision_period(periods: tuple[int, ...]) -> int:
    """lcm(T_1, ..., T_m): the codes of p and p + x agree in every pair exactly when x is a multiple of it."""
    return math.lcm(*_check_periods(periods))


def aliasing_window(periods: tuple[int, ...]) -> int:
    """How many positions the aliasing chart draws: past twice the collision period (its dashed line in sight),
    three of the first period and 25, within ALIAS_WINDOW."""
    return min(ALIAS_WINDOW, max(2 * collision_period(periods) + 1, 3 * periods[0] + 1, 25))


def pairwise_coprime(periods: tuple[int, ...]) -> bool:
    """True when no two periods share a factor, so the lcm is the full product."""
    return all(math.gcd(a, b) == 1 for i, a in enumerate(periods) for b in periods[i + 1 :])


@cached(64)
def first_collision(periods: tuple[int, ...], limit: int = SEARCH_LIMIT) -> int | None:
    """Smallest p in 1..limit whose code equals position 0's, found by comparing codes; None if none.

    With integer periods code(p + x) = code(x) for every x exactly when code(p) = code(0), so comparing
    with position 0 finds the first pair of positions that no pair of sinusoids can tell apart.
    """
    check_int("limit", limit, minimum=1)
    codes = multi_period_encoding(limit + 1, periods)
    hits = ((codes[1:] - codes[0]).abs().amax(dim=1) < COLLISION_TOL).nonzero()
    return int(hits[0, 0]) + 1 if len(hits) else None


@cached(64)
def aliasing_table(periods: tuple[int, ...], n: int) -> pd.DataFrame:
    """Distance from position 0's code for positions 0..n-1: the first period alone, and all periods together.

    Columns: position, code ("one period": periods[0] alone, or "all periods"), distance.
    """
    _check_periods(periods)
    frames = []
    for label, ps in (("one period", periods[:1]), ("all periods", periods)):
        codes = multi_period_encoding(n, ps)
        dist = (codes - codes[0]).norm(dim=1)
        frames.append(pd.DataFrame({"position": range(n), "code": label, "distance": dist.numpy()}))
    return pd.concat(frames, ignore_index=True)


@cached(32)
def equivariance_sweep(
    n: int, d_model: int, base: float, kind: str, amplitudes: tuple[float, ...], seed: int
) -> pd.DataFrame:
    """max |f(PX) - P f(X)| for attention on X + a PE, for each amplitude a (a = 0: no positions at all).

    Tokens X ~ N(0, 1) of shape (n, d_model) act as queries, keys and values; the encoding stays in
    position order when the tokens are shuffled, which is what ties outputs to positions.
    Columns: amplitude, error.
    """
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_model, generator=gen, dtype=torch.float64)
    pe = sinusoidal_encoding(n, d_model, base=base)  # (n, d), fixed to positions 0..n-1
    perm = make_permutation(kind, n, seed=seed)
    rows = []
    for a in amplitudes:

        def attend(q, k, v, a=a):
            return naive_attention(q + a * pe, k + a * pe, v + a * pe)[0]

        rows.append({"amplitude": a, "error": equivariance_error(attend, x, x, x, perm)})
    return pd.DataFrame(rows)


@cached(32)
def sweep_errors(
    n: int, d_model: int, base: float, kind: str, amplitudes: tuple[float, ...], seed: int
) -> dict[float, float]:
    """equivariance_sweep as amplitude -> error: the numbers beside its chart."""
    sweep = equivariance_sweep(n, d_model, base, kind, amplitudes, seed)
    return dict(zip(sweep.amplitude.tolist(), sweep.error.tolist(), strict=True))
