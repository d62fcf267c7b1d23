"""Tables for "FlashAttention, tile by tile": one query block's walk through the K/V tiles, and HBM traffic.

Slow-memory traffic model. Counted in matrix elements moved between HBM (the GPU's large, slow memory) and
SRAM (the small on-chip memory next to the arithmetic units); forward pass, one head, n queries and n keys,
head width d for queries, keys and values.

  naive: three kernels, each reads its inputs from HBM and writes its result back
    S = Q K^T       reads Q, K        2nd         writes S   n^2
    P = softmax(S)  reads S           n^2         writes P   n^2
    O = P V         reads P, V        n^2 + nd    writes O   nd
    => reads 3nd + 2n^2, writes 2n^2 + nd. A causal mask does not shrink S or P: they are stored in full.

  tiled: one fused kernel; the outer loop takes query blocks of B_q rows, the inner loop streams key tiles
    of B_k keys. Every query block is read once (nd in all); for each query block the K and V tiles it
    needs are read (2nd per block when none is skipped, T_q = ceil(n / B_q) blocks); O is written once (nd).
    S, P, the running max m, the running sum l and the accumulator never leave SRAM.
    => reads nd + 2nd T_q, writes nd. With causal, a tile whose every key lies after every query of its
    block is skipped, so query block b only reads keys 0 .. (ceil(q_end_b / B_k) B_k, capped at n).

  Not counted: the n log-sum-exp values FlashAttention keeps for the backward pass, and traffic inside SRAM.
  So naive/tiled -> 4n^2 / (2n^2 d / B_q) = 2 B_q / d for large n: the bigger the query tile, the bigger the saving.
  Causal: block b reads about (b + 1) B_q keys, sum_b (b + 1) B_q ~ n^2 / (2 B_q): tiled -> n^2 d / B_q while naive
  still stores all of S and P, so naive/tiled -> 4 B_q / d, twice the saving (traffic_ratio_limit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attn_core._checks import check_int
from attn_core.masks import causal_mask
from attn_core.naive import naive_attention
from attn_core.tiled import tiled_attention, tiled_attention_trace
from explorer.ui.cache import cached

STATUSES = ("done", "current", "to do", "skipped", "other block")  # "skipped": hidden by the causal mask


def n_tiles(n: int, block: int) -> int:
    """ceil(n / block): how many tiles of `block` positions cover n positions (the last may be ragged)."""
    check_int("n", n, minimum=1)
    check_int("block", block, minimum=1)
    return -(-n // block)


def computed_tiles(n: int, block_q: int, block_k: int, causal: bool) -> list[int]:
    """Key tiles computed by each query block: all of them, or with causal those up to the diagonal.

    Query block b holds rows q0 .. q1-1 with q1 = min((b+1) B_q, n); key tile j starts at j B_k and is
    skipped iff j B_k > q1 - 1, so ceil(q1 / B_k) tiles remain.
    """
    t_k = n_tiles(n, block_k)
    ends = [min((b + 1) * block_q, n) for b in range(n_tiles(n, block_q))]
    return [n_tiles(q1, block_k) if causal else t_k for q1 in ends]


def causal_skipped_tiles(n: int, block_q: int, block_k: int) -> int:
    """Tiles of the n x n grid that a causal mask hides entirely, so the tiled loop never computes them."""
    return n_tiles(n, block_q) * n_tiles(n, block_k) - sum(computed_tiles(n, block_q, block_k, causal=True))


def hbm_traffic(n: int, d: int, block_q: int, block_k: int, causal: bool = False) -> dict[str, int]:
    """HBM reads and writes, in elements, of naive and tiled attention under the model in the module docstring."""
    check_int("d", d, minimum=1)
    naive_reads = 2 * n * d + n * n + (n * n + n * d)  # Q, K | S | P, V
    naive_writes = n * n + n * n + n * d  # S | P | O
    keys_read = sum(min(t * block_k, n) for t in computed_tiles(n, block_q, block_k, causal))
    tiled_reads = n * d + 2 * d * keys_read  # Q once | K and V tiles, once per query block that needs them
    tiled_writes = n * d  # O
    return {
        "naive_reads": naive_reads,
        "naive_writes": naive_writes,
        "tiled_reads": tiled_reads,
        "tiled_writes": tiled_writes,
    }


def traffic_ratio_limit(d: int, block_q: int, causal: bool) -> float:
    """naive/tiled HBM traffic as n grows (module docstring): 2 B_q / d, or 4 B_q / d with causal."""
    check_int("d", d, minimum=1)
    check_int("block_q", block_q, minimum=1)
    return (4 if causal else 2) * block_q / d


@cached(32)
def hbm_sweep(d: int, block_q: int, block_k: int, causal: bool, n_values: tuple[int, ...]) -> pd.DataFrame:
    """HBM traffic against n. Columns: n, algorithm ("naive"/"tiled"), reads, writes, total (elements)."""
    rows = []
    for n in n_values:
        t = hbm_traffic(n, d, block_q, block_k, causal)
        for algo in ("naive", "tiled"):
            reads, writes = t[f"{algo}_reads"], t[f"{algo}_writes"]
            rows.append({"n": n, "algorithm": algo, "reads": reads, "writes": writes, "total": reads + writes})
    return pd.DataFrame(rows)


def sram_working_set(d: int, block_q: int, block_k: int) -> int:
    """Elements one tile step holds on chip: Q block, K and V tiles, the S/P tile, the accumulator, m and l."""
    return block_q * d + 2 * block_k * d + block_q * block_k + block_q * d + 2 * block_q


@cached(128)
def tile_grid(n: int, block_q: int, block_k: int, causal: bool, query_block: int, step: int) -> pd.DataFrame:
    """Every (query block, key tile) of the n x n grid with its status at `step` of `query_block`'s walk.

    Columns: q_block, k_tile, q_start, q_end, k_start, k_end (end exclusive), status (one of STATUSES).
    """
    counts = computed_tiles(n, block_q, block_k, causal)
    check_int("query_block", query_block, minimum=0, maximum=len(counts) - 1)
    check_int("step", step, minimum=0, maximum=n_tiles(n, block_k) - 1)
    # whole arrays, not a dict per tile: a 128 x 128 grid of 2 x 2 tiles has 4,096 of them
    q_block, k_tile = (x.ravel() for x in np.meshgrid(range(len(counts)), range(n_tiles(n, block_k)), indexing="ij"))
    status = np.select(
        [k_tile >= np.asarray(counts)[q_block], q_block != query_block, k_tile < step, k_tile == step],
        ["skipped", "other block", "done", "current"],
        "to do",
    )
    q_start, k_start = q_block * block_q, k_tile * block_k
    return pd.DataFrame(
        {
            "q_block": q_block,
            "k_tile": k_tile,
            "q_start": q_start,
            "q_end": np.minimum(q_start + block_q, n),
            "k_start": k_start,
            "k_end": np.minimum(k_start + block_k, n),
            "status": status.tolist(),
        }
    )


@dataclass(frozen=True)
class Walkthrough:
    """One query block's walk through its key tiles, laid out for the page (one row per step/query/...)."""

    steps: pd.DataFrame  # step, key_start, key_end, skipped, err_seen (vs attention over keys so far), err_final
    logits: pd.DataFrame  # step, query, key, logit (NaN where masked), masked
    rows: pd.DataFrame  # step, query, m_before, m_after, rescale = exp(m_before - m_after), l_before, l_after
    output: pd.DataFrame  # step, query, dim, value: the partial output acc / l after the step
    err_block: float  # max |tiled - naive| over this query block's rows, after the last tile
    err_all: float  # max |tiled_attention - naive| over all n rows


def random_qkv(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Standard-normal q, k, v of shape (n, d) in fp64 from one seed."""
    check_int("n", n, minimum=1)
    check_int("d", d, minimum=1)
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, d, generator=gen, dtype=torch.float64) for _ in range(3))


@cached(32)
def walkthrough(n: int, d: int, block_q: int, block_k: int, causal: bool, query_block: int, seed: int) -> Walkthrough:
    """Trace the tiled algorithm for one query block and compare every partial output with naive attention."""
    q, k, v = random_qkv(n, d, seed)  # (n, d) each
    kw = {"causal": causal, "block_q": block_q, "block_k": block_k}
    trace = tiled_attention_trace(q, k, v, query_block=query_block, **kw)
    mask = causal_mask(n) if causal else None
    full, _ = naive_attention(q, k, v, mask)  # (n, d)
    q0, q1 = trace.query_start, trace.query_end
    steps, logits, rows, output = [], [], [], []
    m_before = torch.full((q1 - q0,), float("-inf"), dtype=torch.float64)
    l_before = torch.zeros(q1 - q0, dtype=torch.float64)
    for t, s in enumerate(trace.steps):
        partial = s.partial_output  # (bq, d)
        seen_mask = None if mask is None else mask[q0:q1, : s.key_end]
        seen, _ = naive_attention(q[q0:q1], k[: s.key_end], v[: s.key_end], seen_mask)  # keys 0..key_end-1 only
        steps.append(
            {
                "step": t,
                "key_start": s.key_start,
                "key_end": s.key_end,
                "skipped": s.skipped,
                "err_seen": float((partial - seen).abs().max()),
                "err_final": float((partial - full[q0:q1]).abs().max()),
            }
        )
        if s.logits is not None:
            logits.append((t, s.logits, s.key_start))
        rows.append((t, m_before, s.row_max, l_before, s.row_sum))
        output.append((t, partial))
        m_before, l_before = s.row_max, s.row_sum
    return Walkthrough(
        steps=pd.DataFrame(steps),
        logits=_logit_frame(logits, q0),
        rows=_row_frame(rows, q0),
        output=_matrix_frame(output, q0),
        err_block=float((trace.output - full[q0:q1]).abs().max()),
        err_all=all_rows_error(n, d, block_q, block_k, causal, seed),
    )


@cached(128)
def step_frames(n: int, d: int, block_q: int, block_k: int, causal: bool, query_block: int, seed: int, step: int):
    """One step's slices of the walk: (logits, partial output, row state, the row state as the page's table prints
    it, with m as text and −∞ for a row that has seen no key yet). Cut once per step, not on every run."""
    w = walkthrough(n, d, block_q, block_k, causal, query_block, seed)
    rows = w.rows[w.rows.step == step].drop(columns="step")
    shown = rows.assign(m_before=rows.m_before.map(_m_text), m_after=rows.m_after.map(_m_text))
    return w.logits[w.logits.step == step], w.output[w.output.step == step], rows, shown


def _m_text(m: float) -> str:
    return "−∞" if m == float("-inf") else f"{m:.3f}"


@cached(32)
def all_rows_error(n: int, d: int, block_q: int, block_k: int, causal: bool, seed: int) -> float:
    """max |tiled_attention - naive| over all n rows: the same for every query block, so computed apart from the
    walk of one (running every block's tiles is most of a walk's cost when the tiles are small)."""
    q, k, v = random_qkv(n, d, seed)  # (n, d) each
    full, _ = naive_attention(q, k, v, causal_mask(n) if causal else None)  # (n, d)
    return float((tiled_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k) - full).abs().max())


# The frames below are made once for the whole walk, not once per step and concatenated: ~190 small DataFrames of a
# 64-step walk cost more than its arithmetic.


def _logit_frame(tiles: list[tuple[int, torch.Tensor, int]], q0: int) -> pd.DataFrame:
    """(step, logits (bq, bk), first key) of each computed tile -> step, query, key, logit (NaN if masked), masked."""
    steps, queries, keys, flat = [], [], [], []
    for step, logits, k0 in tiles:
        bq, bk = logits.shape
        steps.append(torch.full((bq * bk,), step))
        queries.append(q0 + torch.arange(bq).repeat_interleave(bk))
        keys.append(k0 + torch.arange(bk).repeat(bq))
        flat.append(logits.reshape(-1))
    flat = torch.cat(flat)
    masked = torch.isneginf(flat)
    return pd.DataFrame(
        {
            "step": torch.cat(steps).numpy(),
            "query": torch.cat(queries).numpy(),
            "key": torch.cat(keys).numpy(),
            "logit": torch.where(masked, torch.nan, flat).numpy(),
            "masked": masked.numpy(),
        }
    )


def _row_frame(states: list[tuple], q0: int) -> pd.DataFrame:
    """(step, m_before, m_after, l_before, l_after) of each step, each (bq,) -> one row per step and query."""
    step, m_before, m_after, l_before, l_after = zip(*states, strict=True)
    bq = len(m_before[0])
    m_before, m_after, l_before, l_after = (torch.cat(x) for x in (m_before, m_after, l_before, l_after))
    # exp(m_old - m_new): 0 before the first visible key (the empty state is dropped), 1 if the max held
    m_safe = torch.where(torch.isfinite(m_after), m_after, torch.zeros_like(m_after))
    return pd.DataFrame(
        {
            "step": torch.tensor(step).repeat_interleave(bq).numpy(),
            "query": (q0 + torch.arange(bq)).repeat(len(step)).numpy(),
            "m_before": m_before.numpy(),
            "m_after": m_after.numpy(),
            "rescale": torch.exp(m_before - m_safe).numpy(),
            "l_before": l_before.numpy(),
            "l_after": l_after.numpy(),
        }
    )


def _matrix_frame(partials: list[tuple[int, torch.Tensor]], q0: int) -> pd.DataFrame:
    """(step, partial output (bq, d)) of each step -> step, query, dim, value."""
    step, x = zip(*partials, strict=True)
    rows, cols = x[0].shape
    return pd.DataFrame(
        {
            "step": torch.tensor(step).repeat_interleave(rows * cols).numpy(),
            "query": (q0 + torch.arange(rows).repeat_interleave(cols)).repeat(len(step)).numpy(),
            "dim": torch.arange(cols).repeat(rows * len(step)).numpy(),
            "value": torch.cat([p.reshape(-1) for p in x]).numpy(),
        }
    )
