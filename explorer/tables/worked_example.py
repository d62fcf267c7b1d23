"""Tables for "Worked example, step by step": the notes' small examples and a re-check of their numbers.

    S = Q K^T,   S' = S / sqrt(d_k),   A = softmax(S') row by row,   Z = A V
    back:  dV = A^T dZ,  dA = dZ V^T,  dS' = A * (dA - rowsum(dA * A)),  dQ = dS' K / √d_k,  dK = dS'^T Q / √d_k

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

from attn_core.backward import attention_backward, attention_backward_autograd
from attn_core.naive import naive_attention
from explorer import notes
from explorer.charts import worked_example as charts
from explorer.ui.cache import cached
from explorer.ui.claims import computed_text
from explorer.ui.i18n import fill
from explorer.ui.page import literal

Matrix = tuple[tuple[float, ...], ...]
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


@cached(64)
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


# 3. The backward pass: L = sum of token i's output z_i, its gradients by hand, checked against autograd.

GRADIENTS = ("dv", "dweights", "dscores", "dq", "dk")


@cached(64)
def backward_steps(q: Matrix, k: Matrix, v: Matrix, scaled: bool, token: int) -> dict:
    """dL/dO, dL/dV, dL/dA, dL/dS, dL/dQ, dL/dK for L = sum_c z_token,c, as labelled DataFrames.

    dL/dO is 1 in row `token` (1-based) and 0 elsewhere: the loss reaches every key and value through
    row `token` of A, but only query `token`. "errors" has one row per gradient: max |by hand - autograd|.
    """
    qt, kt, vt = (torch.tensor(m, dtype=torch.float64) for m in (q, k, v))
    n, d_k, d_v = qt.shape[0], qt.shape[1], vt.shape[1]
    if not 1 <= token <= n:
        raise ValueError(f"token must be between 1 and {n}, got {token}")
    upstream = torch.zeros(n, d_v, dtype=torch.float64)
    upstream[token - 1] = 1.0  # (n, d_v): L = sum of z_token
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    hand = attention_backward(qt, kt, vt, upstream, scale=scale)
    auto = attention_backward_autograd(qt, kt, vt, upstream, scale=scale)
    tokens, keys = labels("q", n), labels("k", n)
    frames = {
        "upstream": as_frame(upstream, labels("z", n), labels("dim ", d_v)),
        "dv": as_frame(hand.dv, labels("v", n), labels("dim ", d_v)),
        "dweights": as_frame(hand.dweights, tokens, keys),
        "dscores": as_frame(hand.dscores, tokens, keys),
        "dq": as_frame(hand.dq, tokens, labels("d", d_k)),
        "dk": as_frame(hand.dk, keys, labels("d", d_k)),
    }
    errors = [
        {"gradient": name, "max_error": float((getattr(hand, name) - getattr(auto, name)).abs().max())}
        for name in GRADIENTS
    ]
    return frames | {"errors": pd.DataFrame(errors), "scale": scale, "reached": reached(hand.dk, hand.dv)}


def reached(dk: torch.Tensor, dv: torch.Tensor) -> dict[str, int]:
    """How many keys and values get a gradient (a row not 0 beyond rounding): all values always (every weight is
    positive), the keys only where dL/dS' is not 0 (edited V rows with equal sums make it 0)."""

    def moved(g: torch.Tensor) -> int:
        return int((g.abs().amax(dim=-1) > 1e-12 * max(1.0, float(g.abs().max()))).sum())

    return {"keys": moved(dk), "values": moved(dv), "n": dk.shape[0]}


# 4. As the page prints them: the matrices and sums in LaTeX, the notes' claims in the viewer's words. Made once per
# input for the whole server: formatting six matrices costs more than computing them.


@cached(64)
def forward_text(q: Matrix, k: Matrix, v: Matrix, scaled: bool, token: int) -> dict:
    """The forward pass in LaTeX (matrices and token `token`'s expansions) and its charts' frames: cells (the
    weights, one per row) and parts (token `token`'s output split into alpha_ij v_j)."""
    steps = attention_steps(q, k, v, scaled)
    detail = token_detail(q, k, v, steps, token)
    return {
        "scores": charts.bmatrix(steps["scores"]),
        "dot": charts.dot_expansion(detail),
        "scaled": charts.bmatrix(steps["scaled"]),
        "weights": charts.bmatrix(steps["weights"].drop(columns="row sum"), 4),
        "softmax": charts.softmax_expansion(detail),
        "row_sums": ", ".join(f"{s:.12f}" for s in steps["weights"]["row sum"]),
        "output": charts.bmatrix(steps["output"]),
        "output_expansion": charts.output_expansion(detail),
        "cells": weights_long(steps["weights"]),
        "parts": contributions(steps["weights"], v, token),
    }


BACKWARD_DIGITS = {"upstream": 0, "dv": 4, "dweights": 4, "dscores": 4, "dq": 4, "dk": 4}


@cached(64)
def backward_text(q: Matrix, k: Matrix, v: Matrix, scaled: bool, token: int) -> dict:
    """backward_steps(...) with its six matrices in LaTeX under "latex"."""
    back = backward_steps(q, k, v, scaled, token)
    return back | {"latex": {name: charts.bmatrix(back[name], n) for name, n in BACKWARD_DIGITS.items()}}


@cached(16)
def claims(seed: int) -> pd.DataFrame:
    """The notes' claims checked at `seed` (explorer.notes.check_claims), kept for the page."""
    return notes.check_claims(seed)


@cached(64)
def claims_shown(seed: int, verdicts: tuple, files: tuple, text: dict) -> pd.DataFrame:
    """The claims table as the viewer reads it (their language, their headers; the numbers as computed), for the
    chosen filters. Five columns, the place under each claim: six did not fit 1366 px even with wrapped cells.
    Every cell escaped: st.table reads Markdown, and a formula's * or _ must stay as printed.
    text: columns, claims, where, why, verdicts, computed, printed (the locale's notes tables)."""
    table = claims(seed)
    rows = table[table.verdict.isin(verdicts) & table.files.map(lambda f: any(x in f for x in files))]
    headers = text["columns"]
    places = [f"{literal(text['claims'][key])} — *{literal(text['where'][key])}*" for key in rows.key]
    whys = [fill(text["why"][key], facts) for key, facts in zip(rows.key, rows.facts, strict=True)]
    return pd.DataFrame(
        {
            headers["claim"]: places,
            headers["notes"]: [
                literal(computed_text(key, printed, facts, text["printed"]))
                for key, printed, facts in zip(rows.key, rows.notes, rows.facts, strict=True)
            ],
            headers["computed"]: [
                literal(computed_text(key, computed, facts, text["computed"]))
                for key, computed, facts in zip(rows.key, rows.computed, rows.facts, strict=True)
            ],
            headers["verdict"]: [literal(text["verdicts"][v]).replace(" ", "\u00a0") for v in rows.verdict],  # one line
            headers["why"]: [literal(why) for why in whys],
        }
    )
