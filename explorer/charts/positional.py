"""Charts for "Positional encoding".

Encodings are channel objects (alt.X("a:Q"), alt.Tooltip(...)), never bare shorthand strings, which Altair
resolves against the whole schema at ~2 ms each: seven charts redraw whenever a control moves.
Every title and axis label comes from the page (in the viewer's language) through `text`, a mapping with the
keys each builder lists; `names` maps series keys to legend labels. Pure formulas (cos(pos · w_i)) stay here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, color_scale, heatmap, named_color

ERROR_FLOOR = 1e-18  # exact zeros drawn on a log axis
SIDE = 240  # the unit circle is drawn square
UNIT = alt.Scale(scheme="redblue", domain=[-1, 1])  # sines, cosines and rotation entries all live in [-1, 1]


def encoding_heatmap(df: pd.DataFrame, text: Mapping[str, str]):
    """PE as positions (rows) x dimensions (columns): fast sinusoids on the left, slow ones on the right.

    text: title, x, y, color.
    """
    return heatmap(df, x="dimension", y="position", value="value", title=text["title"]).encode(
        x=alt.X("dimension:O", title=text["x"]),
        y=alt.Y("position:O", title=text["y"], axis=alt.Axis(labelOverlap="greedy")),
        color=alt.Color("value:Q", scale=UNIT, title=text["color"]),
        tooltip=_cell_tooltip("position", "dimension", "value", text),
    )


def _cell_tooltip(y: str, x: str, value: str, text: Mapping[str, str]) -> list[alt.Tooltip]:
    """A heatmap cell's tooltip, each row named like its axis."""
    return [
        alt.Tooltip(f"{y}:O", title=text["y"]),
        alt.Tooltip(f"{x}:O", title=text["x"]),
        alt.Tooltip(f"{value}:Q", title=text["color"], format=".4f"),
    ]


def gram_heatmap(df: pd.DataFrame, text: Mapping[str, str]):
    """p_i . p_j for every pair: constant along each diagonal (a Toeplitz matrix). text: title, x, y, color."""
    return heatmap(df, x="j", y="i", value="dot", title=text["title"], scheme="viridis").encode(
        x=alt.X("j:O", title=text["x"], axis=alt.Axis(labelOverlap="greedy")),
        y=alt.Y("i:O", title=text["y"], axis=alt.Axis(labelOverlap="greedy")),
        color=alt.Color("dot:Q", scale=alt.Scale(scheme="viridis"), title=text["color"]),
        tooltip=_cell_tooltip("i", "j", "dot", text),
    )


def offset_collapse(df: pd.DataFrame, text: Mapping[str, str]):
    """Smallest and largest p_i . p_j among the pairs of each offset, on the curve sum_k cos(offset w_k).

    text: title, x, y, pairs, smallest, largest, theory (the last four name the tooltip's rows).
    """
    lo_color, hi_color = color_scale(["lo", "hi"]).range
    x = alt.X("offset:Q", title=text["x"])
    tooltip = [
        alt.Tooltip("offset:Q", title=text["x"]),
        alt.Tooltip("pairs:Q", title=text["pairs"]),
        alt.Tooltip("lo:Q", title=text["smallest"], format=".6f"),
        alt.Tooltip("hi:Q", title=text["largest"], format=".6f"),
        alt.Tooltip("theory:Q", title=text["theory"], format=".6f"),
    ]
    theory = alt.Chart(df).mark_line(color="#444", strokeDash=[5, 3]).encode(x=x, y=alt.Y("theory:Q"))
    lo = alt.Chart(df).mark_point(color=lo_color, size=30).encode(x=x, y=alt.Y("lo:Q"))
    hi = (
        alt.Chart(df)
        .mark_point(color=hi_color, shape="cross", size=25)
        .encode(x=x, y=alt.Y("hi:Q", title=text["y"]), tooltip=tooltip)
    )
    return alt.layer(theory, lo, hi, title=text["title"], height=HEIGHT)


def shift_matrix_heatmap(df: pd.DataFrame, text: Mapping[str, str]):
    """M_k: block diagonal, one 2x2 rotation per frequency. text: title (the page names k), x, y, color."""
    return heatmap(df, x="col", y="row", value="value", title=text["title"]).encode(
        x=alt.X("col:O", title=text["x"], axis=alt.Axis(labelOverlap="greedy")),
        y=alt.Y("row:O", title=text["y"], axis=alt.Axis(labelOverlap="greedy")),
        color=alt.Color("value:Q", scale=UNIT, title=text["color"]),
        tooltip=_cell_tooltip("row", "col", "value", text),
    )


def rotation_circle(df: pd.DataFrame, freq: int, text: Mapping[str, str]):
    """One frequency's (cos, sin) for every position on the unit circle; pos and pos + k joined to the origin.

    text: title (the page names the frequency), role, position (the tooltip's rows).
    """
    x = alt.X("cos:Q", title=f"cos(pos · w_{freq})", scale=alt.Scale(domain=[-1.1, 1.1]))
    y = alt.Y("sin:Q", title=f"sin(pos · w_{freq})", scale=alt.Scale(domain=[-1.1, 1.1]))
    roles = color_scale(["pos", "pos + k"])
    tooltip = [
        alt.Tooltip("role:N", title=text["role"]),
        alt.Tooltip("position:Q", title=text["position"]),
        alt.Tooltip("cos:Q", format=".4f"),
        alt.Tooltip("sin:Q", format=".4f"),
    ]
    all_pos = (
        alt.Chart(df[df.role == "position"])
        .mark_circle(size=30, color="#bbbbbb")
        .encode(x=x, y=y, tooltip=tooltip[1:])  # plain positions: no role to name
    )
    ends = df[df.role != "position"]
    spokes = (
        alt.Chart(ends.assign(x0=0.0, y0=0.0))
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("x0:Q"),
            y=alt.Y("y0:Q"),
            x2=alt.X2("cos"),
            y2=alt.Y2("sin"),
            color=alt.Color("role:N", scale=roles, legend=None),
        )
    )
    dots = (
        alt.Chart(ends)
        .mark_circle(size=140)
        .encode(
            x=x,
            y=y,
            color=alt.Color("role:N", scale=roles, title=None, legend=alt.Legend(orient="bottom")),
            tooltip=tooltip,
        )
    )
    return alt.layer(all_pos, spokes, dots, title=text["title"], height=SIDE, width=SIDE)


def aliasing(df: pd.DataFrame, collision: int | None, text: Mapping[str, str], names: Mapping[str, str]):
    """Distance of each position's code from position 0's: zeros are positions the code cannot tell apart.

    text: title, x, y, code; names: legend labels of the codes "one period" and "all periods".
    """
    x = alt.X("position:Q", title=text["x"])
    color = named_color("code", names)
    color["legend"]["orient"] = "bottom"
    shown = " : ".join(f"datum.code === {json.dumps(k)} ? {json.dumps(v)}" for k, v in names.items())
    lines = (
        alt.Chart(df)
        .mark_line(point=alt.OverlayMarkDef(size=18))
        .encode(
            x=x,
            y=alt.Y("distance:Q", title=text["y"]),
            color=color,
            tooltip=[
                alt.Tooltip("shown:N", title=text["code"]),
                alt.Tooltip("position:Q", title=text["x"]),
                alt.Tooltip("distance:Q", title=text["y"], format=".2e"),
            ],
        )
        .transform_calculate(shown=f"{shown} : datum.code")
    )
    layers = [lines]
    if collision is not None and collision <= df.position.max():
        rule = alt.Chart(pd.DataFrame({"position": [collision]}))
        layers.append(rule.mark_rule(color="#7570b3", strokeDash=[4, 3], strokeWidth=2).encode(x=x))
    return alt.layer(*layers, title=text["title"], height=HEIGHT)


def equivariance(df: pd.DataFrame, amplitude: float, text: Mapping[str, str]):
    """Equivariance error against the amplitude of the added encoding (log scale), the chosen amplitude marked.

    text: title, x, y.
    """
    x = alt.X("amplitude:Q", title=text["x"])
    line = (
        alt.Chart(df.assign(shown=df.error.clip(lower=ERROR_FLOOR)))
        .mark_line(point=alt.OverlayMarkDef(color="#d95f02"), color="#d95f02")
        .encode(
            x=x,
            y=alt.Y("shown:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"), title=text["y"]),
            tooltip=[alt.Tooltip("amplitude:Q", format=".1f"), alt.Tooltip("error:Q", format=".2e")],
        )
    )
    now = alt.Chart(pd.DataFrame({"amplitude": [amplitude]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return alt.layer(line, now, title=text["title"], height=HEIGHT)
