"""Cost: how the weights grow with n, and the tiled path's exact output."""

from __future__ import annotations

import torch

from attn_core.naive import naive_attention
from attn_core.tiled import tiled_attention
from explorer.notes.registry import Result, claim
from explorer.notes.rules import identity
from explorer.notes.samples import randn, seeded


def _quadratic(seed: int) -> Result:
    cells = {}
    for n in (64, 128):
        _, w = naive_attention(*(torch.zeros(n, 2) for _ in range(3)))
        cells[n] = w.numel()
    facts = {"small": cells[64], "large": cells[128], "ratio": cells[128] / cells[64], "form": "score_cells"}
    return Result("", f"n = 64: {cells[64]:,} weights; n = 128: {cells[128]:,} (×{facts['ratio']:g})", "", facts)


@claim("linear_title", "000")
def _linear_title(seed: int) -> Result:
    r = _quadratic(seed)
    return Result("linear", r.computed, "wrong" if r.facts["ratio"] == 4 else "right", r.facts)


@claim("memory_quadruples", "000", "002", "003", "004")
def _memory_quadruples(seed: int) -> Result:
    r = _quadratic(seed)
    return Result("2n ⇒ 4× memory", r.computed, "right" if r.facts["ratio"] == 4 else "wrong", r.facts)


@claim("flash_exact", "002")
def _flash_exact(seed: int) -> Result:
    gen = seeded(seed, 27)
    q, k, v = (randn(gen, 256, 16) for _ in range(3))
    error = float((tiled_attention(q, k, v, block_q=32, block_k=32) - naive_attention(q, k, v)[0]).abs().max())
    computed = f"n = 256: max |tiled − naive| = {error:.1e}; largest score block 32×32 (naive: 256×256)"
    return Result("exact output, memory O(n)", computed, identity(error, scale=10.0), {"error": error})
