"""Charts for "Watch attention learn" and "√d_k under training": attention maps per head beside the right
alignment, training curves with the shown snapshot marked, and the two runs of the √d_k comparison.

Every title and axis title comes from the page (in the viewer's language) through `text`; series keys keep their
colours in every language (charts.common.named_color).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, SERIES_COLORS, label_expr, named_color

RIGHT = "right"  # tables.learning.RIGHT: the panel of the right alignment
VARIANCE_COLORS = {
    "untrained": "#7570b3",
    "trained_scaled": SERIES_COLORS["scaled"],
    "trained_unscaled": SERIES_COLORS["unscaled"],
}


def attention_panels(cells: pd.DataFrame, text: Mapping[str, str]):
    """query x key heatmaps, one panel per head and one for the right alignment (all on one 0..1 colour scale,
    so that a snapshot slider compares like with like). cells: panel, query, key, q_label, k_label, weight.

    text: title, head (the word before each head's number), right (the alignment panel's name), query, key, weight.
    """
    q_order = list(dict.fromkeys(cells.sort_values("query")["q_label"]))
    k_order = list(dict.fromkeys(cells.sort_values("key")["k_label"]))
    panels = list(dict.fromkeys(cells["panel"]))
    cell = 20 if max(len(q_order), len(k_order)) <= 8 else 12
    columns = max(1, min(len(panels), 460 // (cell * len(k_order) + 70)))  # as many abreast as fit in ~460 px
    header = f"datum.value === {json.dumps(RIGHT)} ? {json.dumps(text['right'])} : {json.dumps(text['head'] + ' ')}"
    return (
        alt.Chart(cells)
        .mark_rect(stroke="white", strokeWidth=0.3)
        .encode(
            x=alt.X("k_label:O", sort=k_order, title=text["key"], axis=alt.Axis(labelAngle=-45, labelOverlap=False)),
            # one query row (recall): its axis title would be taller than the map and run into the next one
            y=alt.Y(
                "q_label:O",
                sort=q_order,
                title=text["query"] if len(q_order) > 2 else None,
                axis=alt.Axis(labelOverlap=False),
            ),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title=text["weight"]),
            tooltip=[
                alt.Tooltip("q_label:N", title=text["query"]),
                alt.Tooltip("k_label:N", title=text["key"]),
                alt.Tooltip("weight:Q", title=text["weight"], format=".3f"),
            ],
        )
        .properties(width=cell * len(k_order), height=cell * len(q_order))
        .facet(
            facet=alt.Facet(
                "panel:N",
                sort=panels,
                title=None,
                header=alt.Header(labelExpr=f"{header} + datum.value", labelFontSize=12),
            ),
            columns=columns,
        )
        .properties(title=text["title"])
        .configure_legend(orient="right")
    )


def training_curves(
    long: pd.DataFrame, step: int, text: Mapping[str, str], names: Mapping[str, str], *, unit_interval: bool
):
    """Curves over training steps (long: step, metric, value), one colour per metric, a rule at `step`.

    text: title, x, y, legend. unit_interval: the y axis runs 0..1 (accuracies, alignment mass).
    """
    y_scale = alt.Scale(domain=[0, 1]) if unit_interval else alt.Scale(zero=True)
    lines = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title=text["x"]),
            y=alt.Y("value:Q", title=text["y"], scale=y_scale),
            color=named_color("metric", names, text["legend"]),
            tooltip=[
                alt.Tooltip("step:Q", title=text["x"]),
                alt.Tooltip("metric:N", title=text["legend"]),
                alt.Tooltip("value:Q", title=text["y"], format=".3f"),
            ],
        )
    )
    rule = alt.Chart(pd.DataFrame({"step": [step]})).mark_rule(color="#7570b3", strokeDash=[4, 3]).encode(x="step:Q")
    return (lines + rule).properties(title=text["title"], height=HEIGHT - 60)


def two_runs(df: pd.DataFrame, column: str, text: Mapping[str, str], names: Mapping[str, str], *, log: bool = False):
    """One statistic of the scaled and the unscaled run over training steps. df: step, series, `column`.

    text: title, x, y, legend.
    """
    data = df[["step", "series", column]].dropna()
    if log:
        data = data[data[column] > 0]
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title=text["x"]),
            y=alt.Y(f"{column}:Q", title=text["y"], scale=scale),
            color=named_color("series", names, text["legend"]),
            tooltip=[
                alt.Tooltip("series:N", title=text["legend"]),
                alt.Tooltip("step:Q", title=text["x"]),
                alt.Tooltip(f"{column}:Q", title=text["y"], format=".4g"),
            ],
        )
        .properties(title=text["title"], height=HEIGHT - 60)
    )


def gradient_norms(df: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str]):
    """‖∇W_Q‖ (solid) and ‖∇W_K‖ (dashed) of both runs over training, log scale. df: step, series, grad_norm_q,
    grad_norm_k. text: title, x, y, legend, which, q, k."""
    long = df.melt(id_vars=["step", "series"], value_vars=["grad_norm_q", "grad_norm_k"], var_name="which")
    long = long[long["value"] > 0].assign(which=lambda d: d["which"].map({"grad_norm_q": "W_Q", "grad_norm_k": "W_K"}))
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title=text["x"]),
            y=alt.Y("value:Q", title=text["y"], scale=alt.Scale(type="log")),
            color=named_color("series", names, text["legend"]),
            strokeDash=alt.StrokeDash("which:N", title=text["which"], sort=["W_Q", "W_K"]),
            detail="which:N",
            tooltip=[
                alt.Tooltip("series:N", title=text["legend"]),
                alt.Tooltip("which:N", title=text["which"]),
                alt.Tooltip("step:Q", title=text["x"]),
                alt.Tooltip("value:Q", title=text["y"], format=".3g"),
            ],
        )
        .properties(title=text["title"], height=HEIGHT)
    )


def variance_vs_d_k(df: pd.DataFrame, d_k: int, text: Mapping[str, str], names: Mapping[str, str]):
    """Measured Var(q·k) against d_k (log-log) beside the i.i.d. prediction d_k·s⁴ (dashed); a rule at the chosen d_k.

    df: d_k, series (untrained / trained runs), empirical, theory. text: title, x, y, legend, theory.
    """
    x = alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title=text["x"])
    theory = (
        alt.Chart(df[df["series"] == df["series"].iloc[0]])
        .mark_line(color="#444444", strokeDash=[5, 3])
        .encode(x=x, y=alt.Y("theory:Q", scale=alt.Scale(type="log"), title=text["y"]))
    )
    points = (
        alt.Chart(df)
        .mark_point(filled=True, size=80)
        .encode(
            x=x,
            y=alt.Y("empirical:Q", scale=alt.Scale(type="log")),
            color=alt.Color(  # the trained runs in the colours the other charts give scaled and unscaled
                "series:N",
                title=text["legend"],
                scale=alt.Scale(domain=list(VARIANCE_COLORS), range=list(VARIANCE_COLORS.values())),
                legend=alt.Legend(labelExpr=label_expr(names)),
            ),
            shape=alt.Shape("series:N", legend=None),
            tooltip=[
                alt.Tooltip("series:N", title=text["legend"]),
                alt.Tooltip("d_k:Q"),
                alt.Tooltip("empirical:Q", title=text["y"], format=".4g"),
                alt.Tooltip("theory:Q", title=text["theory"], format=".4g"),
            ],
        )
    )
    now = alt.Chart(pd.DataFrame({"d_k": [d_k]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return (theory + points + now).properties(title=text["title"], height=HEIGHT)
