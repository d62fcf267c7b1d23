"""FlashAttention's tiling in plain PyTorch: exact attention without the n_q x n_k matrix.

For each query block, walk the key/value blocks keeping, per query row,
    m  = running max of the logits seen so far
    l  = running sum of exp(logit - m)
    acc = running sum of exp(logit - m) * v
and when a new tile raises the max from m to m', rescale the old state by exp(m - m').
After the last tile, output = acc / l. Only one block_q x block_k tile of logits exists at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from attn_core._checks import (
    check_finite,
    check_int,
    check_logit_range,
    check_mask,
    check_positive,
    check_qkv,
    resolve_scale,
)
from attn_core.budget import check_budget, tensor_bytes
from attn_core.naive import softmax_dtype


@dataclass
class TileStep:
    """State of one query block after one key/value tile (all tensors are copies)."""

    key_start: int
    key_end: int
    skipped: bool  # True: the causal mask hides the whole tile, nothing was computed
    logits: torch.Tensor | None  # (..., block_q, block_k) after masking (-inf = hidden)
    row_max: torch.Tensor  # m, (..., block_q)
    row_sum: torch.Tensor  # l, (..., block_q)
    accumulator: torch.Tensor  # acc (unnormalised), (..., block_q, d_v)

    @property
    def partial_output(self) -> torch.Tensor:
        """acc / l: the attention output over the keys seen so far (0 where none is allowed)."""
        return _normalise(self.accumulator, self.row_sum)


@dataclass
class TiledTrace:
    """Every tile step of one query block, for the walkthrough page."""

    query_start: int
    query_end: int
    block_k: int
    steps: list[TileStep] = field(default_factory=list)

    @property
    def output(self) -> torch.Tensor:
        return self.steps[-1].partial_output

    @property
    def computed_tiles(self) -> int:
        return sum(not s.skipped for s in self.steps)


def _normalise(acc: torch.Tensor, row_sum: torch.Tensor) -> torch.Tensor:
    safe = torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
    return acc / safe.unsqueeze(-1)


def tiled_working_bytes(batch: int, n_q: int, n_k: int, d_k: int, d_v: int, dtype: torch.dtype, block_q, block_k):
    """Bytes tiled_attention allocates beyond its inputs without a gradient (an upper bound, checked by tests).

    batch: the product of the leading dims. Per (batch x head): the scaled q, the output blocks, their
    concatenation and the cast to the output dtype (n x d each), fp32 copies of half k and v, three
    block_q x block_k tiles and the running state of one query block.
    """
    f, io = softmax_dtype(dtype).itemsize, dtype.itemsize
    bq, bk = min(block_q, n_q), min(block_k, n_k)
    half = f != io
    rows = n_q * d_k * f * (2 if half else 1) + n_q * d_v * (2 * f + (io if half else 0))
    casts = n_k * (d_k + d_v) * f if half else 0
    block = 3 * bq * bk * f + 3 * bq * d_v * f + 6 * bq * f
    return batch * (rows + casts + block)


def _prepare(q, k, v, mask, scale, temperature, block_q, block_k):
    """Validate, broadcast leading dims (views, no copies) and fold scale/temperature into q."""
    n_q, n_k, d_k, _ = check_qkv(q, k, v)
    scale = resolve_scale(scale, d_k)
    temperature = check_positive("temperature", temperature)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(name, x)
    check_logit_range(q, k, scale / temperature, softmax_dtype(q.dtype))
    check_int("block_q", block_q, minimum=1)
    check_int("block_k", block_k, minimum=1)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    tile = (*batch, min(block_q, n_q), min(block_k, n_k))
    check_budget(
        tensor_bytes(tile, softmax_dtype(q.dtype), 2),  # the logits tile and its exponentials
        f"a {tile[-2]} x {tile[-1]} tile of scores",
        "Use smaller block_q and block_k.",
    )
    mask = check_mask(mask, torch.Size((*batch, n_q, n_k)), q.device)
    if mask is not None:
        mask = mask.expand(*batch, n_q, n_k)  # a view: slicing it never materialises n_q x n_k
    dtype = softmax_dtype(q.dtype)
    q = (q.to(dtype) * (scale / temperature)).expand(*batch, n_q, d_k)
    k = k.to(dtype).expand(*batch, n_k, d_k)
    v = v.to(dtype).expand(*batch, n_k, v.shape[-1])
    return q, k, v, mask


def _tile_steps(q_blk, k, v, mask, q0, causal, block_k, inplace=False) -> Iterator[tuple]:
    """Yield (k0, k1, masked logits or None if skipped, m, l, acc) after each key tile.

    `inplace=True` (only when no gradient is needed) updates the state in place: same numbers,
    fewer allocations; the yielded tensors are then overwritten by the next step.
    """
    n_k = k.shape[-2]
    q1 = q0 + q_blk.shape[-2]
    m = torch.full(q_blk.shape[:-1], float("-inf"), dtype=q_blk.dtype, device=q_blk.device)  # (..., bq)
    l = torch.zeros_like(m)  # (..., bq)
    acc = torch.zeros(*q_blk.shape[:-1], v.shape[-1], dtype=q_blk.dtype, device=q_blk.device)  # (..., bq, d_v)
    for k0 in range(0, n_k, block_k):
        k1 = min(k0 + block_k, n_k)
        if causal and k0 > q1 - 1:  # every key of the tile lies after every query: hidden
            yield k0, k1, None, m, l, acc
            continue
        s = q_blk @ k[..., k0:k1, :].transpose(-2, -1)  # (..., bq, bk): the only logits held
        if mask is not None:
            s = s.masked_fill(~mask[..., q0:q1, k0:k1], float("-inf"))
        if causal and k1 - 1 > q0:  # the diagonal crosses this tile
            rows = torch.arange(q0, q1, device=s.device)[:, None]
            cols = torch.arange(k0, k1, device=s.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1).detach())  # (..., bq)
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))  # rows with no key yet
        if inplace:
            alpha = m.sub_(m_safe).exp_()
            p = s.sub_(m_safe.unsqueeze(-1)).exp_()
            l.mul_(alpha).add_(p.sum(dim=-1))
            acc.mul_(alpha.unsqueeze(-1)).add_(p @ v[..., k0:k1, :])
        else:
            alpha = torch.exp(m - m_safe)  # rescales the old state; 0 while m = -inf
            p = torch.exp(s - m_safe.unsqueeze(-1))  # (..., bq, bk)
            l = alpha * l + p.sum(dim=-1)
            acc = alpha.unsqueeze(-1) * acc + p @ v[..., k0:k1, :]  # (..., bq, d_v)
        m = m_new
        yield k0, k1, s, m, l, acc


def tiled_attention(
    q, k, v, mask=None, *, scale=None, temperature=1.0, causal=False, block_q=64, block_k=64
) -> torch.Tensor:
    """Exact attention output (..., n_q, d_v), computed one block_q x block_k tile at a time.

    `causal=True` applies a top-left causal mask (key j visible to query i iff j <= i) and skips
    the tiles it hides entirely; `mask` (bool, True = may attend) may be given as well.
    """
    out_dtype = v.dtype if isinstance(v, torch.Tensor) else None
    q, k, v, mask = _prepare(q, k, v, mask, scale, temperature, block_q, block_k)
    inplace = not (torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v)))
    blocks = []
    for q0 in range(0, q.shape[-2], block_q):
        q_blk = q[..., q0 : q0 + block_q, :]  # (..., bq, d_k)
        *_, l, acc = _last(_tile_steps(q_blk, k, v, mask, q0, causal, block_k, inplace))
        blocks.append(_normalise(acc, l))
    return torch.cat(blocks, dim=-2).to(out_dtype)  # (..., n_q, d_v)


def _last(steps: Iterator[tuple]) -> tuple:
    return deque(steps, maxlen=1).pop()  # run the generator to its end, keep only the final state


def tiled_attention_trace(
    q, k, v, mask=None, *, scale=None, temperature=1.0, causal=False, block_q=64, block_k=64, query_block=0
) -> TiledTrace:
    """Record m, l and the partial output after every key tile for query block `query_block`."""
    q, k, v, mask = _prepare(q, k, v, mask, scale, temperature, block_q, block_k)
    n_blocks = -(-q.shape[-2] // block_q)
    check_int("query_block", query_block, minimum=0, maximum=n_blocks - 1)
    q0 = query_block * block_q
    q_blk = q[..., q0 : q0 + block_q, :]
    trace = TiledTrace(query_start=q0, query_end=q0 + q_blk.shape[-2], block_k=block_k)
    for k0, k1, s, m, l, acc in _tile_steps(q_blk, k, v, mask, q0, causal, block_k):
        logits = None if s is None else s.detach().clone()
        trace.steps.append(
            TileStep(k0, k1, s is None, logits, m.detach().clone(), l.detach().clone(), acc.detach().clone())
        )
    return trace
