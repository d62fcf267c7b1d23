"""Permutation equivariance: Attention(PQ, PK, PV) = P Attention(Q, K, V) when nothing marks positions.

A causal mask or positional encodings tie outputs to positions and break the identity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import torch

from attn_core._checks import check_int, check_tensor

PERMUTATION_KINDS = ("identity", "random", "reverse", "cyclic")
MAX_TYPED_LENGTH = 4096


def check_permutation(perm: Sequence[int] | torch.Tensor, n: int | None = None) -> torch.Tensor:
    """Return `perm` as a long tensor after checking it is a permutation of 0..n-1."""
    perm = torch.as_tensor(perm)
    if perm.dim() != 1 or perm.is_floating_point() or perm.dtype == torch.bool:
        raise ValueError(f"perm must be a 1-D sequence of integers, got {perm!r}")
    size = perm.numel() if n is None else n
    if perm.numel() != size or not torch.equal(perm.sort().values, torch.arange(size)):
        raise ValueError(f"perm must contain each of 0..{size - 1} exactly once, got {perm.tolist()}")
    return perm.long()


def make_permutation(kind: str, n: int, *, seed: int = 0, shift: int = 1) -> torch.Tensor:
    """A permutation of 0..n-1: "identity", "random" (from the seed), "reverse" or "cyclic" (by `shift`)."""
    check_int("n", n, minimum=1)
    if kind not in PERMUTATION_KINDS:
        raise ValueError(f"kind must be one of {PERMUTATION_KINDS}, got {kind!r}")
    if kind == "random":
        return torch.randperm(n, generator=torch.Generator().manual_seed(check_int("seed", seed)))
    if kind == "reverse":
        return torch.arange(n - 1, -1, -1)
    if kind == "cyclic":
        if isinstance(shift, bool) or not isinstance(shift, int):
            raise ValueError(f"shift must be an integer, got {shift!r}")
        return torch.roll(torch.arange(n), -shift)
    return torch.arange(n)


def parse_permutation(text: str, n: int) -> torch.Tensor:
    """Parse a typed permutation such as "2,0,3,1" strictly: digits, commas and spaces only."""
    check_int("n", n, minimum=1, maximum=MAX_TYPED_LENGTH)
    if not isinstance(text, str) or len(text) > 8 * MAX_TYPED_LENGTH:
        raise ValueError("perm text must be a short string of comma-separated integers")
    if not re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*,?\s*", text):
        # name where it goes wrong, never echo the text: it may come from a link and end up on a page
        bad = next((i for i, c in enumerate(text, start=1) if not (c.isdecimal() or c in ", ")), None)
        where = f"character {bad} is not a digit, comma or space" if bad else "an entry is missing between commas"
        raise ValueError(f"perm text must be comma-separated integers like '2,0,3,1': {where}")
    values = [int(t) for t in text.replace(" ", "").strip(",").split(",")]
    return check_permutation(values, n)


def permutation_matrix(perm, *, dtype=torch.float64) -> torch.Tensor:
    """P with (P X)[i] = X[perm[i]], i.e. P[i, perm[i]] = 1."""
    perm = check_permutation(perm)
    n = perm.numel()
    p = torch.zeros(n, n, dtype=dtype)
    p[torch.arange(n), perm] = 1
    return p


def equivariance_error(f: Callable, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, perm) -> float:
    """max |f(PQ, PK, PV) - P f(Q, K, V)|, permuting the sequence axis (-2); f may return a tuple."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, x, min_dim=2)
    perm = check_permutation(perm, q.shape[-2])
    if k.shape[-2] != q.shape[-2] or v.shape[-2] != q.shape[-2]:
        raise ValueError("q, k, v must share the sequence length to permute them together")

    def out(*args):
        result = f(*args)
        return result[0] if isinstance(result, tuple) else result

    permuted = out(q[..., perm, :], k[..., perm, :], v[..., perm, :])
    return float((permuted - out(q, k, v)[..., perm, :]).abs().max())
