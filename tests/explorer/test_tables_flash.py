import math

import numpy as np
import pandas as pd
import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import causal_mask, masked_softmax, naive_attention, tiled_attention, tiled_attention_trace
from explorer.tables import flash as tables

sizes = {
    "n": st.integers(1, 40),
    "d": st.integers(1, 5),
    "block_q": st.integers(1, 12),
    "block_k": st.integers(1, 12),
    "causal": st.booleans(),
}


class HBM:
    """Counts the elements that cross between slow memory and the chip: every read or write of a tensor."""

    def __init__(self):
        self.reads = self.writes = 0

    def read(self, x: torch.Tensor) -> torch.Tensor:
        self.reads += x.numel()
        return x

    def write(self, x: torch.Tensor) -> torch.Tensor:
        self.writes += x.numel()
        return x


def naive_counted(q, k, v, mem: HBM) -> torch.Tensor:
    """Standard attention as three kernels, each loading its inputs from HBM and storing its result there."""
    s = mem.write(mem.read(q) @ mem.read(k).T)
    p = mem.write(masked_softmax(mem.read(s)))
    return mem.write(mem.read(p) @ mem.read(v))


def tiled_counted(q, k, v, block_q, block_k, causal, mem: HBM) -> torch.Tensor:
    """The tiled loop, replayed from its real trace: load each Q block, each K/V tile it computes, store O."""
    blocks = []
    for b in range(math.ceil(q.shape[0] / block_q)):
        trace = tiled_attention_trace(q, k, v, causal=causal, block_q=block_q, block_k=block_k, query_block=b)
        mem.read(q[trace.query_start : trace.query_end])
        for s in trace.steps:
            if not s.skipped:  # a skipped tile is never loaded
                mem.read(k[s.key_start : s.key_end])
                mem.read(v[s.key_start : s.key_end])
        blocks.append(mem.write(trace.output))
    return torch.cat(blocks)


@given(**sizes)
def test_traffic_formulas_match_a_counted_run(n, d, block_q, block_k, causal):
    q, k, v = rand(n, d), rand(n, d, seed=1), rand(n, d, seed=2)
    naive, tiled = HBM(), HBM()
    naive_counted(q, k, v, naive)
    tiled_counted(q, k, v, block_q, block_k, causal, tiled)
    t = tables.hbm_traffic(n, d, block_q, block_k, causal)
    assert (t["naive_reads"], t["naive_writes"]) == (naive.reads, naive.writes)
    assert (t["tiled_reads"], t["tiled_writes"]) == (tiled.reads, tiled.writes)


def test_traffic_closed_forms_and_the_large_n_ratio():
    t = tables.hbm_traffic(1000, 64, 128, 64)
    assert t["naive_reads"] == 3 * 1000 * 64 + 2 * 1000**2 and t["naive_writes"] == 2 * 1000**2 + 1000 * 64
    assert t["tiled_reads"] == 1000 * 64 + 2 * 1000 * 64 * 8 and t["tiled_writes"] == 1000 * 64  # ceil(1000/128) = 8
    # naive / tiled -> 4 n^2 / (2 n^2 d / B_q) = 2 B_q / d; at n = 2^20 the n d terms are below 0.1 %
    big = tables.hbm_traffic(2**20, 64, 128, 64)
    ratio = (big["naive_reads"] + big["naive_writes"]) / (big["tiled_reads"] + big["tiled_writes"])
    assert ratio == pytest.approx(2 * 128 / 64, rel=1e-3)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("d", "block_q", "block_k"), [(64, 128, 64), (16, 32, 256), (256, 16, 16)])
def test_the_traffic_ratio_tends_to_the_limit_the_page_states(d, block_q, block_k, causal):
    """Issue 25: with causal the tiled loop reads about half the K/V tiles, so the ratio tends to 4B_q/d, not 2B_q/d."""
    big = tables.hbm_traffic(2**20, d, block_q, block_k, causal)
    ratio = (big["naive_reads"] + big["naive_writes"]) / (big["tiled_reads"] + big["tiled_writes"])
    assert tables.traffic_ratio_limit(d, block_q, causal) == (4 if causal else 2) * block_q / d
    assert ratio == pytest.approx(tables.traffic_ratio_limit(d, block_q, causal), rel=0.02)


@given(n=sizes["n"], block_q=sizes["block_q"], block_k=sizes["block_k"])
def test_skipped_tiles_are_the_tiles_the_causal_mask_hides_entirely(n, block_q, block_k):
    visible = causal_mask(n)
    hidden = 0
    for q0 in range(0, n, block_q):
        for k0 in range(0, n, block_k):
            hidden += not visible[q0 : q0 + block_q, k0 : k0 + block_k].any()
    assert tables.causal_skipped_tiles(n, block_q, block_k) == hidden
    q = rand(n, 2)
    traced = sum(
        s.skipped
        for b in range(tables.n_tiles(n, block_q))
        for s in tiled_attention_trace(q, q, q, causal=True, block_q=block_q, block_k=block_k, query_block=b).steps
    )
    assert traced == hidden


def test_skipped_count_of_a_square_grid_is_the_strict_upper_triangle():
    assert tables.causal_skipped_tiles(32, 8, 8) == 4 * 3 // 2
    assert tables.causal_skipped_tiles(32, 8, 4) == 32 - (2 + 4 + 6 + 8)
    assert sum(tables.computed_tiles(32, 8, 8, causal=False)) == 16


@given(**sizes, data=st.data())
def test_tile_grid_covers_the_matrix_once_and_tracks_the_step(n, d, block_q, block_k, causal, data):
    b = data.draw(st.integers(0, tables.n_tiles(n, block_q) - 1))
    step = data.draw(st.integers(0, tables.n_tiles(n, block_k) - 1))
    grid = tables.tile_grid(n, block_q, block_k, causal, b, step)
    assert ((grid.q_end - grid.q_start) * (grid.k_end - grid.k_start)).sum() == n * n
    counts = grid.status.value_counts()
    assert counts.get("skipped", 0) == (tables.causal_skipped_tiles(n, block_q, block_k) if causal else 0)
    mine = grid[grid.q_block == b]
    assert (mine.status == "done").sum() == min(step, tables.computed_tiles(n, block_q, block_k, causal)[b])
    current = mine[mine.k_tile == step].status.item()
    assert current in ("current", "skipped")


@pytest.mark.parametrize("settings", [(128, 2, 2, True, 10, 5), (30, 8, 4, False, 1, 7), (4, 32, 2, True, 0, 1)])
def test_the_tile_grid_made_as_arrays_equals_one_row_per_tile(settings):
    """The grid is built from whole arrays (4,096 tiles at n = 128 with 2 x 2 tiles): the same rows, in the same
    order and types, as a loop over the tiles gives."""
    n, block_q, block_k, causal, query_block, step = settings
    rows = []
    for b, computed in enumerate(tables.computed_tiles(n, block_q, block_k, causal)):
        for j in range(tables.n_tiles(n, block_k)):
            mine = "done" if j < step else "current" if j == step else "to do"
            status = "skipped" if j >= computed else "other block" if b != query_block else mine
            q0, k0 = b * block_q, j * block_k
            rows.append((b, j, q0, min(q0 + block_q, n), k0, min(k0 + block_k, n), status))
    columns = ["q_block", "k_tile", "q_start", "q_end", "k_start", "k_end", "status"]
    pd.testing.assert_frame_equal(tables.tile_grid(*settings), pd.DataFrame(rows, columns=columns), check_exact=True)


def test_walkthrough_partials_are_attention_over_the_keys_seen():
    w = tables.walkthrough(48, 8, 8, 16, True, 3, seed=0)
    # float64 throughout: 1e-12 is thousands of ulps above the ~1e-16 rounding of sums of 48 products
    assert (w.steps.err_seen < 1e-12).all()
    assert w.steps.err_final.iloc[0] > 1e-3  # the first tile alone is not the answer
    assert w.steps.err_final.iloc[-1] < 1e-12 and w.err_block < 1e-12 and w.err_all < 1e-12
    assert w.steps.skipped.tolist() == [False, False, True]  # rows 24..31 need keys 0..31 only


def test_walkthrough_rows_follow_the_online_softmax_recurrence():
    w = tables.walkthrough(32, 4, 8, 8, True, 3, seed=1)
    for step, rows in w.rows.groupby("step"):
        rows = rows.set_index("query")
        tile = w.logits[(w.logits.step == step) & ~w.logits.masked].groupby("query").logit
        if not len(tile):  # a skipped tile leaves the state alone
            assert (rows.m_after == rows.m_before).all() and (rows.l_after == rows.l_before).all()
            continue
        m_new = np.maximum(rows.m_before, tile.max())
        alpha = np.exp(rows.m_before - m_new)  # 0 on the first tile, where m_before = -inf
        tile_sum = tile.apply(lambda s, m=m_new: np.exp(s - m[s.name]).sum())
        np.testing.assert_allclose(rows.m_after, m_new, rtol=1e-14)
        np.testing.assert_allclose(rows.rescale, alpha, rtol=1e-14)
        np.testing.assert_allclose(rows.l_after, alpha * rows.l_before + tile_sum, rtol=1e-13)
    assert (w.rows.rescale <= 1).all() and (w.rows[w.rows.step == 0].rescale == 0).all()


def test_walkthrough_hides_exactly_the_keys_after_each_query():
    w = tables.walkthrough(16, 4, 8, 8, True, 1, seed=2)
    assert (w.logits.masked == (w.logits.key > w.logits["query"])).all()
    assert w.logits[w.logits.masked].logit.isna().all() and w.logits[~w.logits.masked].logit.notna().all()


def _walk_step_by_step(n, d, block_q, block_k, causal, query_block, seed):
    """The walk's logits, rows and partial outputs laid out one step at a time, straight from the trace (as the
    page made them before they were built for the whole walk at once), and the error over all rows."""
    q, k, v = tables.random_qkv(n, d, seed)
    kw = {"causal": causal, "block_q": block_q, "block_k": block_k}
    trace = tiled_attention_trace(q, k, v, query_block=query_block, **kw)
    q0, q1 = trace.query_start, trace.query_end
    logits, rows, output = [], [], []
    m, l = torch.full((q1 - q0,), -math.inf, dtype=torch.float64), torch.zeros(q1 - q0, dtype=torch.float64)
    for t, s in enumerate(trace.steps):
        if s.logits is not None:
            bq, bk = s.logits.shape
            flat = s.logits.reshape(-1)
            query, key = q0 + torch.arange(bq).repeat_interleave(bk), s.key_start + torch.arange(bk).repeat(bq)
            hidden = torch.isneginf(flat)
            frame = {
                "step": t,
                "query": query.numpy(),
                "key": key.numpy(),
                "logit": torch.where(hidden, torch.nan, flat),
            }
            logits.append(pd.DataFrame(frame | {"logit": frame["logit"].numpy(), "masked": hidden.numpy()}))
        m_safe = torch.where(torch.isfinite(s.row_max), s.row_max, torch.zeros_like(s.row_max))
        state = {"m_before": m.numpy(), "m_after": s.row_max.numpy(), "rescale": torch.exp(m - m_safe).numpy()}
        queries = torch.arange(q0, q1).numpy()
        rows.append(
            pd.DataFrame({"step": t, "query": queries, **state, "l_before": l.numpy(), "l_after": s.row_sum.numpy()})
        )
        bq, dv = s.partial_output.shape
        query, dim = q0 + torch.arange(bq).repeat_interleave(dv), torch.arange(dv).repeat(bq)
        value = s.partial_output.reshape(-1).numpy()
        output.append(pd.DataFrame({"step": t, "query": query.numpy(), "dim": dim.numpy(), "value": value}))
        m, l = s.row_max, s.row_sum
    full, _ = naive_attention(q, k, v, causal_mask(n) if causal else None)
    err_all = float((tiled_attention(q, k, v, **kw) - full).abs().max())
    return [pd.concat(f, ignore_index=True) for f in (logits, rows, output)], err_all


@pytest.mark.parametrize(
    "settings",
    [(48, 8, 8, 16, True, 3, 0), (128, 4, 2, 2, False, 17, 1), (36, 32, 32, 4, True, 1, 2), (4, 2, 4, 2, True, 0, 3)],
)
def test_the_walk_built_at_once_equals_the_walk_laid_out_step_by_step(settings):
    """The walk's frames are made once for all steps (a 64-step walk made ~190 small DataFrames), and the error over
    all rows apart from the walk of one query block: every number must stay exactly what the trace gives."""
    w = tables.walkthrough(*settings)
    (logits, rows, output), err_all = _walk_step_by_step(*settings)
    for got, expected in ((w.logits, logits), (w.rows, rows), (w.output, output)):
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert w.err_all == err_all == tables.all_rows_error(*settings[:5], settings[6])


def test_sram_working_set_counts_every_tile_buffer():
    # Q block 8x4, K and V tiles 2 x 16x4, S tile 8x16, accumulator 8x4, m and l 2 x 8
    assert tables.sram_working_set(4, 8, 16) == 32 + 128 + 128 + 32 + 16


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tables.n_tiles(0, 4), "n"),
        (lambda: tables.n_tiles(8, 0), "block"),
        (lambda: tables.hbm_traffic(8, 0, 4, 4), "d"),
        (lambda: tables.tile_grid(16, 8, 8, False, 2, 0), "query_block"),
        (lambda: tables.tile_grid(16, 8, 8, False, 0, 2), "step"),
        (lambda: tables.walkthrough(16, 4, 8, 8, False, 5, 0), "query_block"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
