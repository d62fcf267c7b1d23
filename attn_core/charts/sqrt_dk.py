"""Charts for "Why divide by sqrt(d_k)"."""

from __future__ import annotations

import altair as alt
import pandas as pd

from attn_core.charts.common import HEIGHT, color_scale, measured_vs_theory_loglog


def score_histogram(bars: pd.DataFrame, curves: pd.DataFrame, series: str, band: float, title: str):
    """Histogram of one series' scores, its theoretical density, and the +-3 sigma band shaded."""
    b, c = bars[bars.series == series], curves[curves.series == series]
    hist = (
        alt.Chart(b)
        .mark_rect(opacity=0.75, color=color_scale([series]).range[0])
        .encode(
            x=alt.X("left:Q", title="score q·k" + (" / √d_k" if series == "scaled" else "")),
            x2="right:Q",
            y=alt.Y("density:Q", title="density"),
            tooltip=[
                alt.Tooltip("left:Q", format=".2f"),
                alt.Tooltip("right:Q", format=".2f"),
                alt.Tooltip("density:Q", format=".4f"),
            ],
        )
    )
    theory = alt.Chart(c).mark_line(color="#222", strokeDash=[5, 3]).encode(x="x:Q", y="density:Q")
    shade = (
        alt.Chart(pd.DataFrame({"lo": [-band], "hi": [band]}))
        .mark_rect(opacity=0.08, color="#444")
        .encode(x="lo:Q", x2="hi:Q")
    )
    return (shade + hist + theory).properties(title=title, height=HEIGHT)


def overlaid_histograms(bars: pd.DataFrame, curves: pd.DataFrame):
    """Unscaled and scaled scores on one axis with their N(0, d_k) and N(0, 1) densities.

    The band [-3, 3] is where softmax still responds to a change of its inputs.
    """
    domain = ["unscaled", "scaled"]
    color = alt.Color("series:N", scale=color_scale(domain), title=None)
    hist = (
        alt.Chart(bars)
        .mark_rect(opacity=0.6)
        .encode(
            x=alt.X("left:Q", title="score (unscaled q·k, or q·k / √d_k)"),
            x2="right:Q",
            y=alt.Y("density:Q", title="density"),
            color=color,
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("left:Q", format=".2f"),
                alt.Tooltip("right:Q", format=".2f"),
                alt.Tooltip("density:Q", format=".4f"),
            ],
        )
    )
    theory = (
        alt.Chart(curves)
        .mark_line(strokeDash=[5, 3], color="#222222")
        .encode(x=alt.X("x:Q"), y=alt.Y("density:Q"), detail=alt.Detail("series:N"))
    )
    band = (
        alt.Chart(pd.DataFrame({"lo": [-3.0], "hi": [3.0]}))
        .mark_rect(opacity=0.08, color="#444444")
        .encode(x=alt.X("lo:Q"), x2=alt.X2("hi:Q"))
    )
    return (band + hist + theory).properties(
        title="Both on one axis: dashed N(0, d_k) and N(0, 1); shaded [-3, 3]", height=HEIGHT
    )


def variance_loglog(df: pd.DataFrame, d_k: int):
    """Empirical variance against d_k on log-log axes, theory line, error bars and the current d_k."""
    return measured_vs_theory_loglog(
        df,
        x="d_k",
        current=d_k,
        x_title="d_k (log scale)",
        y_title="Var(q·k) (log scale)",
        title="Empirical variance (±2 SE) follows the theory line",
    )


def softmax_bars(df: pd.DataFrame):
    """One row's softmax weights, unscaled against scaled, side by side per key."""
    return (
        alt.Chart(df, title="One query's attention weights over its keys")
        .mark_bar()
        .encode(
            x=alt.X("key:O", title="key"),
            xOffset="series:N",
            y=alt.Y("weight:Q", title="softmax weight", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("series:N", scale=color_scale(["unscaled", "scaled"]), title=None),
            tooltip=["series", "key", alt.Tooltip("logit:Q", format=".2f"), alt.Tooltip("weight:Q", format=".4f")],
        )
        .properties(height=HEIGHT)
    )
