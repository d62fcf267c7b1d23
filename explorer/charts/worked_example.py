"""Charts and LaTeX renderings for "Worked example, step by step".

Titles and axis labels come from the page (in the viewer's language) through `text`, a mapping with the keys
each builder lists. The LaTeX renderings hold only symbols and numbers, shared by both languages.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd

from explorer.charts.common import HEIGHT, heatmap


def _num(x: float, digits: int) -> str:
    """A number for LaTeX: integers stay integers, -0 becomes 0."""
    x = 0.0 if abs(x) < 0.5 * 10**-digits else float(x)
    return f"{x:.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:.{digits}f}"


def bmatrix(frame: pd.DataFrame | np.ndarray, digits: int = 3) -> str:
    """A matrix as a LaTeX bmatrix with `digits` decimals."""
    rows = np.asarray(frame, dtype=np.float64)
    return r"\begin{bmatrix}" + r"\\".join(" & ".join(_num(x, digits) for x in row) for row in rows) + r"\end{bmatrix}"


def dot_expansion(detail: dict, digits: int = 3) -> str:
    """S_ij = q_i . k_j written out term by term for every key j, as a LaTeX aligned block."""
    i, lines = detail["token"], []
    for j, (k_row, s) in enumerate(zip(detail["k"], detail["scores"], strict=True)):
        terms = " + ".join(rf"({_num(a, digits)})({_num(b, digits)})" for a, b in zip(detail["q"], k_row, strict=True))
        lines.append(rf"S_{{{i}{j + 1}}} &= q_{i}\cdot k_{j + 1} = {terms} = {_num(s, digits)}")
    return r"\begin{aligned}" + r"\\".join(lines) + r"\end{aligned}"


def softmax_expansion(detail: dict, digits: int = 4) -> str:
    """alpha_ij = e^(s_ij - m_i) / sum_k e^(s_ik - m_i) with the numbers of row i, one line per stage."""
    i = detail["token"]
    top = ", ".join(_num(x, digits) for x in detail["exp_shifted"])
    weights = ", ".join(_num(x, digits) for x in detail["weights"])
    return (
        rf"\begin{{aligned}}\alpha_{{{i}j}}&=\frac{{e^{{s'_{{{i}j}}-m_{i}}}}}{{\sum_k e^{{s'_{{{i}k}}-m_{i}}}}}"
        rf"=\frac{{[{top}]}}{{{_num(detail['denominator'], digits)}}}\\&=[{weights}]\end{{aligned}}"
    )


def output_expansion(detail: dict, digits: int = 3) -> str:
    """z_i = sum_j alpha_ij v_j with the numbers of row i, one term per line."""
    i = detail["token"]
    terms = [
        rf"{_num(a, digits)}\,[{', '.join(_num(x, digits) for x in v_row)}]"
        for a, v_row in zip(detail["weights"], detail["v"], strict=True)
    ]
    result = ", ".join(_num(x, digits) for x in detail["output"])
    return rf"\begin{{aligned}}z_{i}&=" + r"\\&\quad+ ".join(terms) + rf"\\&=[{result}]\end{{aligned}}"


def weights_heatmap(cells: pd.DataFrame, text: Mapping[str, str]):
    """The attention weights, one cell per (query, key), each labelled with its value.

    text: title, x, y, color.
    """
    base = heatmap(cells, x="key", y="query", value="weight", title=text["title"]).encode(
        x=alt.X("key:O", title=text["x"]),
        y=alt.Y("query:O", title=text["y"]),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues"), title=text["color"]),
        tooltip=[
            alt.Tooltip("query:O", title=text["y"]),
            alt.Tooltip("key:O", title=text["x"]),
            alt.Tooltip("weight:Q", title=text["color"], format=".4f"),
        ],
    )
    numbers = (
        alt.Chart(cells)
        .mark_text(fontSize=14)
        .encode(
            x="key:O",
            y="query:O",
            text=alt.Text("weight:Q", format=".3f"),
            color=alt.condition(alt.datum.weight > 0.5, alt.value("white"), alt.value("black")),
        )
    )
    return (base + numbers).properties(height=min(HEIGHT, 70 * cells["query"].nunique() + 40))


def contribution_bars(parts: pd.DataFrame, text: Mapping[str, str]):
    """Token i's output per dimension, stacked from its pieces alpha_ij v_j.

    text: title, x, y, color (the page fills in the token's number).
    """
    return (
        alt.Chart(parts, title=text["title"])
        .mark_bar()
        .encode(
            x=alt.X("dim:O", title=text["x"], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("sum(value):Q", title=text["y"]),
            color=alt.Color("source:N", title=text["color"]),
            tooltip=[
                alt.Tooltip("source:N", title=text["color"]),
                alt.Tooltip("dim:O", title=text["x"]),
                alt.Tooltip("weight:Q", title="α", format=".4f"),
                alt.Tooltip("value:Q", title=text["y"], format=".4f"),
            ],
        )
    )
