"""FlashAttention's tiling in plain PyTorch: exact attention without the n_q x n_k matrix.

For each query block, walk the key/value blocks keeping, per query row,
    m  = running max of the logits seen so far
    l  = running sum of exp(logit - m)
    acc = running sum of exp(logit - m) * v
and when a new tile raises the max from m to m', rescale the old state by exp(m - m').
After the last tile, output = acc / l. Only one block_q x block_k tile of logits exists at a time.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from attn_core._checks import (
    _NORM_CHUNK_ELEMENTS,
    broadcast_shape,
    check_attention,
    check_int,
    check_mask,
    softmax_dtype,
)
from attn_core.budget import check_budget, tensor_bytes

# (block_q, block_k) by (device type, causal): the fastest measured with tools/tile_sweep.py on a 2-core CPU
# (benchmarks/cpu_attention.md): within noise of the best at n = 512 ... 8192, H = 4 or 8, d = 64 or 128.
# Causal prefers narrower key tiles: a tile that the diagonal crosses is computed in full.
_DEFAULT_BLOCKS = {("cpu", False): (256, 512), ("cpu", True): (256, 256)}


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


def tiled_working_bytes(*shape, **flags) -> int:
    """Bytes tiled_attention allocates beyond q, k, v and a mask without a gradient, for inputs of one batch
    shape (an upper bound, checked by tests); its arguments are tiled_working_parts'.

    Per batch entry: the output (n x d; for half inputs also fp32 copies of q, k, v and the output's cast
    back), one block_q x block_k logits tile, a block_q x d_v accumulator and four rows of state, and the
    bool tiles a mask (masked) or the causal diagonal (causal) needs: both counted unless told there are none.
    Before all that, and freed before it starts, the check of the logits' range holds q or k in float64 a
    slice of at most _NORM_CHUNK_ELEMENTS at a time, and its row norms.
    """
    parts = tiled_working_parts(*shape, **flags)
    return max(parts["check"], parts["arrays"] + parts["tiles"]) + parts["diagonal"]


def tiled_working_parts(
    batch: int,
    n_q: int,
    n_k: int,
    d_k: int,
    d_v: int,
    dtype: torch.dtype,
    block_q,
    block_k,
    *,
    masked: bool = True,
    causal: bool = True,
) -> dict[str, int]:
    """tiled_working_bytes in its parts, bytes each: "check" (the range check, alone before the rest), "arrays"
    (what grows with n: the output, for half inputs fp32 copies of q, k, v), "tiles" (the fixed tiles and
    their row state) and "diagonal" (the causal diagonal's tile). The working memory is
    max(check, arrays + tiles) + diagonal: the part that holds the peak tells how it grows with n.
    batch: the product of the leading dims."""
    f, io = softmax_dtype(dtype).itemsize, dtype.itemsize
    bq, bk = min(block_q, n_q), min(block_k, n_k)
    half = f != io
    rows = n_q * d_v * (f + (io if half else 0))  # the output (and its cast back)
    casts = (n_q * d_k + n_k * (d_k + d_v)) * f if half else 0  # fp32 copies of q, k, v
    tile = bq * (bk + d_v + 4) * f + (bq * bk if masked else 0)  # + the negated mask tile
    n = max(n_q, n_k)
    sliced = min(batch * n * d_k, max(_NORM_CHUNK_ELEMENTS, batch * d_k))  # a slice holds at least one row
    check = sliced * (8 if io < 8 else 0) + batch * n * 8
    return {
        "check": check,
        "arrays": batch * (rows + casts),
        "tiles": batch * tile,
        "diagonal": bq * bk if causal else 0,
    }


# One signature for both: help() and inspect show tiled_working_parts' parameters on tiled_working_bytes too.
tiled_working_bytes.__signature__ = inspect.signature(tiled_working_parts).replace(return_annotation="int")


def default_blocks(n_q: int, n_k: int, device="cpu", causal: bool = False) -> tuple[int, int]:
    """(block_q, block_k) tiled_attention uses when none are given: the fastest measured for the device
    and mask, cut to the lengths. A GPU gets the CPU's sizes: none was measured there."""
    check_int("n_q", n_q, minimum=1)
    check_int("n_k", n_k, minimum=1)
    causal = bool(causal)
    block_q, block_k = _DEFAULT_BLOCKS.get((torch.device(device).type, causal), _DEFAULT_BLOCKS["cpu", causal])
    return min(block_q, n_q), min(block_k, n_k)


def _blocks(q, k, block_q, block_k, causal) -> tuple:
    """The given tile sizes (checked later by _prepare), default_blocks for the ones left as None."""
    if block_q is not None and block_k is not None:
        return block_q, block_k
    sized = all(isinstance(x, torch.Tensor) and x.dim() >= 2 for x in (q, k))  # else _prepare names the argument
    dq, dk = default_blocks(max(q.shape[-2], 1), max(k.shape[-2], 1), q.device, causal) if sized else (1, 1)
    return (dq if block_q is None else block_q), (dk if block_k is None else block_k)


def _prepare(q, k, v, mask, scale, temperature, block_q, block_k):
    """Validate, cast to the softmax dtype and broadcast leading dims (views, no copies).

    Returns q, k, v, mask and the factor scale / temperature that multiplies q k^T."""
    n_q, n_k, d_k, scale, temperature = check_attention(q, k, v, scale, temperature)
    check_int("block_q", block_q, minimum=1)
    check_int("block_k", block_k, minimum=1)
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2])
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
    q = q.to(dtype).expand(*batch, n_q, d_k)
    k = k.to(dtype).expand(*batch, n_k, d_k)
    v = v.to(dtype).expand(*batch, n_k, v.shape[-1])
    return q, k, v, mask, scale / temperature


def _tile_steps(q_blk, k, v, mask, q0, causal, block_k) -> Iterator[tuple]:
    """Yield (k0, k1, masked logits or None if skipped, m, l, acc) after each key tile (the readable path:
    every step makes new tensors, so autograd can follow and the walkthrough can keep each state)."""
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
            s = s.masked_fill(_above_diagonal(q0, q1, k0, k1, s.device), float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1).detach())  # (..., bq)
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))  # rows with no key yet
        alpha = torch.exp(m - m_safe)  # rescales the old state; 0 while m = -inf
        p = torch.exp(s - m_safe.unsqueeze(-1))  # (..., bq, bk)
        l = alpha * l + p.sum(dim=-1)
        acc = alpha.unsqueeze(-1) * acc + p @ v[..., k0:k1, :]  # (..., bq, d_v)
        m = m_new
        yield k0, k1, s, m, l, acc


def _above_diagonal(q0: int, q1: int, k0: int, k1: int, device) -> torch.Tensor:
    """(q1 - q0, k1 - k0) bool, True where key k0 + j lies after query q0 + i: what the causal mask hides."""
    return torch.ones(q1 - q0, k1 - k0, dtype=torch.bool, device=device).triu_(q0 - k0 + 1)


def _forward_in_place(q, k, v, mask, factor: float, causal: bool, block_q: int, block_k: int) -> torch.Tensor:
    """_tile_steps' arithmetic without autograd, in buffers made once per call (no allocation per tile).

    q, k, v: (..., n, d) of one batch shape; the first GEMM applies factor = scale / temperature. The
    logits tile (turned into exp(logits - m) in place), the accumulator and the row state are buffers,
    their edge tiles contiguous views of their start; m starts at the dtype's lowest value instead of
    -inf, so rows with no key yet need no special case (exp(lowest - m) = 0), and l = 0 only in rows with
    no key at all (otherwise the maximum contributes exp(0) = 1), whose output stays 0.
    """
    *batch, n_q, d_k = q.shape
    n_k, d_v = k.shape[-2], v.shape[-1]
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))  # (BH, n, d): views unless broadcast
    bh, bq, bk = q3.shape[0], min(block_q, n_q), min(block_k, n_k)
    out = torch.empty(bh, n_q, d_v, dtype=q.dtype, device=q.device)
    sizes = [bh * bq * bk, bh * bq * d_v] + [bh * bq] * 4  # logits tile, acc, m, m_new, l, alpha
    flat = torch.empty(sum(sizes), dtype=q.dtype, device=q.device).split(sizes)
    lowest = torch.finfo(q.dtype).min
    for q0 in range(0, n_q, bq):
        q1 = min(q0 + bq, n_q)
        r = q1 - q0
        m, m_new, l, alpha = (x[: bh * r].view(bh, r) for x in flat[2:])  # (BH, r) each
        m.fill_(lowest)
        l.zero_()
        acc = flat[1][: bh * r * d_v].view(bh, r, d_v).zero_()  # contiguous: baddbmm_ needs no copy
        for k0 in range(0, min(n_k, q1) if causal else n_k, bk):  # causal: tiles right of the diagonal skipped
            k1 = min(k0 + bk, n_k)
            s = flat[0][: bh * r * (k1 - k0)].view(bh, r, k1 - k0)  # (BH, r, c)
            # q k^T * factor, the only logits held (beta = 0: the buffer's old values are ignored)
            torch.baddbmm(s, q3[:, q0:q1], k3[:, k0:k1].transpose(1, 2), beta=0, alpha=factor, out=s)
            if mask is not None:
                s.view(*batch, r, k1 - k0).masked_fill_(~mask[..., q0:q1, k0:k1], float("-inf"))
            if causal and k1 - 1 > q0:
                s.masked_fill_(_above_diagonal(q0, q1, k0, k1, s.device), float("-inf"))
            torch.maximum(m, torch.amax(s, dim=-1, out=m_new), out=m_new)
            torch.sub(m, m_new, out=alpha).exp_()  # rescales the old state
            p = torch.sub(s, m_new.unsqueeze(-1), out=s).exp_()  # (BH, r, c), in place of the logits
            l.mul_(alpha).add_(torch.sum(p, dim=-1, out=m))  # m's old values are no longer needed
            acc.mul_(alpha.unsqueeze(-1)).baddbmm_(p, v3[:, k0:k1])  # acc = alpha acc + p v
            m, m_new = m_new, m
        torch.div(acc, l.clamp_(min=1).unsqueeze(-1), out=out[:, q0:q1])
    return out.view(*batch, n_q, d_v)


def tiled_attention(
    q, k, v, mask=None, *, scale=None, temperature=1.0, causal=False, block_q=None, block_k=None
) -> torch.Tensor:
    """Exact attention output (..., n_q, d_v), computed one block_q x block_k tile at a time.

    `causal=True` applies a top-left causal mask (key j visible to query i iff j <= i) and skips
    the tiles it hides entirely; `mask` (bool, True = may attend) may be given as well.
    block_q, block_k: None picks default_blocks(n_q, n_k, device, causal), the fastest measured.
    """
    out_dtype = v.dtype if isinstance(v, torch.Tensor) else None
    block_q, block_k = _blocks(q, k, block_q, block_k, causal)
    q, k, v, mask, factor = _prepare(q, k, v, mask, scale, temperature, block_q, block_k)
    if not (torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))):
        return _forward_in_place(q, k, v, mask, factor, causal, block_q, block_k).to(out_dtype)
    q = q * factor
    blocks = []
    for q0 in range(0, q.shape[-2], block_q):
        q_blk = q[..., q0 : q0 + block_q, :]  # (..., bq, d_k)
        *_, l, acc = _last(_tile_steps(q_blk, k, v, mask, q0, causal, block_k))
        blocks.append(_normalise(acc, l))
    return torch.cat(blocks, dim=-2).to(out_dtype)  # (..., n_q, d_v)


def _last(steps: Iterator[tuple]) -> tuple:
    return deque(steps, maxlen=1).pop()  # run the generator to its end, keep only the final state


def tiled_attention_trace(
    q, k, v, mask=None, *, scale=None, temperature=1.0, causal=False, block_q=64, block_k=64, query_block=0
) -> TiledTrace:
    """Record m, l and the partial output after every key tile for query block `query_block`."""
    q, k, v, mask, factor = _prepare(q, k, v, mask, scale, temperature, block_q, block_k)
    q = q * factor
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
