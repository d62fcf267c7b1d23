"""Charts for "Why divide by sqrt(d_k)"."""

from __future__ import annotations

import altair as alt
import pandas as pd

from attn_core.charts.common import HEIGHT, color_scale


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


def variance_loglog(df: pd.DataFrame, d_k: int):
    """Empirical variance against d_k on log-log axes, theory line, error bars and the current d_k."""
    x = alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)")
    y_scale = alt.Scale(type="log")
    theory = (
        alt.Chart(df)
        .mark_line(color="#222", strokeDash=[5, 3])
        .encode(x=x, y=alt.Y("theory:Q", scale=y_scale, title="Var(q·k) (log scale)"))
    )
    points = (
        alt.Chart(df)
        .mark_point(filled=True, size=70, color="#d95f02")
        .encode(
            x=x,
            y=alt.Y("empirical:Q", scale=y_scale),
            tooltip=[
                "d_k",
                alt.Tooltip("empirical:Q", format=".2f"),
                alt.Tooltip("stderr:Q", format=".2f"),
                alt.Tooltip("theory:Q", format=".2f"),
            ],
        )
    )
    bars = (
        alt.Chart(df.assign(lo=df.empirical - 2 * df.stderr, hi=df.empirical + 2 * df.stderr))
        .mark_rule(color="#d95f02")
        .encode(x=x, y=alt.Y("lo:Q", scale=y_scale), y2="hi:Q")
    )
    now = alt.Chart(pd.DataFrame({"d_k": [d_k]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return (theory + bars + points + now).properties(
        title="Empirical variance (±2 SE) follows the theory line", height=HEIGHT
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
