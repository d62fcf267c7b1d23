"""Shared chart conventions: sizes, palettes, the line/point pieces several pages reuse."""

from __future__ import annotations

import altair as alt
import pandas as pd

HEIGHT = 280
# Colour-blind-safe pairs: unscaled/scaled and theory lines are recognisable on every page.
SERIES_COLORS = {"unscaled": "#d95f02", "scaled": "#1b9e77", "theory": "#444444"}


def color_scale(domain: list[str]) -> alt.Scale:
    palette = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
    return alt.Scale(
        domain=domain, range=[SERIES_COLORS.get(d, palette[i % len(palette)]) for i, d in enumerate(domain)]
    )


def heatmap(df: pd.DataFrame, *, x: str, y: str, value: str, title: str, scheme: str = "blues", fmt: str = ".3f"):
    """A matrix as a heatmap: one row of df per cell, columns x (col index), y (row index), value."""
    return (
        alt.Chart(df, title=title)
        .mark_rect()
        .encode(
            x=alt.X(f"{x}:O", title=x),
            y=alt.Y(f"{y}:O", title=y),
            color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme=scheme), title=value),
            tooltip=[alt.Tooltip(f"{y}:O"), alt.Tooltip(f"{x}:O"), alt.Tooltip(f"{value}:Q", format=fmt)],
        )
        .properties(height=HEIGHT)
    )
