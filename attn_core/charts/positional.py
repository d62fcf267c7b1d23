"""Charts for "Positional encoding".

Encodings are channel objects (alt.X("a:Q"), alt.Tooltip(...)), never bare shorthand strings, which Altair
resolves against the whole schema at ~2 ms each: seven charts redraw whenever a control moves.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from attn_core.charts.common import HEIGHT, color_scale, heatmap

ERROR_FLOOR = 1e-18  # exact zeros drawn on a log axis
SIDE = 240  # the unit circle is drawn square
UNIT = alt.Scale(scheme="redblue", domain=[-1, 1])  # sines, cosines and rotation entries all live in [-1, 1]


def encoding_heatmap(df: pd.DataFrame):
    """PE as positions (rows) x dimensions (columns): fast sinusoids on the left, slow ones on the right."""
    return heatmap(df, x="dimension", y="position", value="value", title="PE(pos, dim): one row per position").encode(
        x=alt.X("dimension:O", title="dimension (sin, cos pairs; frequency falls to the right)"),
        y=alt.Y("position:O", title="position pos", axis=alt.Axis(labelOverlap="greedy")),
        color=alt.Color("value:Q", scale=UNIT, title="PE"),
    )


def gram_heatmap(df: pd.DataFrame):
    """p_i . p_j for every pair: constant along each diagonal (a Toeplitz matrix)."""
    return heatmap(df, x="j", y="i", value="dot", title="Gram matrix p_i · p_j", scheme="viridis").encode(
        x=alt.X("j:O", title="position j", axis=alt.Axis(labelOverlap="greedy")),
        y=alt.Y("i:O", title="position i", axis=alt.Axis(labelOverlap="greedy")),
    )


def offset_collapse(df: pd.DataFrame):
    """Smallest and largest p_i . p_j among the pairs of each offset, on the curve sum_k cos(offset w_k)."""
    lo_color, hi_color = color_scale(["lo", "hi"]).range
    x = alt.X("offset:Q", title="offset i − j")
    tooltip = [
        alt.Tooltip("offset:Q"),
        alt.Tooltip("pairs:Q", title="pairs (i, j)"),
        alt.Tooltip("lo:Q", title="smallest p_i·p_j", format=".6f"),
        alt.Tooltip("hi:Q", title="largest p_i·p_j", format=".6f"),
        alt.Tooltip("theory:Q", format=".6f"),
    ]
    theory = alt.Chart(df).mark_line(color="#444", strokeDash=[5, 3]).encode(x=x, y=alt.Y("theory:Q"))
    lo = alt.Chart(df).mark_point(color=lo_color, size=30).encode(x=x, y=alt.Y("lo:Q"))
    hi = (
        alt.Chart(df)
        .mark_point(color=hi_color, shape="cross", size=25)
        .encode(x=x, y=alt.Y("hi:Q", title="p_i · p_j"), tooltip=tooltip)
    )
    return alt.layer(theory, lo, hi, title="All n² values of p_i · p_j against i − j", height=HEIGHT)


def shift_matrix_heatmap(df: pd.DataFrame, k: int):
    """M_k: block diagonal, one 2x2 rotation per frequency."""
    title = f"M_k for k = {k}: one 2×2 rotation per frequency"
    return heatmap(df, x="col", y="row", value="value", title=title).encode(
        x=alt.X("col:O", title="column", axis=alt.Axis(labelOverlap="greedy")),
        y=alt.Y("row:O", title="row", axis=alt.Axis(labelOverlap="greedy")),
        color=alt.Color("value:Q", scale=UNIT, title="entry"),
    )


def rotation_circle(df: pd.DataFrame, freq: int):
    """One frequency's (cos, sin) for every position on the unit circle; pos and pos + k joined to the origin."""
    x = alt.X("cos:Q", title=f"cos(pos · w_{freq})", scale=alt.Scale(domain=[-1.1, 1.1]))
    y = alt.Y("sin:Q", title=f"sin(pos · w_{freq})", scale=alt.Scale(domain=[-1.1, 1.1]))
    roles = color_scale(["pos", "pos + k"])
    tooltip = [
        alt.Tooltip("role:N"),
        alt.Tooltip("position:Q"),
        alt.Tooltip("cos:Q", format=".4f"),
        alt.Tooltip("sin:Q", format=".4f"),
    ]
    all_pos = (
        alt.Chart(df[df.role == "position"]).mark_circle(size=30, color="#bbbbbb").encode(x=x, y=y, tooltip=tooltip)
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
    return alt.layer(all_pos, spokes, dots, title=f"Frequency {freq}: (cos, sin)", height=SIDE, width=SIDE)


def aliasing(df: pd.DataFrame, collision: int | None):
    """Distance of each position's code from position 0's: zeros are positions the code cannot tell apart."""
    codes = list(dict.fromkeys(df.code))
    x = alt.X("position:Q", title="position p")
    lines = (
        alt.Chart(df)
        .mark_line(point=alt.OverlayMarkDef(size=18))
        .encode(
            x=x,
            y=alt.Y("distance:Q", title="‖code(p) − code(0)‖"),
            color=alt.Color("code:N", scale=color_scale(codes), title=None, legend=alt.Legend(orient="bottom")),
            tooltip=[alt.Tooltip("code:N"), alt.Tooltip("position:Q"), alt.Tooltip("distance:Q", format=".2e")],
        )
    )
    layers = [lines]
    if collision is not None and collision <= df.position.max():
        rule = alt.Chart(pd.DataFrame({"position": [collision]}))
        layers.append(rule.mark_rule(color="#7570b3", strokeDash=[4, 3], strokeWidth=2).encode(x=x))
    return alt.layer(*layers, title="‖code(p) − code(0)‖: every zero is a collision", height=HEIGHT)


def equivariance(df: pd.DataFrame, amplitude: float):
    """Equivariance error against the amplitude of the added encoding (log scale), the chosen amplitude marked."""
    x = alt.X("amplitude:Q", title="amplitude a of the encoding (X + a·PE)")
    line = (
        alt.Chart(df.assign(shown=df.error.clip(lower=ERROR_FLOOR)))
        .mark_line(point=alt.OverlayMarkDef(color="#d95f02"), color="#d95f02")
        .encode(
            x=x,
            y=alt.Y("shown:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"), title="max |f(PX) − P f(X)|"),
            tooltip=[alt.Tooltip("amplitude:Q", format=".1f"), alt.Tooltip("error:Q", format=".2e")],
        )
    )
    now = alt.Chart(pd.DataFrame({"amplitude": [amplitude]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x)
    return alt.layer(line, now, title="Shuffle the tokens: does the output shuffle the same way?", height=HEIGHT)
