"""Charts for "Multi-head attention": one attention map per head, the concatenated head outputs, parameter counts.

Every title, axis and legend title comes from the page (in the viewer's language) through `text`, a mapping with
the keys each builder lists; placeholders in the titles are filled by the page.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, color_scale, prefixed_header

MAX_MAPS = 16  # more small maps than this stop being readable; the page says how many are left out
# Stretch to the column's width but keep the height given to the plot (Streamlit's default "fit" squeezes the
# plot to make room for titles and axes inside that height).
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")


def head_maps(maps: pd.DataFrame, text: Mapping[str, str]):
    """A grid of query x key heatmaps, one per head (the first MAX_MAPS); maps: head, query, key, q_label,
    k_label, weight. Rows and columns keep sentence order, labelled 'position word'.

    text: title, head (the word before each map's number), query, key, weight.
    """
    shown = maps[maps["head"] < MAX_MAPS]
    q_order = list(dict.fromkeys(shown.sort_values("query")["q_label"]))
    k_order = list(dict.fromkeys(shown.sort_values("key")["k_label"]))
    n_heads = int(shown["head"].max()) + 1
    small = n_heads > 8  # many heads: smaller maps
    cell = (9 if small else 16) if max(len(q_order), len(k_order)) > 6 else (14 if small else 24)
    columns = min(n_heads, 4, max(2, 480 // (cell * len(k_order) + 40)))  # as many abreast as fit in ~480 px
    axis = {"labelFontSize": 8 if small else 10, "labelOverlap": False}
    return (
        alt.Chart(shown)
        .mark_rect(stroke="white", strokeWidth=0.3)
        .encode(
            x=alt.X("k_label:O", sort=k_order, title=text["key"], axis=alt.Axis(labelAngle=-45, **axis)),
            y=alt.Y("q_label:O", sort=q_order, title=text["query"], axis=alt.Axis(**axis)),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domainMin=0), title=text["weight"]),
            tooltip=[
                alt.Tooltip("head:O", title=text["head"]),
                alt.Tooltip("q_label:N", title=text["query"]),
                alt.Tooltip("k_label:N", title=text["key"]),
                alt.Tooltip("weight:Q", title=text["weight"], format=".3f"),
            ],
        )
        .properties(width=cell * len(k_order), height=cell * len(q_order))
        .facet(
            facet=alt.Facet(
                "head:O",
                title=None,
                header=alt.Header(labelExpr=prefixed_header(text["head"]), labelFontSize=12),
            ),
            columns=min(columns, n_heads),
        )
        .properties(title=text["title"])
        .configure_legend(orient="top")  # the grid keeps the column's whole width
    )


def concat_heatmap(concat: pd.DataFrame, d_k: int, text: Mapping[str, str]):
    """The (n, d_model) matrix that enters W_o, with a rule between the d_k columns of consecutive heads.

    concat: query, q_label, feature, head, value. text: title, x, query, head, feature, value.
    """
    q_order = list(dict.fromkeys(concat.sort_values("query")["q_label"]))
    d_model = int(concat["feature"].max()) + 1
    x = alt.X("feature:Q", title=text["x"])
    cells = (
        alt.Chart(concat.assign(feature_end=concat["feature"] + 1))
        .mark_rect()
        .encode(
            x=x.scale(domain=[0, d_model], nice=False),
            x2=alt.X2("feature_end:Q"),
            y=alt.Y(
                "q_label:O", sort=q_order, title=text["query"], axis=alt.Axis(labelOverlap=False, labelFontSize=10)
            ),
            color=alt.Color("value:Q", scale=alt.Scale(scheme="purpleorange", domainMid=0), title=text["value"]),
            tooltip=[
                alt.Tooltip("q_label:N", title=text["query"]),
                alt.Tooltip("head:O", title=text["head"]),
                alt.Tooltip("feature:Q", title=text["feature"]),
                alt.Tooltip("value:Q", title=text["value"], format=".3f"),
            ],
        )
    )
    bounds = pd.DataFrame({"feature": list(range(d_k, d_model, d_k))})
    rules = alt.Chart(bounds).mark_rule(color="#222", strokeWidth=1.5).encode(x=alt.X("feature:Q"))
    return (cells + rules).properties(
        title=text["title"],
        height=max(140, 18 * len(q_order)),
        autosize=FIT_X,
    )


def parameter_bars(sweep: pd.DataFrame, heads: int, text: Mapping[str, str]):
    """Parameter count of MultiHeadAttention(d_model, h) for every divisor h, the chosen h highlighted.

    sweep: heads, d_k, parameters. text: title, x, y, d_k.
    """
    data = sweep.assign(chosen=(sweep["heads"] == heads).map({True: "chosen", False: "other"}))
    base = alt.Chart().encode(  # data goes on the layer: Altair then need not compare the layers' data
        x=alt.X("heads:O", title=text["x"], axis=alt.Axis(labelAngle=0)),
        y=alt.Y("parameters:Q", title=text["y"]),
        tooltip=[
            alt.Tooltip("heads:O", title=text["x"]),
            alt.Tooltip("d_k:Q", title=text["d_k"]),
            alt.Tooltip("parameters:Q", title=text["y"], format=","),
        ],
    )
    bars = base.mark_bar().encode(color=alt.Color("chosen:N", scale=color_scale(["chosen", "other"]), legend=None))
    labels = base.mark_text(dy=-6, fontSize=11).encode(text=alt.Text("parameters:Q", format=","))
    return alt.layer(bars, labels, data=data).properties(title=text["title"], height=HEIGHT - 60, autosize=FIT_X)
