"""Tables for "Permutation equivariance": the weights A, A' and P A P^T, and the error of each variant.

Self-attention on tokens X (n, d) drawn from the seed, with random projections from the same seed:

    Q = X' W_q,  K = X' W_k,  V = X' W_v,  X' = X (+ PE if positions are encoded)
    Attention(X) = softmax(Q K^T / sqrt(d) (+ causal mask)) V

Permuting the tokens, P X = X[perm], gives Attention(P X) = P Attention(X) exactly in real arithmetic:
W acts on features and P on tokens, so (P X) W = P (X W), and softmax(P S P^T) = P softmax(S) P^T.
A causal mask or PE is tied to positions, not tokens, and breaks the identity.

The functions the page calls keep their results for the whole server (@cached), shared and read-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from attn_core.bilinear import asymmetry, projected_scores
from attn_core.masks import causal_mask
from attn_core.naive import masked_softmax, naive_attention
from attn_core.positional import sinusoidal_encoding
from attn_core.symmetry import make_permutation, parse_permutation
from explorer import notes
from explorer.ui.cache import cached

PERMUTATION_CHOICES = ("random", "reverse", "cyclic", "typed")
PRECISIONS = {"float64": torch.float64, "float32": torch.float32}
# (label, causal, positional): every way the two symmetry breakers can be combined
VARIANTS = (
    ("plain", False, False),
    ("causal mask", True, False),
    ("positional encoding", False, True),
    ("causal + positional", True, True),
)
# How many ulps of max|V| a re-ordered sum may cost per term, with headroom; see `tolerance`.
ULPS_PER_TERM = 4
# Exactly-zero errors have no place on a log axis: they are drawn here, below any rounding error of max|V| ~ 1.
LOG_FLOOR = 1e-20


def choose_permutation(kind: str, n: int, seed: int, shift: int = 1, text: str = "") -> tuple[int, ...]:
    """The permutation a page asks for, as a plain tuple: random (from the seed), reverse, cyclic or typed.

    A typed permutation is parsed strictly by `parse_permutation`, which raises ValueError on anything else.
    """
    if kind == "typed":
        if len(text) > 8 * n + 8:  # keeps the error message short; parse_permutation checks the rest
            raise ValueError(f"perm text is too long for n={n}: expected {n} comma-separated integers")
        return tuple(parse_permutation(text, n).tolist())
    if kind not in PERMUTATION_CHOICES:
        raise ValueError(f"kind must be one of {PERMUTATION_CHOICES}, got {kind!r}")
    # seed + 1: the shuffle is drawn independently of the tokens, which use `seed`
    return tuple(make_permutation(kind, n, seed=seed + 1, shift=shift).tolist())


def tolerance(n: int, d: int, precision: str, max_abs_v: float) -> float:
    """The largest error re-ordered floating-point sums can explain: ULPS_PER_TERM (n + d) eps max|V|.

    Permuting the tokens changes the order of two kinds of sums: the n terms of each softmax
    denominator and each output row sum_j a_ij v_j, and the d terms of each projection and logit
    (BLAS may block rows differently at different positions). Re-ordering a sum of m terms moves its
    rounding by at most about m ulps, and every output is a convex combination of rows of V, so it is
    measured in units of eps * max|V|.
    """
    eps = torch.finfo(PRECISIONS[precision]).eps
    return ULPS_PER_TERM * (n + d) * eps * max_abs_v


def _tokens_and_projections(n: int, d: int, seed: int, dtype: torch.dtype):
    """X (n, d) ~ N(0, 1) and W_q, W_k, W_v (d, d) ~ N(0, 1/d), drawn in fp64 so both precisions see one draw."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    w = torch.randn(3, d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    return x.to(dtype), w.to(dtype)


def _setup(n: int, d: int, perm: tuple[int, ...], seed: int, precision: str):
    """Tokens, projections, the causal mask and the PE for one run."""
    if len(perm) != n:
        raise ValueError(f"perm must have n={n} entries, got {len(perm)}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {tuple(PRECISIONS)}, got {precision!r}")
    x, w = _tokens_and_projections(n, d, seed, PRECISIONS[precision])
    return x, w, causal_mask(n), sinusoidal_encoding(n, d).to(x.dtype)


@cached(64)
def variant_runs(n: int, d: int, perm: tuple[int, ...], seed: int, precision: str) -> dict:
    """Every variant's weights of X and of P X and its error max |Attention(P X) - P Attention(X)|.

    Returns {"runs": {(causal, positional): (A, A', error)}, "max_abs_v": max|V|, the scale of every output}.
    A mask acts after the projections, so Q, K, V = X' W_q, X' W_k, X' W_v of X and of P X = X[perm], with and
    without PE (X' = X + PE), are computed once for the four variants: the same products as a run per variant.
    """
    x, w, mask, pe = _setup(n, d, perm, seed, precision)

    def projected(tokens: torch.Tensor, positional: bool):
        if positional:
            tokens = tokens + pe  # PE belongs to positions 0..n-1, whichever token sits there
        return tokens @ w[0], tokens @ w[1], tokens @ w[2]  # (n, d) each

    index = torch.tensor(perm)
    plain = {positional: projected(x, positional) for positional in (False, True)}
    permuted = {positional: projected(x[index], positional) for positional in (False, True)}
    runs = {}
    for _, causal, positional in VARIANTS:
        out, a = naive_attention(*plain[positional], mask if causal else None)
        out_p, a_p = naive_attention(*permuted[positional], mask if causal else None)
        runs[causal, positional] = (a, a_p, float((out_p - out[index]).abs().max()))
    return {"runs": runs, "max_abs_v": float(plain[False][2].abs().max())}  # PE-free: one tolerance for all


@dataclass(frozen=True)
class Variant:
    """One variant of the weights views: the tokens (n, d, seed), the permutation, the mask and positions, the
    precision. A cache key by its fields (key_of)."""

    n: int
    d: int
    perm: tuple[int, ...]
    causal: bool
    positional: bool
    seed: int
    precision: str


@cached(64)
def weights_views(v: Variant):
    """The three weight matrices side by side, and the equivariance error of this variant.

    Returns (df, summary): df has one row per cell of A, A' and P A P^T with columns matrix, query,
    key, weight, query_token, key_token (the original token sitting at that position); summary maps
    error, tolerance, max_abs_v, eps, ulps (error in units of eps max|V|), weights_gap
    (max |A' - P A P^T|), weights_tolerance, equivariant (error <= tolerance) and largest_weight (of the three).
    """
    n, d, perm, precision = v.n, v.d, v.perm, v.precision
    run = variant_runs(n, d, perm, v.seed, precision)
    (a, a_p, error), max_abs_v = run["runs"][v.causal, v.positional], run["max_abs_v"]
    shuffled = torch.tensor(perm)
    pap = a[shuffled][:, shuffled]  # (P A Pᵀ)_ij = A[perm i, perm j]: the product with P's ones and zeros, exactly
    rows, cols = (i.flatten() for i in torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij"))
    frames = []
    for name, m, token in (("A", a, torch.arange(n)), ("A′", a_p, shuffled), ("P A Pᵀ", pap, shuffled)):
        cells = {"query": rows.numpy(), "key": cols.numpy(), "weight": m.double().flatten().numpy()}
        tokens = {"query_token": token[rows].numpy(), "key_token": token[cols].numpy()}  # who sits at i and j
        frames.append(pd.DataFrame({"matrix": name} | cells | tokens))
    eps = torch.finfo(PRECISIONS[precision]).eps
    summary = {
        "error": error,
        "tolerance": tolerance(n, d, precision, max_abs_v),
        "max_abs_v": max_abs_v,
        "eps": eps,
        "ulps": error / (eps * max_abs_v),
        "weights_gap": float((a_p - pap).abs().max()),
        "weights_tolerance": tolerance(n, d, precision, 1.0),  # weights are at most 1
    }
    summary["equivariant"] = error <= summary["tolerance"]
    df = pd.concat(frames, ignore_index=True)
    summary["largest_weight"] = float(df.weight.max())  # the top of the three heatmaps' shared colour scale
    return df, summary


@cached(64)
def weights_matrix(v: Variant, matrix: str) -> pd.DataFrame:
    """The cells of one matrix of weights_views ("A", "A′" or "P A Pᵀ"), as its chart exports them."""
    df, _ = weights_views(v)
    return df[df.matrix == matrix]


@cached(64)
def variant_errors(n: int, d: int, perm: tuple[int, ...], seed: int, precision: str) -> pd.DataFrame:
    """max |Attention(P X) - P Attention(X)| for plain, causal, positional and both, ready for a log axis.

    Columns: variant, causal, positional, error, shown (error clipped to LOG_FLOOR), exact_zero,
    tolerance, verdict ("equivariant"/"broken").
    """
    run = variant_runs(n, d, perm, seed, precision)
    tol = tolerance(n, d, precision, run["max_abs_v"])
    rows = []
    for label, causal, positional in VARIANTS:
        error = run["runs"][causal, positional][2]
        rows.append(
            {
                "variant": label,
                "causal": causal,
                "positional": positional,
                "error": error,
                "shown": max(error, LOG_FLOOR),
                "exact_zero": error == 0.0,
                "tolerance": tol,
                "verdict": "equivariant" if error <= tol else "broken",
            }
        )
    return pd.DataFrame(rows)


@cached(64)
def shared_projection(n: int, d: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """The page's tokens scored with separate W_q, W_k and with one shared W = W_q, in float64.

    Returns (cells, stats): cells has matrix ("separate", "shared"), query, key, score (q_i.k_j / sqrt d) and
    weight (softmax of the row); stats holds, per matrix, the score asymmetry max |S - S^T| and the weight
    asymmetry max |A - A^T|, and kq_gap = max |softmax(S) - softmax(S^T)| for separate projections (Q K^T
    against K Q^T), and score_limit: the largest |score| (1 if all are 0), both heatmaps' colour scale.
    """
    x, w = _tokens_and_projections(n, d, seed, torch.float64)
    scores = {"separate": projected_scores(x, w[0], w[1]), "shared": projected_scores(x, w[0])}  # (n, n) each
    rows, cols = (i.flatten() for i in torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij"))
    frames, stats = [], {}
    for name, s in scores.items():
        a = masked_softmax(s)
        frames.append(
            pd.DataFrame(
                {"matrix": name, "query": rows.numpy(), "key": cols.numpy(), "score": s.flatten().numpy()}
                | {"weight": a.flatten().numpy()}
            )
        )
        stats[name] = {"scores": asymmetry(s), "weights": asymmetry(a)}
    separate = scores["separate"]
    stats["kq_gap"] = float((masked_softmax(separate) - masked_softmax(separate.T)).abs().max())
    cells = pd.concat(frames, ignore_index=True)
    stats["score_limit"] = float(cells.score.abs().max()) or 1.0  # both heatmaps' colour scale: -limit .. limit
    return cells, stats


@cached(64)
def variant_rows(n: int, d: int, perm: tuple[int, ...], seed: int, precision: str) -> pd.DataFrame:
    """variant_errors as its chart exports them: without `shown`, the error clipped for the log axis."""
    return variant_errors(n, d, perm, seed, precision).drop(columns="shown")


@cached(64)
def projection_matrix(n: int, d: int, seed: int, matrix: str) -> pd.DataFrame:
    """The cells of one matrix of shared_projection ("separate" or "shared"), as its chart exports them."""
    cells, _ = shared_projection(n, d, seed)
    return cells[cells.matrix == matrix]


PROJECTION_CLAIMS = ("shared_symmetric", "shared_equivalent", "qk_kq")


@cached(64)
def projection_claims(n: int, d: int, seed: int) -> dict[str, notes.Result]:
    """The notes' claims about shared projections judged on the page's own tokens: the cards quote its metrics."""
    _, stats = shared_projection(n, d, seed)
    facts = {
        "separate": stats["separate"]["scores"],
        "shared": stats["shared"]["scores"],
        "weights_gap": stats["kq_gap"],
        "one_sided": stats["separate"]["weights"],
    }
    return {key: notes.judge_projections(key, facts) for key in PROJECTION_CLAIMS}


@cached(64)
def plain_facts(errors: pd.DataFrame, perm: tuple[int, ...], max_abs_v: float, eps: float) -> dict:
    """What the variants' chart shows, for the sentences beside it: the plain error (in ulps of max|V| too), whether
    P is the identity, and how many of the variants with a mask or encodings break the symmetry, the largest error."""
    plain = errors.set_index("variant").loc["plain"]
    marked = errors[errors.causal | errors.positional]
    return {
        "plain": float(plain.error),
        "plain_ulps": float(plain.error) / (eps * max_abs_v),
        "identity": perm == tuple(range(len(perm))),
        "broken": int((marked.verdict == "broken").sum()),
        "marked": len(marked),
        "largest": float(marked.error.max()),
        "max_v": max_abs_v,
    }
