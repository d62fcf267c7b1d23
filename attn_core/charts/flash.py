"""Charts for "FlashAttention, tile by tile".

Encodings are written as channel objects (alt.X("a:Q"), alt.Tooltip(...)), never as bare strings: Altair
resolves a shorthand string against the whole schema (~2 ms each), and the walkthrough redraws on every step.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from attn_core.charts.common import HEIGHT, color_scale, heatmap
from attn_core.tables.flash import STATUSES

STATUS_COLORS = ("#1b9e77", "#d95f02", "#9ecae1", "#9e9e9e", "#eeeeee")  # done, current, to do, skipped, other
ERROR_FLOOR = 1e-18  # exact zeros drawn on a log axis
TALL = 340  # the tile matrices and the row state, as tall as the row-state table beside them


def tile_grid(df: pd.DataFrame, n: int):
    """The n x n score matrix cut into tiles, coloured by where the walk stands."""
    return (
        alt.Chart(df, title="The n × n grid of tiles", height=TALL)
        .mark_rect(stroke="white", strokeWidth=1.5)
        .encode(
            x=alt.X("k_start:Q", title="key index j", scale=alt.Scale(domain=[0, n], nice=False)),
            x2=alt.X2("k_end"),
            y=alt.Y("q_start:Q", title="query index i", scale=alt.Scale(domain=[0, n], nice=False, reverse=True)),
            y2=alt.Y2("q_end"),
            color=alt.Color(
                "status:N",
                scale=alt.Scale(domain=list(STATUSES), range=list(STATUS_COLORS)),
                title=None,
                legend=alt.Legend(orient="bottom", columns=3, symbolType="square"),
            ),
            tooltip=[
                alt.Tooltip("q_block:O", title="query block"),
                alt.Tooltip("k_tile:O", title="key tile"),
                alt.Tooltip("q_start:Q", title="first query"),
                alt.Tooltip("k_start:Q", title="first key"),
                alt.Tooltip("status:N"),
            ],
        )
    )


def logit_tile(df: pd.DataFrame, title: str):
    """One B_q x B_k tile of logits; entries hidden by the causal mask drawn grey."""
    x, y = alt.X("key:O", title="key index j"), alt.Y("query:O", title="query index i")
    shown = (
        heatmap(df[~df.masked], x="key", y="query", value="logit", title=title, fmt=".3f")
        .encode(
            x=x, y=y, color=alt.Color("logit:Q", scale=alt.Scale(scheme="purpleorange", domainMid=0), title="logit")
        )
        .properties(height=TALL)
    )
    hidden = (
        alt.Chart(df[df.masked].assign(note="hidden: key after query"))
        .mark_rect(color="#d9d9d9")
        .encode(
            x=x,
            y=y,
            tooltip=[alt.Tooltip("query:O"), alt.Tooltip("key:O"), alt.Tooltip("note:N", title="logit")],
        )
    )
    return alt.layer(shown, hidden)


def row_state(df: pd.DataFrame):
    """Running max m per query row, before and after the tile, joined where the tile raised the max."""
    finite = df[df.m_before > float("-inf")]
    before_color, after_color = color_scale(["before", "after"]).range
    y = alt.Y("query:O", title="query index i")
    tooltip = [
        alt.Tooltip("query:O"),
        alt.Tooltip("m_before:Q", title="m before", format=".4f"),
        alt.Tooltip("m_after:Q", title="m after", format=".4f"),
        alt.Tooltip("rescale:Q", title="α = exp(m_old − m_new)", format=".4f"),
    ]
    link = alt.Chart(finite).mark_rule(color="#999").encode(x=alt.X("m_before:Q"), x2=alt.X2("m_after"), y=y)
    before = (
        alt.Chart(finite).mark_point(size=70, color=before_color).encode(x=alt.X("m_before:Q"), y=y, tooltip=tooltip)
    )
    after = (
        alt.Chart(df)
        .mark_point(size=90, filled=True, color=after_color)
        .encode(x=alt.X("m_after:Q", title="m (hollow: before, filled: after)"), y=y, tooltip=tooltip)
    )
    return alt.layer(link, before, after, title="Running max m per query row", height=TALL)


def partial_output(df: pd.DataFrame, title: str):
    """The partial output acc / l of the query block, rows x value dimensions, on a diverging scale."""
    return (
        heatmap(df, x="dim", y="query", value="value", title=title, fmt=".4f")
        .encode(
            x=alt.X("dim:O", title="value dimension"),
            y=alt.Y("query:O", title="query index i"),
            color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0), title="output"),
        )
        .properties(height=TALL)
    )


def error_by_step(steps: pd.DataFrame, step: int):
    """max |partial - reference| per step: against attention over the keys seen so far and the final answer."""
    names = {"err_seen": "attention over keys so far", "err_final": "final answer"}
    df = steps.melt(id_vars=["step", "key_end"], value_vars=list(names), var_name="against")
    df["against"] = df.against.map(names)
    df["shown"] = df.value.clip(lower=ERROR_FLOOR)
    x = alt.X("step:O", title="key tile (step)", axis=alt.Axis(labelAngle=0))
    lines = (
        alt.Chart(df)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y(
                "shown:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"), title="max |partial − reference|"
            ),
            color=alt.Color(
                "against:N",
                scale=color_scale(list(names.values())),
                title="partial output against",
                legend=alt.Legend(labelLimit=260),
            ),
            tooltip=[
                alt.Tooltip("step:O"),
                alt.Tooltip("key_end:Q", title="keys seen"),
                alt.Tooltip("against:N"),
                alt.Tooltip("value:Q", title="max abs diff", format=".2e"),
            ],
        )
    )
    now = alt.Chart(pd.DataFrame({"step": [step]})).mark_rule(color="#d95f02", strokeDash=[3, 3]).encode(x=x)
    return alt.layer(lines, now, title="How far the partial output is from the answer", height=TALL)


def hbm_traffic(df: pd.DataFrame, n: int):
    """HBM reads + writes against n on log-log axes, naive against tiled, the chosen n marked."""
    x = alt.X("n:Q", scale=alt.Scale(type="log", base=2), title="sequence length n (log scale)")
    lines = (
        alt.Chart(df)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y(
                "total:Q",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(format="~s"),
                title="HBM reads + writes (elements)",
            ),
            color=alt.Color(
                "algorithm:N", scale=color_scale(["tiled", "naive"]), title=None, legend=alt.Legend(orient="top-left")
            ),
            tooltip=[
                alt.Tooltip("n:Q"),
                alt.Tooltip("algorithm:N"),
                alt.Tooltip("reads:Q", format=","),
                alt.Tooltip("writes:Q", format=","),
                alt.Tooltip("total:Q", format=","),
            ],
        )
    )
    now = alt.Chart(pd.DataFrame({"n": [n]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return alt.layer(lines, now, title="Slow-memory traffic of one attention head", height=HEIGHT)
