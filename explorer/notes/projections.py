"""Separate W_Q, W_K against one shared W: which of the notes' statements about them hold."""

from __future__ import annotations

import math

from attn_core.bilinear import asymmetry, gram, projected_scores
from attn_core.naive import masked_softmax, naive_attention
from explorer.notes.registry import Result, claim
from explorer.notes.rules import identity, max_error, upper
from explorer.notes.samples import qkv, randn, seeded


def _projections(seed: int, n: int = 6, d_model: int = 8, d_k: int = 4):
    gen = seeded(seed, 24)
    return (
        randn(gen, n, d_model),
        randn(gen, d_model, d_k) / math.sqrt(d_model),
        randn(gen, d_model, d_k) / math.sqrt(d_model),
    )


def bilinear_facts(seed: int) -> dict:
    """max |S - S^T| with separate and with shared projections, and how far softmax(QK^T), softmax(KQ^T) differ."""
    x, w_q, w_k = _projections(seed)
    s = projected_scores(x, w_q, w_k)
    a, a_t = masked_softmax(s), masked_softmax(s.T)
    return {
        "separate": asymmetry(s),
        "shared": asymmetry(projected_scores(x, w_q)),
        "weights_gap": float((a - a_t).abs().max()),
        "one_sided": float((a - a.T).abs().max()),
        "quadratic": float((s - x @ (w_q @ w_k.T) @ x.T / math.sqrt(w_q.shape[1])).abs().max()),
    }


@claim("qk_kq", "001")
def _qk_kq(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    computed = f"KQᵀ = (QKᵀ)ᵀ; max |softmax(QKᵀ) − softmax(KQᵀ)| = {f['weights_gap']:.3f}"
    facts = f | {"weights_gap_bound": upper(f["weights_gap"])}  # f may be shared: a new dict
    return Result("QKᵀ ≈ KQᵀ", computed, "inexact" if f["weights_gap"] > 1e-6 else "right", facts)


@claim("quadratic_form", "001")
def _quadratic_form(seed: int) -> Result:
    f = bilinear_facts(seed)
    error = f["quadratic"]
    return Result("XW_q(XW_k)ᵀ = X(W_qW_kᵀ)Xᵀ", f"max error {error:.1e}", identity(error), max_error(error))


@claim("shared_symmetric", "001")
def _shared_symmetric(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    return Result(
        "W Wᵀ ⇒ S = Sᵀ", f"max |S − Sᵀ| = {f['shared']:g} (shared W)", "right" if f["shared"] == 0 else "wrong", f
    )


@claim("shared_equivalent", "001")
def _shared_equivalent(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    computed = f"max |S − Sᵀ|: separate {f['separate']:.3f}, shared {f['shared']:g}"
    return Result("W_Q, W_K ≡ one W", computed, "wrong" if f["separate"] > 1e-9 else "right", f)


def judge_projections(key: str, facts: dict) -> Result:
    """A claim about separate and shared projections judged on a page's own tokens (facts as bilinear_facts gives
    them), so its card quotes the numbers beside it and not the claims table's fixed example."""
    judges = {"qk_kq": _qk_kq, "shared_symmetric": _shared_symmetric, "shared_equivalent": _shared_equivalent}
    if key not in judges:
        raise ValueError(f"key must be one of {tuple(judges)}, got {key!r}")
    return judges[key](0, facts)


@claim("self_attention_qkv", "000")
def _self_attention_q_k_v(seed: int) -> Result:
    x, _, _ = _projections(seed)
    f = bilinear_facts(seed)
    same = asymmetry(gram(x))
    computed = f"Q = K = X: max |S − Sᵀ| = {same:g}; with W_Q, W_K: {f['separate']:.3f}"
    return Result("Q = K = V = X", computed, "inexact", f | {"same": same})


@claim("same_dimension", "001")
def _same_dimension(seed: int) -> Result:
    q, k, v, _ = qkv(seed)
    changed = v.clone()
    changed[:, 1:] += randn(seeded(seed, 23), v.shape[0], v.shape[1] - 1)  # every column but the first
    moved = float((naive_attention(q, k, changed)[0][:, 0] - naive_attention(q, k, v)[0][:, 0]).abs().max())
    return Result(
        "Zᵢ,c uses only V·,c",
        f"change V's other columns: Z·,1 moves {moved:g}",
        "right" if moved == 0 else "wrong",
        {"moved": moved},
    )
