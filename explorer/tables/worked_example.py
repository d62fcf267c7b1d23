"""Tables for "Worked example, step by step": the notes' small examples and a re-check of their numbers.

    S = Q K^T,   S' = S / sqrt(d_k),   A = softmax(S') row by row,   Z = A V

The notes describe a 2-token example with d = 3 and a 4-token example with d = 2 only symbolically
(q_i, k_j, alpha_ij); the matrices below are our small integer choices for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attn_core.naive import masked_softmax, naive_attention
from attn_core.stats import cosine_similarity_samples, sample_scores, score_statistics, theoretical_score_variance
from attn_core.symmetry import permutation_matrix
from explorer.tables.geometry import parity_samples

Matrix = tuple[tuple[float, ...], ...]
SAMPLES = 5000  # pairs drawn for a measured claim: standard errors of about 2%, a fraction of a second
MAX_ABS_ENTRY = 1e6  # larger entries are almost surely typos, and would overflow QK^T in the display


@dataclass(frozen=True)
class Example:
    label: str
    q: Matrix  # (n, d_k)
    k: Matrix  # (n, d_k)
    v: Matrix  # (n, d_v)
    focus: int  # the token whose output the notes expand, 1-based


EXAMPLES: dict[str, Example] = {
    "two_tokens": Example(
        "2 tokens, d = 3",
        q=((1, 0, 1), (0, 2, 1)),
        k=((1, 1, 0), (0, 1, 2)),
        v=((1, 2, 3), (4, 5, 6)),
        focus=1,  # the notes expand z_1 = alpha_11 v_1 + alpha_12 v_2
    ),
    "four_tokens": Example(
        "4 tokens, d = 2",
        q=((2, 0), (1, 1), (0, -2), (-1, 1)),
        k=((1, 0), (0, 1), (-1, 0), (0, -1)),
        v=((0, 0), (1, 0), (1, 1), (0, 1)),
        focus=2,  # the notes expand the second token's output alpha_21 v_1 + ... + alpha_24 v_4
    ),
}


# 1. Inputs: an edited table must keep its shape and hold finite numbers.


def parse_matrix(name: str, table, shape: tuple[int, int]) -> Matrix:
    """A table (DataFrame or nested lists) as a tuple of float rows, or ValueError saying what to fix."""
    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    if frame.shape != shape:
        raise ValueError(f"{name} must have {shape[0]} rows and {shape[1]} columns, got {frame.shape}")
    values = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.argwhere(~np.isfinite(values) | (np.abs(np.nan_to_num(values)) > MAX_ABS_ENTRY))
    if len(bad):
        r, c = bad[0]
        cell = frame.iat[r, c]
        got = (
            "it is empty"
            if cell is None or (isinstance(cell, float) and math.isnan(cell))
            else f"got {str(cell)[:20]!r}"
        )
        raise ValueError(
            f"{name}: the cell in row {r + 1}, column {c + 1} must be a number between "
            f"-{MAX_ABS_ENTRY:g} and {MAX_ABS_ENTRY:g} ({got})"
        )
    return tuple(tuple(float(x) for x in row) for row in values)


_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _short(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def matrix_text(m: Matrix) -> str:
    """A matrix as short text: rows joined by ";", entries by ",", each the shortest exact decimal ("2", "0.1")."""
    return ";".join(",".join(_short(float(x)) for x in row) for row in m)


def matrix_from_text(text: str, shape: tuple[int, int]) -> Matrix:
    """The inverse of matrix_text, strictly: exactly `shape`, plain decimals only, finite, within MAX_ABS_ENTRY."""
    rows = text.split(";")
    if len(rows) != shape[0]:
        raise ValueError(f"text must hold {shape[0]} rows separated by ';', got {len(rows)}")
    matrix = []
    for r, row in enumerate(rows):
        cells = row.split(",")
        if len(cells) != shape[1]:
            raise ValueError(f"row {r + 1} must hold {shape[1]} numbers separated by ',', got {len(cells)}")
        if not all(_NUMBER.fullmatch(cell) for cell in cells):
            raise ValueError(f"row {r + 1} must hold plain decimal numbers, got {row[:40]!r}")
        values = tuple(float(cell) for cell in cells)
        if not all(math.isfinite(x) and abs(x) <= MAX_ABS_ENTRY for x in values):
            raise ValueError(f"row {r + 1}: every number must lie between -{MAX_ABS_ENTRY:g} and {MAX_ABS_ENTRY:g}")
        matrix.append(values)
    return tuple(matrix)


def as_frame(m, rows: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(np.asarray(m, dtype=np.float64), index=list(rows), columns=list(cols))


def labels(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i + 1}" for i in range(n)]


# 2. The steps, each matrix kept for display.


def attention_steps(q: Matrix, k: Matrix, v: Matrix, scaled: bool = True) -> dict[str, pd.DataFrame]:
    """Every intermediate of softmax(Q K^T / sqrt(d_k)) V as a labelled DataFrame.

    Keys: "scores" (Q K^T), "scaled" (divided by sqrt(d_k), or by 1 if not `scaled`), "weights"
    (with a "row sum" column), "output"; rows are query tokens, columns key tokens or output dimensions.
    Weights and output come from naive_attention; the scores are recomputed here only to be shown.
    """
    qt, kt, vt = (torch.tensor(m, dtype=torch.float64) for m in (q, k, v))
    d_k = qt.shape[-1]
    divisor = math.sqrt(d_k) if scaled else 1.0
    out, weights = naive_attention(qt, kt, vt, scale=1 / divisor)  # (n, d_v), (n, n)
    scores = qt @ kt.T  # (n, n)
    tokens, keys = labels("q", qt.shape[0]), labels("k", kt.shape[0])
    w = as_frame(weights, tokens, keys)
    return {
        "scores": as_frame(scores, tokens, keys),
        "scaled": as_frame(scores / divisor, tokens, keys),
        "weights": w.assign(**{"row sum": w.sum(axis=1)}),
        "output": as_frame(out, labels("z", qt.shape[0]), labels("dim ", vt.shape[1])),
    }


def token_detail(q: Matrix, k: Matrix, v: Matrix, steps: dict[str, pd.DataFrame], token: int) -> dict:
    """The numbers behind row `token` (1-based) of every step, for writing the sums out by hand.

    exp_shifted is e^(s_ij - m_i) with m_i the row's largest scaled score, as masked_softmax computes it;
    denominator is its sum, so exp_shifted / denominator are the weights.
    """
    i = token - 1
    if not 0 <= i < len(q):
        raise ValueError(f"token must be between 1 and {len(q)}, got {token}")
    scaled = steps["scaled"].iloc[i].to_numpy()
    e = np.exp(scaled - scaled.max())
    return {
        "token": token,
        "q": np.asarray(q[i], dtype=np.float64),
        "k": np.asarray(k, dtype=np.float64),
        "v": np.asarray(v, dtype=np.float64),
        "scores": steps["scores"].iloc[i].to_numpy(),
        "exp_shifted": e,
        "denominator": float(e.sum()),
        "weights": steps["weights"].drop(columns="row sum").iloc[i].to_numpy(),
        "output": steps["output"].iloc[i].to_numpy(),
    }


def weights_long(weights: pd.DataFrame) -> pd.DataFrame:
    """The weight matrix one cell per row (query, key, weight), for a heatmap."""
    w = weights.drop(columns="row sum", errors="ignore")
    return w.rename_axis("query").reset_index().melt(id_vars="query", var_name="key", value_name="weight")


def contributions(weights: pd.DataFrame, v: Matrix, token: int) -> pd.DataFrame:
    """Token `token`'s (1-based) output split into alpha_ij v_j: columns source, dim (1-based), value, weight."""
    alpha = weights.drop(columns="row sum", errors="ignore").iloc[token - 1].to_numpy()
    vv = np.asarray(v, dtype=np.float64)
    rows = [
        {"source": f"α{token}{j + 1}·v{j + 1}", "dim": c + 1, "value": alpha[j] * vv[j, c], "weight": alpha[j]}
        for j in range(vv.shape[0])
        for c in range(vv.shape[1])
    ]
    return pd.DataFrame(rows)


# 3. The notes' numeric claims: inputs and printed numbers are data, true values are computed.


@dataclass(frozen=True)
class Claim:
    key: str  # stable name: the page shows the claim and its place in the viewer's language by this key
    claim: str  # in English, as the page's English strings print it
    where: str  # which notes file (seeds/000_... etc.), and the topic there
    kind: str  # how to compute the true value: a key of _COMPUTE
    inputs: tuple
    stated: tuple[float, ...]
    decimals: int | None  # digits the notes print; None: an exact statement
    rounding: float = 0.0  # what float64 arithmetic may add to an exact statement


CLAIMS: tuple[Claim, ...] = (
    Claim("softmax_8_2_1", "softmax([8, 2, 1])", "000 · scores → weights", "softmax", (8, 2, 1), (0.87, 0.09, 0.04), 2),
    Claim("softmax_20", "softmax([20, −20])", "000 · why scale", "softmax", (20, -20), (0.9999, 0.0), 4),
    Claim("softmax_3", "softmax([3, −3])", "000 · why scale", "softmax", (3, -3), (0.95, 0.05), 2),
    Claim("softmax_20_0", "softmax([20, 0, −20])", "000 · d_k = 64", "softmax", (20, 0, -20), (0.9999, 0.0001, 0.0), 4),
    Claim("softmax_2_5", "softmax([2.5, 0, −2.5])", "000 · d_k = 64", "softmax", (2.5, 0, -2.5), (0.92, 0.08, 0.0), 2),
    Claim(
        "exp_half_square",
        "e^(−t²/2) at t = 1, 2, 3",
        "000 · 3σ rule",
        "exp_half_square",
        (1, 2, 3),
        (0.606, 0.135, 0.011),
        3,
    ),
    Claim(
        "normal_mass",
        "P(|Z| ≤ 1), P(|Z| ≤ 2), P(|Z| ≤ 3)",
        "000 · 3σ rule",
        "normal_mass",
        (1, 2, 3),
        (0.6827, 0.9545, 0.9973),
        4,
    ),
    Claim("score_std_512", "std of q·k at d_k = 512", "000 · high dimension", "score_std", (512,), (22.6,), 1),
    Claim(
        "score_var_64",
        "Var(q·k) = d_k at d_k = 64, measured",
        "001, 003 · why scale",
        "score_var",
        (64, SAMPLES),
        (64.0,),
        None,
    ),
    Claim(
        "cos_var_512",
        "Var cos θ = 1/d_k at d_k = 512, measured",
        "000 · high dimension",
        "cos_var",
        (512, SAMPLES),
        (1 / 512,),
        None,
    ),
    Claim(
        "permute_rows",
        "P A for the permutation [2, 0, 1]",
        "000 · permutations",
        "permute_rows",
        (2, 0, 1),
        (7, 8, 9, 1, 2, 3, 4, 5, 6),
        None,
    ),
    Claim(
        "permute_cols",
        "A P for the permutation [2, 0, 1]",
        "000 · permutations",
        "permute_cols",
        (2, 0, 1),
        (2, 3, 1, 5, 6, 4, 8, 9, 7),
        None,
    ),
    Claim(
        "additive_odd",
        "additive score is odd: max |e(−q,−k) + e(q,k)|",
        "002 · additive",
        "additive_odd",
        (8, 16),
        (0,),
        None,
        1e-12,
    ),
    Claim(
        "dot_even",
        "dot product is even: max |s(−q,−k) − s(q,k)|",
        "002 · additive",
        "dot_even",
        (8, 16),
        (0,),
        None,
        1e-12,
    ),
)
NOTES_A = ((1, 2, 3), (4, 5, 6), (7, 8, 9))  # the 3 x 3 matrix of the permutation example
SAMPLED_SIGMAS = 4  # a measured value passes within 4 standard errors of the claim (two-sided p ~ 6e-5)


def _softmax(inputs, seed):
    return masked_softmax(torch.tensor(inputs, dtype=torch.float64)).tolist(), 0.0


def _exp_half_square(inputs, seed):
    return [math.exp(-(t**2) / 2) for t in inputs], 0.0


def _normal_mass(inputs, seed):
    return [math.erf(k / math.sqrt(2)) for k in inputs], 0.0


def _score_std(inputs, seed):
    return [math.sqrt(theoretical_score_variance(inputs[0], distribution="normal"))], 0.0


def _score_var(inputs, seed):
    s = score_statistics(sample_scores(inputs[0], inputs[1], seed=seed))
    return [s["var"]], s["var_stderr"]


def _cos_var(inputs, seed):
    s = score_statistics(cosine_similarity_samples(inputs[0], inputs[1], seed=seed))
    return [s["var"]], s["var_stderr"]


def _permute(inputs, side):
    p, a = permutation_matrix(list(inputs)), torch.tensor(NOTES_A, dtype=torch.float64)
    return (p @ a if side == "rows" else a @ p).reshape(-1).tolist(), 0.0


def _parity(inputs, seed, score: str, residual: str):
    _, stats, _ = parity_samples(*inputs, seed)  # the geometry page's check, on the same seed
    return [stats[score][residual]], 0.0


_COMPUTE = {
    "softmax": _softmax,
    "exp_half_square": _exp_half_square,
    "normal_mass": _normal_mass,
    "score_std": _score_std,
    "score_var": _score_var,
    "cos_var": _cos_var,
    "permute_rows": lambda inputs, seed: _permute(inputs, "rows"),
    "permute_cols": lambda inputs, seed: _permute(inputs, "cols"),
    "additive_odd": lambda inputs, seed: _parity(inputs, seed, "additive", "odd"),
    "dot_even": lambda inputs, seed: _parity(inputs, seed, "dot product", "even"),
}


def tolerance(claim: Claim, stderr: float) -> float:
    """One unit in the last printed digit (rounding or truncation both pass), plus 4 SE when measured.

    The factor 1 + 1e-9 keeps a gap of exactly one unit from failing on the binary representation of 0.0001.
    """
    digits = 0.0 if claim.decimals is None else 10.0 ** (-claim.decimals) * (1 + 1e-9)
    return digits + claim.rounding + SAMPLED_SIGMAS * stderr


def _fmt(values: Sequence[float], decimals: int | None = None) -> str:
    """As the notes print them (fixed decimals), or with 4 significant digits."""
    spec = ".4g" if decimals is None else f".{decimals}f"
    return "[" + ", ".join(f"{x:{spec}}" for x in values) + "]"


def check_claims(seed: int) -> pd.DataFrame:
    """One row per claim: key, claim, where, notes (printed), computed, max_abs_error, tolerance, verdict (✓/✗)."""
    rows = []
    for c in CLAIMS:
        true, stderr = _COMPUTE[c.kind](c.inputs, seed)
        error = float(np.max(np.abs(np.asarray(true) - np.asarray(c.stated))))
        tol = tolerance(c, stderr)
        rows.append(
            {
                "key": c.key,
                "claim": c.claim,
                "where": c.where,
                "notes": _fmt(c.stated, c.decimals),
                "computed": _fmt(true),
                "max_abs_error": error,
                "tolerance": tol,
                "verdict": "✓" if error <= tol else "✗",
            }
        )
    return pd.DataFrame(rows)


def computed_value(claim: str, seed: int = 0) -> list[float]:
    """The true value of the claim whose text is `claim` (for tests and captions)."""
    c = next(c for c in CLAIMS if c.claim == claim)
    return _COMPUTE[c.kind](c.inputs, seed)[0]
