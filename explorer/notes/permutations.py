"""Permutations: what reordering the tokens does to attention, and the notes' permutation matrices."""

from __future__ import annotations

import math

import torch

from attn_core.naive import naive_attention
from attn_core.symmetry import equivariance_error, permutation_matrix
from explorer.notes.registry import Result, claim, register
from explorer.notes.rules import identity, max_error, upper, vec
from explorer.notes.samples import randn, seeded

NOTES_A = ((1, 2, 3), (4, 5, 6), (7, 8, 9))  # the 3 x 3 matrix of the permutation example


def _self_attention_tokens(seed: int, n: int = 6, d: int = 4):
    gen = seeded(seed, 17)
    return randn(gen, n, d), randn(gen, 3, d, d) / math.sqrt(d)


def _attend(x, w):
    return naive_attention(x @ w[0], x @ w[1], x @ w[2])


@claim("invariance", "000")
def _invariance(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    perm = torch.tensor([2, 0, 5, 3, 1, 4])
    moved = float((_attend(x[perm], w)[0] - _attend(x, w)[0]).abs().max())
    return Result(
        "Attention(PX) = Attention(X)",
        f"max |Attention(PX) − Attention(X)| = {moved:.3g}",
        "wrong",
        {"moved": moved, "moved_bound": upper(moved)},
    )


@claim("equivariance", "000")
def _equivariance(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    error = equivariance_error(
        lambda q, k, v: naive_attention(q, k, v)[0], x @ w[0], x @ w[1], x @ w[2], [2, 0, 5, 3, 1, 4]
    )
    return Result(
        "Attention(PQ, PK, PV) = P·Attention(Q, K, V)", f"max error {error:.1e}", identity(error), max_error(error)
    )


@claim("pap", "000")
def _pap(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    perm = [2, 0, 5, 3, 1, 4]
    p = permutation_matrix(perm)
    error = float((_attend(x[perm], w)[1] - p @ _attend(x, w)[1] @ p.T).abs().max())
    return Result("A′ = P A Pᵀ", f"max |A′ − P A Pᵀ| = {error:.1e}", identity(error), {})


@claim("verify_code", "000")
def _verify_code(seed: int) -> Result:
    """The notes' own check: seq_len 4, d_model 6, perm [2, 0, 3, 1], float32, difference < 1e-6."""
    x = torch.randn(1, 4, 6, generator=seeded(seed, 18))  # float32, as torch.randn gives
    error = equivariance_error(lambda q, k, v: naive_attention(q, k, v)[0], x, x, x, [2, 0, 3, 1])
    return Result("max difference < 1e-6", f"{error:.1e}", "right" if error < 1e-6 else "wrong", {})


def _permute(side: str):
    stated = (7, 8, 9, 1, 2, 3, 4, 5, 6) if side == "rows" else (2, 3, 1, 5, 6, 4, 8, 9, 7)

    def check(seed: int) -> Result:
        p, a = permutation_matrix([2, 0, 1]), torch.tensor(NOTES_A, dtype=torch.float64)
        true = (p @ a if side == "rows" else a @ p).reshape(-1).tolist()
        verdict = "right" if true == list(stated) else "wrong"
        return Result(vec(stated, "g"), vec(true, "g"), verdict, {})

    return check


register("permute_rows", "000", check=_permute("rows"))
register("permute_cols", "000", check=_permute("cols"))


@claim("perm_orthogonal", "000")
def _perm_orthogonal(seed: int) -> Result:
    p = permutation_matrix([2, 0, 1])
    eye = torch.eye(3, dtype=torch.float64)
    error = max(float((p.T @ p - eye).abs().max()), float((p @ p.T - eye).abs().max()))
    error = max(error, float((torch.linalg.inv(p) - p.T).abs().max()))
    return Result("PᵀP = PPᵀ = I, P⁻¹ = Pᵀ", f"max error {error:.1e}", identity(error), max_error(error))


@claim("perm_det", "000")
def _perm_det(seed: int) -> Result:
    cycle, swap = (float(torch.linalg.det(permutation_matrix(p))) for p in ([2, 0, 1], [2, 1, 0]))
    verdict = "right" if round(cycle) == 1 and round(swap) == -1 else "wrong"
    return Result("det P = ±1 (+1 even)", f"det P[2,0,1] = {cycle:g}, det P[2,1,0] = {swap:g}", verdict, {})


@claim("cycle_p3", "000")
def _cycle_p3(seed: int) -> Result:
    p3 = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=torch.float64)
    true = (p3 @ torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).tolist()
    return Result("P₃ [1, 2, 3] = [2, 3, 1]", vec(true, "g"), "right" if true == [2, 3, 1] else "wrong", {})
