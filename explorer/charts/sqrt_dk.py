"""Charts for "Why divide by sqrt(d_k)".

Every title and axis label comes from the page (in the viewer's language) through `text`, a mapping with
the keys each builder lists; `names` maps the series keys "unscaled"/"scaled" to their legend labels.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, color_scale, measured_vs_theory_loglog, named_color


def score_histogram(
    bars: pd.DataFrame, curves: pd.DataFrame, series: str, band: tuple[float, float], text: Mapping[str, str]
):
    """Histogram of one series' scores, its theoretical density, and the band (lo, hi) shaded: mean +- 3 sigma.

    text: title, x, density.
    """
    b, c = bars[bars.series == series], curves[curves.series == series]
    hist = (
        alt.Chart(b)
        .mark_rect(opacity=0.75, color=color_scale([series]).range[0])
        .encode(
            x=alt.X("left:Q", title=text["x"]),
            x2="right:Q",
            y=alt.Y("density:Q", title=text["density"]),
            tooltip=[
                alt.Tooltip("left:Q", format=".2f"),
                alt.Tooltip("right:Q", format=".2f"),
                alt.Tooltip("density:Q", format=".4f"),
            ],
        )
    )
    theory = alt.Chart(c).mark_line(color="#222", strokeDash=[5, 3]).encode(x="x:Q", y="density:Q")
    shade = (
        alt.Chart(pd.DataFrame({"lo": [band[0]], "hi": [band[1]]}))
        .mark_rect(opacity=0.08, color="#444")
        .encode(x="lo:Q", x2="hi:Q")
    )
    return (shade + hist + theory).properties(title=text["title"], height=HEIGHT)


def overlaid_histograms(
    bars: pd.DataFrame,
    curves: pd.DataFrame,
    band: tuple[float, float],
    text: Mapping[str, str],
    names: Mapping[str, str],
):
    """Unscaled and scaled scores on one axis with their N(0, d_k) and N(0, 1) densities, the band (lo, hi) shaded.

    text: title, x, density.
    """
    hist = (
        alt.Chart(bars)
        .mark_rect(opacity=0.6)
        .encode(
            x=alt.X("left:Q", title=text["x"]),
            x2="right:Q",
            y=alt.Y("density:Q", title=text["density"]),
            color=named_color("series", names),
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
        alt.Chart(pd.DataFrame({"lo": [band[0]], "hi": [band[1]]}))
        .mark_rect(opacity=0.08, color="#444444")
        .encode(x=alt.X("lo:Q"), x2=alt.X2("hi:Q"))
    )
    return (band + hist + theory).properties(title=text["title"], height=HEIGHT)


def variance_loglog(df: pd.DataFrame, d_k: int, text: Mapping[str, str]):
    """Empirical variance against d_k on log-log axes, theory line, error bars and the current d_k.

    text: title, x, y.
    """
    return measured_vs_theory_loglog(
        df, x="d_k", current=d_k, x_title=text["x"], y_title=text["y"], title=text["title"]
    )


def softmax_bars(df: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str]):
    """One row's softmax weights, unscaled against scaled, side by side per key. text: title, x, y."""
    return (
        alt.Chart(df, title=text["title"])
        .mark_bar()
        .encode(
            x=alt.X("key:O", title=text["x"]),
            xOffset="series:N",
            y=alt.Y("weight:Q", title=text["y"], scale=alt.Scale(domain=[0, 1])),
            color=named_color("series", names),
            tooltip=["series", "key", alt.Tooltip("logit:Q", format=".2f"), alt.Tooltip("weight:Q", format=".4f")],
        )
        .properties(height=HEIGHT)
    )
