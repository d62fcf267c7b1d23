"""Charts for "Permutation equivariance".

Every title and axis label comes from the page (in the viewer's language) through `text`, a mapping with
the keys each builder lists; `variants` and `verdicts` map the keys in the tables to the labels shown.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, heatmap, label_expr, named_color

HEATMAP_HEIGHT = HEIGHT + 40  # room for title and axes; the plot itself stays near square in a third of the page
VERDICTS = ("equivariant", "broken")
SETTING_STROKE = alt.Scale(domain=["chosen above", "other"], range=["#222222", "transparent"])


def weights_heatmap(df: pd.DataFrame, matrix: str, text: Mapping[str, str], vmax: float):
    """One of A, A', P A P^T; every call with the same vmax shares one colour scale, 0..vmax.

    text: title, x, y, weight, query_token, key_token.
    """
    cells = df[df.matrix == matrix]
    return (
        heatmap(cells, x="key", y="query", value="weight", title=text["title"])
        .encode(
            x=alt.X("key:O", title=text["x"]),
            y=alt.Y("query:O", title=text["y"]),
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(scheme="blues", domain=[0, vmax]),
                title=text["weight"],
                legend=alt.Legend(gradientLength=120, format=".2f"),
            ),
            tooltip=[
                alt.Tooltip("query:O", title=text["y"]),
                alt.Tooltip("key:O", title=text["x"]),
                alt.Tooltip("query_token:O", title=text["query_token"]),
                alt.Tooltip("key_token:O", title=text["key_token"]),
                alt.Tooltip("weight:Q", title=text["weight"], format=".4f"),
            ],
        )
        .properties(height=HEATMAP_HEIGHT)
    )


def variant_errors_log(
    df: pd.DataFrame,
    current: str,
    floor: float,
    text: Mapping[str, str],
    variants: Mapping[str, str],
    verdicts: Mapping[str, str],
):
    """Equivariance error per variant as log-scale bars, the tolerance as a dashed rule, the current one outlined.

    Bars run from `floor`; an error of exactly 0 is drawn at the floor and labelled text["zero"].
    text: title, x, variant, verdict, error, tolerance, zero. variants, verdicts: the label of each key.
    """
    # Typed channels and mark properties only: alt.value/alt.condition dicts cost ~20 ms each to validate.
    data = df.assign(
        floor=floor,
        label=[(text["zero"] if z else f"{e:.1e}") for z, e in zip(df.exact_zero, df.error, strict=True)],
        setting=["chosen above" if v == current else "other" for v in df.variant],
        variant_name=df.variant.map(variants).fillna(df.variant),
        verdict_name=df.verdict.map(verdicts).fillna(df.verdict),
    )
    top = max(float(data.shown.max()), float(data.tolerance.max())) * 1e3
    x = alt.X(
        "shown:Q",
        scale=alt.Scale(type="log", domain=[floor, top]),
        axis=alt.Axis(format=".0e", tickCount=6),
        title=text["x"],
    )
    y = alt.Y("variant:N", sort=list(df.variant), title=None, axis=alt.Axis(labelExpr=label_expr(variants)))
    bars = (
        alt.Chart()  # the layer's data (below)
        .mark_bar(strokeWidth=2.5)
        .encode(
            x=x,
            x2=alt.X2("floor:Q"),
            y=y,
            color=named_color("verdict", {v: verdicts.get(v, v) for v in VERDICTS}, text["verdict"]),
            stroke=alt.Stroke("setting:N", scale=SETTING_STROKE, legend=None),
            tooltip=[
                alt.Tooltip("variant_name:N", title=text["variant"]),
                alt.Tooltip("error:Q", format=".3e", title=text["error"]),
                alt.Tooltip("tolerance:Q", format=".2e", title=text["tolerance"]),
                alt.Tooltip("verdict_name:N", title=text["verdict"]),
            ],
        )
    )
    labels = alt.Chart().mark_text(align="left", dx=5, fontSize=12).encode(x=x, y=y, text=alt.Text("label:N"))
    tol = alt.Chart(data.iloc[:1]).mark_rule(color="#444", strokeDash=[6, 3]).encode(x=alt.X("tolerance:Q"))
    tol_label = (
        alt.Chart(data.iloc[:1])
        .mark_text(align="center", baseline="bottom", y=-3, color="#444", text=text["tolerance"])
        .encode(x=alt.X("tolerance:Q"))
    )
    # one alt.layer, not bars + labels + ...: each + deep-copies the layers so far (12 of this chart's 28 ms)
    return alt.layer(bars, labels, tol, tol_label, data=data).properties(title=text["title"], height=HEIGHT)


def projection_heatmap(cells: pd.DataFrame, matrix: str, value: str, text: Mapping[str, str], limit: float):
    """Scores (diverging, -limit..limit) or weights (0..limit) of the "separate" or "shared" projections.

    cells: matrix, query, key, score, weight. text: title, x, y, value (the legend and tooltip title).
    """
    data = cells[cells.matrix == matrix]
    scale = (
        alt.Scale(scheme="blueorange", domain=[-limit, limit], domainMid=0)
        if value == "score"
        else alt.Scale(scheme="blues", domain=[0, limit])
    )
    return (
        heatmap(data, x="key", y="query", value=value, title=text["title"])
        .encode(
            x=alt.X("key:O", title=text["x"]),
            y=alt.Y("query:O", title=text["y"]),
            color=alt.Color(f"{value}:Q", scale=scale, title=text["value"], legend=alt.Legend(gradientLength=120)),
            tooltip=[
                alt.Tooltip("query:O", title=text["y"]),
                alt.Tooltip("key:O", title=text["x"]),
                alt.Tooltip(f"{value}:Q", title=text["value"], format=".4f"),
            ],
        )
        .properties(height=HEATMAP_HEIGHT)
    )
