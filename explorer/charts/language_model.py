"""Charts for "Inside a small language model": every head's map on the typed text, the heads' scores, entropy per
layer, the loss at each position and the next-character guesses.

Every title and axis title comes from the page (in the viewer's language) through `text`.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, head_maps, label_expr

REPEATED_COLORS = {"repeated": "#1b9e77", "first_seen": "#d95f02"}
# A single view given no autosize gets Streamlit's {"type": "fit", "contains": "padding"}: title, axes and legend
# are squeezed into the given height, so a two-line title in a narrow column left the plot about a third of it
# (and a horizontal band scale too little room for its bars). fit-x stretches the width only; the height is the plot's.
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")
MIN_MAP = 160  # px: a map's side, room for its axis titles


def layer_maps(cells: pd.DataFrame, n: int, text: Mapping[str, str]):
    """One layer's heads side by side: query (rows) x key (columns), one 0..1 colour scale for every head.

    cells (one layer): layer, head, query, key, q_label, k_label, weight (cells below the cut-off absent: blank).
    text: title, head, query, key, weight.
    """
    # at least MIN_MAP px a side: below that the axis titles, wider than the map, ran into the next head's
    cell = max(3, min(10, 360 // max(n, 1)), -(-MIN_MAP // max(n, 1)))
    axis = alt.Axis(labels=n <= 40, ticks=n <= 40, labelFontSize=9, labelAngle=0, labelOverlap=True)
    hover = {"head:O": "head", "q_label:N": "query", "k_label:N": "key"}
    return head_maps(
        cells,
        cell * n,
        text,
        x=alt.X("key:O", title=text["key"], scale=alt.Scale(domain=list(range(n))), axis=axis),
        y=alt.Y("query:O", title=text["query"], scale=alt.Scale(domain=list(range(n))), axis=axis),
        hover=hover,
    )


def score_grid(long: pd.DataFrame, names: Mapping[str, str], text: Mapping[str, str]):
    """Heads (rows, 'layer.head') x scores (columns), colour and number = the score (0..1; blank where undefined).

    long: layer, head, score, value. text: title, head, score, value.
    """
    data = long.assign(name=long["layer"].astype(str) + "." + long["head"].astype(str))
    base = alt.Chart(data).encode(
        x=alt.X(
            "score:N",
            sort=list(names),
            title=text["score"],
            axis=alt.Axis(labelExpr=label_expr(names), labelAngle=-30, labelOverlap=False, labelLimit=160),
        ),
        y=alt.Y("name:O", title=text["head"]),
    )
    rects = base.mark_rect().encode(
        color=alt.Color("value:Q", scale=alt.Scale(scheme="greens", domain=[0, 1]), title=text["value"]),
        tooltip=[alt.Tooltip("name:N", title=text["head"]), alt.Tooltip("value:Q", title=text["value"], format=".2f")],
    )
    labels = base.mark_text(fontSize=11).encode(
        text=alt.Text("value:Q", format=".2f"),
        color=alt.condition("datum.value > 0.6", alt.value("white"), alt.value("black")),
    )
    return (rects + labels).properties(title=text["title"], width=alt.Step(62), height=alt.Step(24))


def entropy_bars(heads: pd.DataFrame, text: Mapping[str, str]):
    """Each head's mean row entropy (nats), grouped by layer, with the uniform rows' entropy as a dashed rule.

    heads: layer, head, entropy, uniform_entropy. text: title, x, y, uniform.
    """
    data = heads.assign(name=heads["layer"].astype(str) + "." + heads["head"].astype(str))
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("name:O", title=text["x"], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("entropy:Q", title=text["y"], scale=alt.Scale(zero=True)),
            color=alt.Color("layer:O", title=text["layer"], scale=alt.Scale(scheme="set2")),
            tooltip=[alt.Tooltip("name:N", title=text["x"]), alt.Tooltip("entropy:Q", title=text["y"], format=".2f")],
        )
    )
    uniform = (
        alt.Chart(data.head(1))
        .mark_rule(color="#444444", strokeDash=[5, 3])
        .encode(y="uniform_entropy:Q", tooltip=[alt.Tooltip("uniform_entropy:Q", title=text["uniform"], format=".2f")])
    )
    return (bars + uniform).properties(title=text["title"], height=HEIGHT - 60, autosize=FIT_X)


def position_losses(df: pd.DataFrame, names: Mapping[str, str], text: Mapping[str, str]):
    """Loss (nats) of the actual next character at each position, coloured by whether its pair came earlier.

    df: position, char, next, predicted, p_next, loss, repeated. text: title, x, y, legend, char, next, predicted, p.
    """
    data = df.assign(kind=df["repeated"].map({True: "repeated", False: "first_seen"}))
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("position:Q", title=text["x"], scale=alt.Scale(domain=[-0.5, len(df) - 0.5], nice=False)),
            y=alt.Y("loss:Q", title=text["y"]),
            color=alt.Color(
                "kind:N",
                title=text["legend"],
                scale=alt.Scale(domain=list(REPEATED_COLORS), range=list(REPEATED_COLORS.values())),
                legend=alt.Legend(labelExpr=label_expr(names)),
            ),
            tooltip=[
                alt.Tooltip("position:O", title=text["x"]),
                alt.Tooltip("char:N", title=text["char"]),
                alt.Tooltip("next:N", title=text["next"]),
                alt.Tooltip("predicted:N", title=text["predicted"]),
                alt.Tooltip("p_next:Q", title=text["p"], format=".2f"),
                alt.Tooltip("loss:Q", title=text["y"], format=".2f"),
            ],
        )
        .properties(title=text["title"], height=HEIGHT - 80, autosize=FIT_X)
    )


def next_bars(df: pd.DataFrame, text: Mapping[str, str]):
    """The likeliest next characters (rank, char, probability) as bars, likeliest first. text: title, x, y."""
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("char:N", sort=list(df.sort_values("rank")["char"]), title=text["y"], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("probability:Q", scale=alt.Scale(domain=[0, 1]), title=text["x"]),
            tooltip=[
                alt.Tooltip("char:N", title=text["y"]),
                alt.Tooltip("probability:Q", title=text["x"], format=".3f"),
            ],
        )
        .properties(title=text["title"], height=HEIGHT - 80, autosize=FIT_X)
    )
