"""Charts for "Permutation equivariance"."""

from __future__ import annotations

import altair as alt
import pandas as pd

from attn_core.charts.common import HEIGHT, heatmap

HEATMAP_HEIGHT = HEIGHT + 40  # room for title and axes; the plot itself stays near square in a third of the page
VERDICT_COLORS = alt.Scale(domain=["equivariant", "broken"], range=["#1b9e77", "#d95f02"])
SETTING_STROKE = alt.Scale(domain=["chosen above", "other"], range=["#222222", "transparent"])


def weights_heatmap(df: pd.DataFrame, matrix: str, title: str, vmax: float):
    """One of A, A', P A P^T; every call with the same vmax shares one colour scale, 0..vmax."""
    cells = df[df.matrix == matrix]
    return (
        heatmap(cells, x="key", y="query", value="weight", title=title)
        .encode(
            x=alt.X("key:O", title="key position j"),
            y=alt.Y("query:O", title="query position i"),
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(scheme="blues", domain=[0, vmax]),
                title="weight",
                legend=alt.Legend(gradientLength=120, format=".2f"),
            ),
            tooltip=[
                alt.Tooltip("query:O", title="query position i"),
                alt.Tooltip("key:O", title="key position j"),
                alt.Tooltip("query_token:O", title="query token"),
                alt.Tooltip("key_token:O", title="key token"),
                alt.Tooltip("weight:Q", format=".4f"),
            ],
        )
        .properties(height=HEATMAP_HEIGHT)
    )


def variant_errors_log(df: pd.DataFrame, current: str, floor: float):
    """Equivariance error per variant as log-scale bars, the tolerance as a dashed rule, the current one outlined.

    Bars run from `floor`; an error of exactly 0 is drawn at the floor and labelled "0 exactly".
    """
    # Typed channels and mark properties only: alt.value/alt.condition dicts cost ~20 ms each to validate.
    data = df.assign(
        floor=floor,
        label=[("0 exactly" if z else f"{e:.1e}") for z, e in zip(df.exact_zero, df.error, strict=True)],
        setting=["chosen above" if v == current else "other" for v in df.variant],
    )
    top = max(float(data.shown.max()), float(data.tolerance.max())) * 1e3
    x = alt.X(
        "shown:Q",
        scale=alt.Scale(type="log", domain=[floor, top]),
        axis=alt.Axis(format=".0e", tickCount=6),
        title="max |Attention(PX) − P·Attention(X)| (log scale)",
    )
    y = alt.Y("variant:N", sort=list(df.variant), title=None)
    bars = (
        alt.Chart(data)
        .mark_bar(strokeWidth=2.5)
        .encode(
            x=x,
            x2=alt.X2("floor:Q"),
            y=y,
            color=alt.Color("verdict:N", scale=VERDICT_COLORS, title="verdict"),
            stroke=alt.Stroke("setting:N", scale=SETTING_STROKE, legend=None),
            tooltip=[
                alt.Tooltip("variant:N"),
                alt.Tooltip("error:Q", format=".3e", title="error"),
                alt.Tooltip("tolerance:Q", format=".2e"),
                alt.Tooltip("verdict:N"),
            ],
        )
    )
    labels = alt.Chart(data).mark_text(align="left", dx=5, fontSize=12).encode(x=x, y=y, text=alt.Text("label:N"))
    tol = alt.Chart(data.iloc[:1]).mark_rule(color="#444", strokeDash=[6, 3]).encode(x=alt.X("tolerance:Q"))
    tol_label = (
        alt.Chart(data.iloc[:1])
        .mark_text(align="center", baseline="bottom", y=-3, color="#444", text="rounding tolerance")
        .encode(x=alt.X("tolerance:Q"))
    )
    return (bars + labels + tol + tol_label).properties(title="The error of each variant", height=HEIGHT)
