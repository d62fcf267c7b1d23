"""Charts for "FlashAttention, tile by tile".

Every title, axis and legend text comes from the page (in the viewer's language) through `text`, a mapping with
the keys each builder lists (placeholders in titles already filled); `names` maps the series keys of a DataFrame
(statuses, error kinds, algorithms) to their legend labels.

Encodings are written as channel objects (alt.X("a:Q"), alt.Tooltip(...)), never as bare strings: Altair
resolves a shorthand string against the whole schema (~2 ms each), and the walkthrough redraws on every step.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import color_scale, heatmap, named_color
from explorer.tables.flash import STATUSES

STATUS_COLORS = ("#1b9e77", "#d95f02", "#9ecae1", "#9e9e9e", "#eeeeee")  # done, current, to do, skipped, other
ERROR_FLOOR = 1e-18  # exact zeros drawn on a log axis
# Heights of the whole chart, title and axes included (Streamlit fits the chart into them): the tile matrices
# and the row state side by side, the error curve beside the metrics, the traffic chart beside its formulas.
TALL = 400
ERROR_HEIGHT = 340
TRAFFIC_HEIGHT = 360


def _label_expr(color: alt.Color) -> str:
    """The legend labels named_color chose, to keep when the legend is placed differently."""
    return color["legend"]["labelExpr"]


def tile_grid(df: pd.DataFrame, n: int, text: Mapping[str, str], names: Mapping[str, str]):
    """The n x n score matrix cut into tiles, coloured by where the walk stands.

    text: title, x, y, q_block, k_tile, first_query, first_key, status. names: a label for each of STATUSES.
    """
    color = named_color("status", {s: names[s] for s in STATUSES})
    color = color.scale(domain=list(STATUSES), range=list(STATUS_COLORS)).legend(
        labelExpr=_label_expr(color), orient="bottom", columns=2, symbolType="square"
    )
    return (
        alt.Chart(df.assign(label=df.status.map(names)), title=text["title"], height=TALL)
        .mark_rect(stroke="white", strokeWidth=1.5)
        .encode(
            x=alt.X("k_start:Q", title=text["x"], scale=alt.Scale(domain=[0, n], nice=False)),
            x2=alt.X2("k_end"),
            y=alt.Y("q_start:Q", title=text["y"], scale=alt.Scale(domain=[0, n], nice=False, reverse=True)),
            y2=alt.Y2("q_end"),
            color=color,
            tooltip=[
                alt.Tooltip("q_block:O", title=text["q_block"]),
                alt.Tooltip("k_tile:O", title=text["k_tile"]),
                alt.Tooltip("q_start:Q", title=text["first_query"]),
                alt.Tooltip("k_start:Q", title=text["first_key"]),
                alt.Tooltip("label:N", title=text["status"]),
            ],
        )
    )


def logit_tile(df: pd.DataFrame, text: Mapping[str, str]):
    """One B_q x B_k tile of logits; entries hidden by the causal mask drawn grey.

    text: title, x, y, logit, hidden (the tooltip of a hidden entry).
    """
    x, y = alt.X("key:O", title=text["x"]), alt.Y("query:O", title=text["y"])
    shown = (
        heatmap(df[~df.masked], x="key", y="query", value="logit", title=text["title"], fmt=".3f")
        .encode(
            x=x,
            y=y,
            color=alt.Color("logit:Q", scale=alt.Scale(scheme="purpleorange", domainMid=0), title=text["logit"]),
        )
        .properties(height=TALL)
    )
    hidden = (
        alt.Chart(df[df.masked].assign(note=text["hidden"]))
        .mark_rect(color="#d9d9d9")
        .encode(
            x=x,
            y=y,
            tooltip=[alt.Tooltip("query:O"), alt.Tooltip("key:O"), alt.Tooltip("note:N", title=text["logit"])],
        )
    )
    return alt.layer(shown, hidden)


def row_state(df: pd.DataFrame, text: Mapping[str, str]):
    """Running max m per query row, before and after the tile, joined where the tile raised the max.

    text: title, x, y, m_before, m_after, rescale.
    """
    finite = df[df.m_before > float("-inf")]
    before_color, after_color = color_scale(["before", "after"]).range
    y = alt.Y("query:O", title=text["y"])
    tooltip = [
        alt.Tooltip("query:O"),
        alt.Tooltip("m_before:Q", title=text["m_before"], format=".4f"),
        alt.Tooltip("m_after:Q", title=text["m_after"], format=".4f"),
        alt.Tooltip("rescale:Q", title=text["rescale"], format=".4f"),
    ]
    link = alt.Chart(finite).mark_rule(color="#999").encode(x=alt.X("m_before:Q"), x2=alt.X2("m_after"), y=y)
    before = (
        alt.Chart(finite).mark_point(size=70, color=before_color).encode(x=alt.X("m_before:Q"), y=y, tooltip=tooltip)
    )
    after = (
        alt.Chart(df)
        .mark_point(size=90, filled=True, color=after_color)
        .encode(x=alt.X("m_after:Q", title=text["x"]), y=y, tooltip=tooltip)
    )
    return alt.layer(link, before, after, title=text["title"], height=TALL)


def partial_output(df: pd.DataFrame, text: Mapping[str, str]):
    """The partial output acc / l of the query block, rows x value dimensions, on a diverging scale.

    text: title, x, y, value.
    """
    return (
        heatmap(df, x="dim", y="query", value="value", title=text["title"], fmt=".4f")
        .encode(
            x=alt.X("dim:O", title=text["x"]),
            y=alt.Y("query:O", title=text["y"]),
            color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domainMid=0), title=text["value"]),
        )
        .properties(height=TALL)
    )


def error_by_step(steps: pd.DataFrame, step: int, text: Mapping[str, str], names: Mapping[str, str]):
    """max |partial - reference| per step: against attention over the keys seen so far and the final answer.

    text: title, x, y, legend, keys_seen, diff. names: labels of the columns err_seen and err_final.
    """
    df = steps.melt(id_vars=["step", "key_end"], value_vars=["err_seen", "err_final"], var_name="against")
    df["shown"] = df.value.clip(lower=ERROR_FLOOR)
    df["label"] = df.against.map(names)
    color = named_color("against", names, text["legend"])
    color = color.legend(labelExpr=_label_expr(color), labelLimit=260)
    x = alt.X("step:O", title=text["x"], axis=alt.Axis(labelAngle=0))
    lines = (
        alt.Chart(df)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("shown:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"), title=text["y"]),
            color=color,
            tooltip=[
                alt.Tooltip("step:O", title=text["x"]),
                alt.Tooltip("key_end:Q", title=text["keys_seen"]),
                alt.Tooltip("label:N", title=text["legend"]),
                alt.Tooltip("value:Q", title=text["diff"], format=".2e"),
            ],
        )
    )
    now = alt.Chart(pd.DataFrame({"step": [step]})).mark_rule(color="#d95f02", strokeDash=[3, 3]).encode(x=x)
    return alt.layer(lines, now, title=text["title"], height=ERROR_HEIGHT)


def hbm_traffic(df: pd.DataFrame, n: int, text: Mapping[str, str], names: Mapping[str, str]):
    """HBM reads + writes against n on log-log axes, naive against tiled, the chosen n marked.

    text: title, x, y, algorithm, reads, writes, total. names: labels of the algorithms "tiled" and "naive".
    """
    x = alt.X("n:Q", scale=alt.Scale(type="log", base=2), title=text["x"])
    color = named_color("algorithm", {a: names[a] for a in ("tiled", "naive")})
    color = color.legend(labelExpr=_label_expr(color), orient="top-left")
    lines = (
        alt.Chart(df.assign(label=df.algorithm.map(names)))
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("total:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format="~s"), title=text["y"]),
            color=color,
            tooltip=[
                alt.Tooltip("n:Q"),
                alt.Tooltip("label:N", title=text["algorithm"]),
                alt.Tooltip("reads:Q", title=text["reads"], format=","),
                alt.Tooltip("writes:Q", title=text["writes"], format=","),
                alt.Tooltip("total:Q", title=text["total"], format=","),
            ],
        )
    )
    now = alt.Chart(pd.DataFrame({"n": [n]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return alt.layer(lines, now, title=text["title"], height=TRAFFIC_HEIGHT)
