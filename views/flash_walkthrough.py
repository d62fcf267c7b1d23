import time

import streamlit as st

from attn_core.charts import flash as charts
from attn_core.tables import flash as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

BLOCKS = [2, 4, 8, 16, 32]
HBM_N = tuple(2**i for i in range(8, 17))  # 256 .. 65536
PLAY_SECONDS = 3.0  # the whole animation, however many tiles

_ROW_COLUMNS = {
    "query": st.column_config.NumberColumn("i"),
    "m_before": st.column_config.TextColumn("m before"),
    "m_after": st.column_config.TextColumn("m after"),
    "rescale": st.column_config.NumberColumn("α", format="%.3f", help="exp(m_old − m_new)"),
    "l_before": st.column_config.NumberColumn("l before", format="%.3f"),
    "l_after": st.column_config.NumberColumn("l after", format="%.3f"),
}

walkthrough = st.cache_data(max_entries=32)(tables.walkthrough)
tile_grid = st.cache_data(max_entries=128)(tables.tile_grid)
hbm_sweep = st.cache_data(max_entries=32)(tables.hbm_sweep)


def _fmt(m: float) -> str:
    return "−∞" if m == float("-inf") else f"{m:.3f}"


def _to_last_tile(last: int) -> None:
    st.session_state["flash_step"] = last  # Play ends where the slider then stands


def _index_slider(label: str, key: str, count: int, default: int, help: str, where) -> int:
    """A slider over 0..count-1 that keeps its value when the range changes, pulled back inside if it shrank."""
    st.session_state[key] = min(st.session_state.get(key, default), count - 1)
    if count == 1:  # a slider needs min < max
        where.caption(f"{label}: 0 (there is only one)")
        return 0
    return where.slider(label, 0, count - 1, key=key, help=help)


header(
    "FlashAttention, tile by tile",
    "Exact attention without ever storing the n × n score matrix: one block of queries walks through the "
    "key/value tiles, keeping only a running max m, a running sum l and an unnormalised output per row.",
)
predict_first(
    "With a causal mask, n = 32 and 8 × 8 tiles, how many of the 16 tiles can the tiled loop skip entirely?",
    "Tiles on the diagonal hold some visible keys and must be computed; the 4·3/2 = **6** tiles above it hold "
    "only keys that come after every query of their block. Read *tiles skipped by causal* below.",
)

with st.container(border=True):
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 1.4])
    n = c1.slider("sequence length n", 4, 128, 32, 4, key="flash_n")
    d = c2.select_slider("head dim d", options=[2, 4, 8, 16, 32], value=8, key="flash_d")
    block_q = c3.select_slider("query block B_q", options=BLOCKS, value=8, key="flash_block_q")
    block_k = c4.select_slider("key tile B_k", options=BLOCKS, value=8, key="flash_block_k")
    causal = c5.toggle("causal", value=True, key="flash_causal", help="Query i sees keys 0..i only.")
    t_q, t_k = tables.n_tiles(n, block_q), tables.n_tiles(n, block_k)
    s1, s2, s3 = st.columns([3, 4, 1.4], vertical_alignment="bottom")
    query_block = _index_slider("query block", "flash_query_block", t_q, 2, "Which row of tiles to walk.", s1)
    step = _index_slider("key tile (step)", "flash_step", t_k, 1, "How many key tiles the walk has consumed.", s2)
    play = s3.button(
        "Play",
        key="flash_play",
        icon=":material/play_arrow:",
        width="stretch",
        on_click=_to_last_tile,
        args=(t_k - 1,),
        disabled=t_k == 1,
        help="Animate the walk from the first tile to the last.",
    )


def draw(step: int, w: tables.Walkthrough) -> None:
    """Everything that depends on the step: the grid, this tile, the row state, the partial output, the end."""
    info = w.steps.iloc[step]
    keys = f"keys {info.key_start}..{info.key_end - 1}"
    g, t, o = st.columns(3)
    g.altair_chart(charts.tile_grid(tile_grid(n, block_q, block_k, causal, query_block, step), n), height=400)
    if info.skipped:
        t.info(f"Tile {step} ({keys}) lies wholly above the diagonal: skipped, nothing read or computed.")
    else:
        t.altair_chart(
            charts.logit_tile(w.logits[w.logits.step == step], f"Logits S of tile {step}: {keys}"), height=400
        )
    o.altair_chart(charts.partial_output(w.output[w.output.step == step], f"Partial output O after {keys}"), height=400)
    update, table, chart = st.columns([2, 3, 2])
    with update:
        formula(r"m' = \max\big(m,\ \textstyle\max_j S_{ij}\big)")
        formula(r"\alpha = e^{\,m - m'}")
        formula(r"l' = \alpha\, l + \textstyle\sum_j e^{S_{ij} - m'}")
        formula(r"\mathrm{acc}' = \alpha\,\mathrm{acc} + e^{S - m'} V_{\text{tile}}")
        formula(r"O = \mathrm{acc}' / l'", "per query row i; m, l, acc never leave SRAM")
    rows = w.rows[w.rows.step == step].drop(columns="step")
    with table:
        st.markdown(f"**Each row before → after tile {step}**: α rescales the old l and acc")
        shown = rows.assign(m_before=rows.m_before.map(_fmt), m_after=rows.m_after.map(_fmt))
        st.dataframe(shown, hide_index=True, column_config=_ROW_COLUMNS, height=min(35 * len(rows) + 38, 330))
    chart.altair_chart(charts.row_state(rows), height=400)
    e, end = st.columns([3, 2])
    e.altair_chart(charts.error_by_step(w.steps, step), height=340)
    with end:
        skipped = tables.causal_skipped_tiles(n, block_q, block_k) if causal else 0
        a, b = st.columns(2)
        a.metric("tiles skipped by causal", f"{skipped} of {t_q * t_k}", help="In the whole grid of tiles.")
        b.metric("tiles this block computes", int((~w.steps.skipped).sum()), help=f"Of its {t_k} key tiles.")
        if step == len(w.steps) - 1:
            st.markdown("**The end: tiled against naive attention**, computed live")
            x, y = st.columns(2)
            x.metric("max |tiled − naive|", f"{w.err_block:.1e}", help="This query block, after its last tile.")
            y.metric("all rows (tiled_attention)", f"{w.err_all:.1e}", help="Every query block, same tiles.")
            st.caption("Both in float64: rounding error, not approximation. The n × n matrix was never stored.")
        else:
            st.caption(f"Step to the last tile ({len(w.steps) - 1}) or press Play to compare with naive attention.")


with friendly_errors("The tile walk"):
    w = walkthrough(n, d, block_q, block_k, causal, query_block, seed())
    stage = st.empty()
    for shown in range(t_k) if play else [step]:
        with stage.container():
            draw(shown, w)
        if play and shown < t_k - 1:
            time.sleep(PLAY_SECONDS / t_k)

notice(
    [
        "When a tile raises a row's max, the old l and accumulator shrink by α = exp(m_old − m_new) < 1; "
        "when the max holds, α = 1 exactly, and the first tile multiplies the empty state by α = 0.",
        "After every tile the partial output *is* attention over the keys seen so far (green line at rounding "
        "level); it reaches the final answer at the last tile the block needs.",
        "With causal, tiles wholly above the diagonal are never computed: no logits and no K/V reads.",
    ]
)

st.subheader("Slow-memory (HBM) traffic: naive against tiled")
with st.container(border=True):
    h1, h2, h3, h4 = st.columns(4)
    hd = h1.select_slider("head dim d", options=[16, 32, 64, 128, 256], value=64, key="hbm_d")
    hq = h2.select_slider("query block B_q", options=[16, 32, 64, 128, 256], value=128, key="hbm_block_q")
    hk = h3.select_slider("key tile B_k", options=[16, 32, 64, 128, 256], value=64, key="hbm_block_k")
    hn = h4.select_slider("sequence length n", options=HBM_N, value=4096, key="hbm_n")

left, right = st.columns([3, 2])
with left, friendly_errors("The traffic chart"):
    st.altair_chart(charts.hbm_traffic(hbm_sweep(hd, hq, hk, causal, HBM_N), hn), height=360)
    st.caption(
        "Both lines climb with slope 2 on these log-log axes: tiling divides the traffic by about 2B_q/d, it does "
        "not change its order in n. What drops from n² to n is the memory held: no S or P, only m and l per row. "
        f"Causal: {'on' if causal else 'off'} (the toggle above). Counted in matrix elements."
    )
with right, friendly_errors("The traffic count"):
    formula(r"\text{naive: reads } 3nd + 2n^2,\quad \text{writes } 2n^2 + nd", "S and P go to HBM and back")
    formula(
        r"\text{tiled: reads } nd + 2nd\,\lceil n/B_q\rceil,\quad \text{writes } nd",
        "Q once, K and V once per query block (with causal: only the tiles up to the diagonal), O once",
    )
    t = tables.hbm_traffic(hn, hd, hq, hk, causal)
    naive, tiled = t["naive_reads"] + t["naive_writes"], t["tiled_reads"] + t["tiled_writes"]
    m1, m2, m3 = st.columns(3)
    m1.metric("naive", f"{naive / 1e6:,.1f} M", help=f"{t['naive_reads']:,} reads + {t['naive_writes']:,} writes")
    m2.metric("tiled", f"{tiled / 1e6:,.1f} M", help=f"{t['tiled_reads']:,} reads + {t['tiled_writes']:,} writes")
    m3.metric("naive / tiled", f"{naive / tiled:.1f}×", help="For large n: 4n² / (2n²d/B_q) = 2B_q/d.")
    kb = 2 * tables.sram_working_set(hd, hq, hk) / 1024
    st.caption(
        f"One tile step holds (2B_q + 2B_k)d + B_qB_k + 2B_q = {kb:.0f} KB on chip in fp16: larger tiles cut HBM "
        "traffic until they no longer fit in an SM's shared memory."
    )
    small = tables.hbm_traffic(n, d, block_q, block_k, causal)
    st.caption(
        f"The walk above (n = {n}, d = {d}, B_q = {block_q}): naive moves "
        f"{small['naive_reads'] + small['naive_writes']:,} elements, tiled "
        f"{small['tiled_reads'] + small['tiled_writes']:,}."
    )
