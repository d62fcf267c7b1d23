import time

import streamlit as st

from explorer.charts import flash as charts
from explorer.tables import flash as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

BLOCKS = [2, 4, 8, 16, 32]
HBM_SIZES = [16, 32, 64, 128, 256]
HBM_N = tuple(2**i for i in range(8, 17))  # 256 .. 65536
PLAY_SECONDS = 3.0  # the whole animation, however many tiles


def elements(count: int) -> str:
    """A count of elements in 3 significant digits with k, M or G: '17,180.0 M' did not fit a metric at 1366 px."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:,}"


def _to_last_tile(last: int) -> None:
    st.session_state["flash_step"] = last  # Play ends where the slider then stands (and the link with it)


def _index_slider(label: str, key: str, count: int, default: int, help: str, where) -> int:
    """A slider over 0..count-1 that keeps its value when the range changes, pulled back inside if it shrank."""
    if count == 1:  # a slider needs min < max
        where.caption(t("flash_walkthrough.controls.only_one", label=label))
        state.keep(key, 0, label)
        return 0
    return state.slider(label, 0, count - 1, min(default, count - 1), 1, key=key, where=where, help=help)


def _row_columns() -> dict:
    rows = td("flash_walkthrough.rows")
    return {
        "query": st.column_config.NumberColumn("i"),
        "m_before": st.column_config.TextColumn(rows["m_before"]),
        "m_after": st.column_config.TextColumn(rows["m_after"]),
        "rescale": st.column_config.NumberColumn("α", format="%.3f", help="exp(m_old − m_new)"),
        "l_before": st.column_config.NumberColumn(rows["l_before"], format="%.3f"),
        "l_after": st.column_config.NumberColumn(rows["l_after"], format="%.3f"),
    }


header(t("flash_walkthrough.title"), t("flash_walkthrough.lede"))
predict_first(t("flash_walkthrough.question"), t("flash_walkthrough.answer"))

with st.container(border=True):
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 1.4])
    n = state.slider(t("flash_walkthrough.controls.n"), 4, 128, 32, 4, key="flash_n", where=c1)
    d = state.select_slider(t("flash_walkthrough.controls.d"), [2, 4, 8, 16, 32], 8, key="flash_d", where=c2)
    block_q = state.select_slider(t("flash_walkthrough.controls.block_q"), BLOCKS, 8, key="flash_block_q", where=c3)
    block_k = state.select_slider(t("flash_walkthrough.controls.block_k"), BLOCKS, 8, key="flash_block_k", where=c4)
    causal = state.toggle(
        t("flash_walkthrough.controls.causal"),
        True,
        key="flash_causal",
        where=c5,
        help=t("flash_walkthrough.controls.causal_help"),
    )


def draw(step: int, w: tables.Walkthrough, query_block: int) -> None:
    """Everything that depends on the step: the grid, this tile, the row state, the partial output, the end.

    The charts' names carry the step: each is unique in a run even when Play draws every step.
    """
    t_q, t_k = tables.n_tiles(n, block_q), tables.n_tiles(n, block_k)
    info = w.steps.iloc[step]
    keys = t("flash_walkthrough.keys", start=info.key_start, end=info.key_end - 1)
    logits, output, rows, shown = tables.step_frames(n, d, block_q, block_k, causal, query_block, seed(), step)
    g, tile, o = st.columns(3)
    grid = tables.tile_grid(n, block_q, block_k, causal, query_block, step)
    text, statuses = td("flash_walkthrough.charts.grid"), td("flash_walkthrough.statuses")
    chart(charts.tile_grid, grid, n, text, statuses, name=f"tiles_{step}", data=grid, where=g)
    if info.skipped:
        tile.info(t("flash_walkthrough.skipped_tile", step=step, keys=keys))
    else:
        text = td("flash_walkthrough.charts.logits", step=step, keys=keys)
        chart(charts.logit_tile, logits, text, name=f"logits_{step}", data=logits, where=tile)
    text = td("flash_walkthrough.charts.output", keys=keys)
    chart(charts.partial_output, output, text, name=f"partial_output_{step}", data=output, where=o)
    update, table, right = st.columns([2, 3, 2])
    with update:
        formula(r"m' = \max\big(m,\ \textstyle\max_j S_{ij}\big)")
        formula(r"\alpha = e^{\,m - m'}")
        formula(r"l' = \alpha\, l + \textstyle\sum_j e^{S_{ij} - m'}")
        formula(r"\mathrm{acc}' = \alpha\,\mathrm{acc} + e^{S - m'} V_{\text{tile}}")
        formula(r"O = \mathrm{acc}' / l'", t("flash_walkthrough.update_caption"))
    with table:
        st.markdown(t("flash_walkthrough.rows_heading", step=step))
        st.dataframe(shown, hide_index=True, column_config=_row_columns(), height=min(35 * len(rows) + 38, 330))
    text = td("flash_walkthrough.charts.rows")
    chart(charts.row_state, rows, text, name=f"row_state_{step}", data=rows, where=right)
    e, end = st.columns([3, 2])
    text, names = td("flash_walkthrough.charts.error"), td("flash_walkthrough.errors")
    chart(charts.error_by_step, w.steps, step, text, names, name=f"error_by_step_{step}", data=w.steps, where=e)
    with end:
        skipped = tables.causal_skipped_tiles(n, block_q, block_k) if causal else 0
        a, b = st.columns(2)
        a.metric(
            t("flash_walkthrough.metrics.skipped"),
            t("flash_walkthrough.metrics.skipped_value", skipped=skipped, total=t_q * t_k),
            help=t("flash_walkthrough.metrics.skipped_help"),
        )
        b.metric(
            t("flash_walkthrough.metrics.computed"),
            int((~w.steps.skipped).sum()),
            help=t("flash_walkthrough.metrics.computed_help", t_k=t_k),
        )
        if step == len(w.steps) - 1:
            st.markdown(t("flash_walkthrough.end_heading"))
            x, y = st.columns(2)
            x.metric(
                t("flash_walkthrough.metrics.error_block"),
                f"{w.err_block:.1e}",
                help=t("flash_walkthrough.metrics.error_block_help"),
            )
            y.metric(
                t("flash_walkthrough.metrics.error_all"),
                f"{w.err_all:.1e}",
                help=t("flash_walkthrough.metrics.error_all_help"),
            )
            st.caption(t("flash_walkthrough.end_caption"))
        else:
            st.caption(t("flash_walkthrough.not_end_caption", last=len(w.steps) - 1))


@section
def walk_part(n: int, d: int, block_q: int, block_k: int, causal: bool) -> None:
    """The walk through the tiles: its own query block, step and Play (the most moved controls of the page)."""
    with st.container(border=True):
        t_q, t_k = tables.n_tiles(n, block_q), tables.n_tiles(n, block_k)
        s1, s2, s3 = st.columns([3, 4, 1.4], vertical_alignment="bottom")
        query_block = _index_slider(
            t("flash_walkthrough.controls.query_block"),
            "flash_query_block",
            t_q,
            2,
            t("flash_walkthrough.controls.query_block_help"),
            s1,
        )
        step = _index_slider(
            t("flash_walkthrough.controls.step"), "flash_step", t_k, 1, t("flash_walkthrough.controls.step_help"), s2
        )
        play = s3.button(  # an action, not a state: what it leaves behind is the step slider at the last tile
            t("flash_walkthrough.controls.play"),
            key="flash_play",
            icon=":material/play_arrow:",
            width="stretch",
            on_click=_to_last_tile,
            args=(t_k - 1,),
            disabled=t_k == 1,
            help=t("flash_walkthrough.controls.play_help"),
        )
    with friendly_errors(t("flash_walkthrough.sections.walk")):
        w = tables.walkthrough(n, d, block_q, block_k, causal, query_block, seed())
        stage = st.empty()
        for shown in range(t_k) if play else [step]:
            with stage.container():
                draw(shown, w, query_block)
            if play and shown < t_k - 1:
                time.sleep(PLAY_SECONDS / t_k)

    notice(tl("flash_walkthrough.notice"))


walk_part(n, d, block_q, block_k, causal)


@section
def hbm_part(n: int, d: int, block_q: int, block_k: int, causal: bool) -> None:
    """Memory traffic of naive and tiled attention: its own sizes."""
    st.subheader(t("flash_walkthrough.hbm_subheader"))
    with st.container(border=True):
        h1, h2, h3, h4 = st.columns(4)
        hd = state.select_slider(t("flash_walkthrough.controls.d"), HBM_SIZES, 64, key="hbm_d", where=h1)
        hq = state.select_slider(t("flash_walkthrough.controls.block_q"), HBM_SIZES, 128, key="hbm_block_q", where=h2)
        hk = state.select_slider(t("flash_walkthrough.controls.block_k"), HBM_SIZES, 64, key="hbm_block_k", where=h3)
        hn = state.select_slider(t("flash_walkthrough.controls.n"), HBM_N, 4096, key="hbm_n", where=h4)

    mode = "on" if causal else "off"  # causal reads about half the K/V tiles: the saving tends to twice as much
    traffic = tables.hbm_traffic(hn, hd, hq, hk, causal)
    naive = traffic["naive_reads"] + traffic["naive_writes"]
    tiled = traffic["tiled_reads"] + traffic["tiled_writes"]
    limit = tables.traffic_ratio_limit(hd, hq, causal)
    left, right = st.columns([3, 2])
    with left, friendly_errors(t("flash_walkthrough.sections.traffic_chart")):
        sweep = tables.hbm_sweep(hd, hq, hk, causal, HBM_N)
        text, names = td("flash_walkthrough.charts.hbm"), td("flash_walkthrough.algorithms")
        chart(charts.hbm_traffic, sweep, hn, text, names, name="hbm_traffic", data=sweep)
        st.caption(t(f"flash_walkthrough.hbm_caption.{mode}", limit=limit, ratio=naive / tiled, n=hn))
    with right, friendly_errors(t("flash_walkthrough.sections.traffic_count")):
        words = td("flash_walkthrough.formula_words")  # the words inside the two formulas
        formula(
            rf"\text{{{words['naive']} }} 3nd + 2n^2,\quad \text{{{words['writes']} }} 2n^2 + nd",
            t("flash_walkthrough.naive_formula_caption"),
        )
        keys = r"2d\textstyle\sum_b k_b" if causal else r"2nd\,\lceil n/B_q\rceil"  # what hbm_traffic counts
        formula(
            rf"\text{{{words['tiled']} }} nd + {keys},\quad \text{{{words['writes']} }} nd",
            t(f"flash_walkthrough.tiled_formula_caption.{mode}"),
        )
        m1, m2, m3 = st.columns(3)
        for where, algo, total in ((m1, "naive", naive), (m2, "tiled", tiled)):
            where.metric(
                t(f"flash_walkthrough.metrics.{algo}"),
                elements(total),
                help=t(
                    "flash_walkthrough.metrics.traffic_help",
                    reads=traffic[f"{algo}_reads"],
                    writes=traffic[f"{algo}_writes"],
                ),
            )
        m3.metric(
            t("flash_walkthrough.metrics.ratio"),
            f"{naive / tiled:.1f}×",
            help=t(f"flash_walkthrough.metrics.ratio_help.{mode}", limit=limit),
        )
        kb = 2 * tables.sram_working_set(hd, hq, hk) / 1024
        st.caption(t("flash_walkthrough.sram_caption", kb=kb))
        small = tables.hbm_traffic(n, d, block_q, block_k, causal)
        st.caption(
            t(
                "flash_walkthrough.walk_caption",
                n=n,
                d=d,
                block_q=block_q,
                naive=small["naive_reads"] + small["naive_writes"],
                tiled=small["tiled_reads"] + small["tiled_writes"],
            )
        )


hbm_part(n, d, block_q, block_k, causal)
