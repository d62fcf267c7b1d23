"""Charts for "Geometry and kernel regression".

The charts in wide columns keep Streamlit's default height: a fixed 280 px in a half-page column
squashes the plot and clips the y-axis title (Streamlit 1.67).

Every title, axis label and mark label comes from the page (in the viewer's language) through `text`, a
mapping with the keys each builder lists; `names` maps a DataFrame's series keys to their legend labels.
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd

from explorer.charts.common import measured_vs_theory_loglog, named_color

SQUARE = 430  # px: the 2-D picture keeps equal units on both axes
VALUE_COLOR, OUTPUT_COLOR, QUERY_COLOR, HULL_COLOR = "#1b9e77", "#d95f02", "#7570b3", "#666666"


def _square_domain(*frames: tuple[pd.DataFrame, str, str], margin: float = 0.3) -> tuple[list[float], list[float]]:
    """Axis domains with the same span on x and y, so that angles and distances look right."""
    xs = np.concatenate([f[x].to_numpy() for f, x, _ in frames])
    ys = np.concatenate([f[y].to_numpy() for f, _, y in frames])
    cx, cy = (xs.min() + xs.max()) / 2, (ys.min() + ys.max()) / 2
    half = max(xs.max() - xs.min(), ys.max() - ys.min()) / 2 + margin
    return [cx - half, cx + half], [cy - half, cy + half]


def hull_picture(
    points: pd.DataFrame, hull: pd.DataFrame, summary: dict, query: tuple[float, float], text: Mapping[str, str]
):
    """Values sized by their weight, their convex hull, the query's direction, the centroid and the output.

    text: title, x, y, and the labels of the marks output, centroid, query.
    """
    marks = pd.DataFrame(
        {
            "point": [text["output"], text["centroid"], text["query"]],
            "x": [summary["output"][0], summary["centroid"][0], query[0]],
            "y": [summary["output"][1], summary["centroid"][1], query[1]],
        }
    )
    xd, yd = _square_domain((points, "x", "y"), (marks, "x", "y"))
    x = alt.X("x:Q", scale=alt.Scale(domain=xd, nice=False), title=text["x"])
    y = alt.Y("y:Q", scale=alt.Scale(domain=yd, nice=False), title=text["y"])
    tip = [alt.Tooltip("x:Q", format=".3f"), alt.Tooltip("y:Q", format=".3f")]
    ray = pd.DataFrame({"order": [0, 1], "x": [0.0, query[0]], "y": [0.0, query[1]]})
    outlines = pd.concat([hull.assign(line="convex hull"), ray.assign(line="direction of q")], ignore_index=True)
    lines = (
        alt.Chart(outlines)
        .mark_line()
        .encode(
            x=x,
            y=y,
            order="order:Q",
            detail="line:N",
            color=alt.Color("line:N", scale=alt.Scale(range=[HULL_COLOR, QUERY_COLOR]), legend=None),
            strokeDash=alt.StrokeDash("line:N", scale=alt.Scale(range=[[6, 3], [2, 2]]), legend=None),
        )
    )
    values = (
        alt.Chart(points)
        .mark_circle(color=VALUE_COLOR, opacity=0.75, stroke="#0b5e47", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            size=alt.Size("attention:Q", scale=alt.Scale(domain=[0, 1], range=list(VALUE_SIZES)), legend=None),
            tooltip=["point:N", *tip, alt.Tooltip("logit:Q", format=".3f"), alt.Tooltip("attention:Q", format=".4f")],
        )
    )
    names = list(marks.point)
    legend = alt.Legend(title=None, orient="bottom", direction="horizontal", symbolSize=200, labelFontSize=13)
    special = (
        alt.Chart(marks)
        .mark_point(size=360, filled=True, opacity=1, stroke="#222222", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            # named in a legend, not by a text beside the mark: the centroid and the output can sit on a value's
            # label (or on each other), and a legend never overlaps the picture
            shape=alt.Shape(
                "point:N", scale=alt.Scale(domain=names, range=["diamond", "cross", "triangle-up"]), legend=legend
            ),
            color=alt.Color(
                "point:N", scale=alt.Scale(domain=names, range=[OUTPUT_COLOR, HULL_COLOR, QUERY_COLOR]), legend=None
            ),
            tooltip=["point:N", *tip],
        )
    )
    label = {"fontSize": LABEL_FONT, "fontWeight": "bold", "align": "center", "baseline": "middle"}
    places = _label_places(points, marks, [hull, ray], xd)
    base = alt.Chart(places).encode(x=x, y=y, text="point:N")
    halo = base.mark_text(**label, color="white", stroke="white", strokeWidth=4)  # legible on the grid lines
    labels = base.mark_text(**label, color="#333333")
    return (
        alt.layer(lines, values, special, halo, labels)  # one layer: each + deep-copies the layers so far
        .resolve_scale(color="independent", size="independent")  # the outlines and markers keep their own colours
        # pad: the plot itself SQUARE x SQUARE, title and legend around it (Streamlit's default, fit, squeezed them
        # into 430 px and the plot to about 430 x 300: y units 0.7 of x units, angles and distances wrong)
        .properties(title=text["title"], width=SQUARE, height=SQUARE, autosize=alt.AutoSizeParams(type="pad"))
    )


LABEL_FONT = 13  # px, bold: a value's name
VALUE_SIZES = (20, 1400)  # px² of a value's dot at weight 0 and 1
MARKER_RADIUS = 16  # px: the output's, centroid's and query's markers (size 360) with their outline
# Where a value's name may go, tried in this order: up-right first, as before; then around the dot
_DIRECTIONS = [(1, 1), (1, 0), (0, 1), (1, -1), (-1, 1), (-1, 0), (0, -1), (-1, -1)]


def _label_places(points: pd.DataFrame, marks: pd.DataFrame, lines: list[pd.DataFrame], xd: list[float]):
    """Each value's name beside its dot where it covers no dot, marker, line or other name, if such a place is
    among 24 around the dot (else the place that covers least): point, x, y in data units.

    Works in the plot's pixels (SQUARE wide over the domain xd, equal units on both axes); projector mode grows
    the plot, the fonts and the markers by one factor, so the places stay clear there too."""
    scale = SQUARE / (xd[1] - xd[0])  # px per unit
    dots = [
        (px, py, np.sqrt((VALUE_SIZES[0] + a * (VALUE_SIZES[1] - VALUE_SIZES[0])) / np.pi))
        for px, py, a in zip(points.x * scale, points.y * scale, points.attention, strict=True)
    ]
    dots += [(px, py, MARKER_RADIUS) for px, py in zip(marks.x * scale, marks.y * scale, strict=True)]
    samples = np.concatenate(
        [np.zeros((0, 2))] + [_along(line.x.to_numpy() * scale, line.y.to_numpy() * scale) for line in lines]
    )
    taken, rows = [], []
    for name, (px, py, r) in zip(points.point, dots, strict=False):
        w, h = 0.62 * LABEL_FONT * len(str(name)) + 4, 1.4 * LABEL_FONT  # the text's box, ascent to descent
        boxes = [
            (px + ux * (r + gap + w / 2), py + uy * (r + gap + h / 2), w, h)
            for gap in (6, 14, 24)  # next to the dot if there is room, else a little further out
            for ux, uy in _DIRECTIONS
        ]
        best = min(boxes, key=lambda box: _covered(box, dots, samples, taken))
        taken.append(best)
        rows.append({"point": name, "x": best[0] / scale, "y": best[1] / scale})
    return pd.DataFrame(rows)


def _along(xs: np.ndarray, ys: np.ndarray, step: float = 2.0) -> np.ndarray:
    """Points every `step` px along a polyline, as an (m, 2) array."""
    parts = [np.zeros((0, 2))]
    for x0, y0, x1, y1 in zip(xs[:-1], ys[:-1], xs[1:], ys[1:], strict=True):
        k = max(2, int(np.hypot(x1 - x0, y1 - y0) / step) + 1)
        parts.append(np.column_stack([np.linspace(x0, x1, k), np.linspace(y0, y1, k)]))
    return np.concatenate(parts)


def _covered(box, dots, samples: np.ndarray, taken) -> int:
    """How many dots, line points and names a label's box (centre x, y, width, height in px) covers."""
    cx, cy, w, h = box
    near = sum(abs(cx - x) < w / 2 + r and abs(cy - y) < h / 2 + r for x, y, r in dots)  # a dot as its square
    on_line = int(np.sum((np.abs(samples[:, 0] - cx) < w / 2) & (np.abs(samples[:, 1] - cy) < h / 2)))
    names = sum(abs(cx - x) < (w + tw) / 2 and abs(cy - y) < (h + th) / 2 for x, y, tw, th in taken)
    return near + on_line + names


def regression_curves(samples: pd.DataFrame, curves: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str]):
    """Noisy samples, the true function and both kernels' Nadaraya-Watson predictions.

    text: title, x, y, legend; names: the series "truth", "gaussian", "exponential" (in that order: their colours).
    """
    dots = (
        alt.Chart(samples)
        .mark_circle(color="#999999", size=36)
        .encode(
            x=alt.X("x:Q", title=text["x"]),
            y=alt.Y("y:Q", title=text["y"]),
            tooltip=[alt.Tooltip("x:Q", format=".3f"), alt.Tooltip("y:Q", format=".3f")],
        )
    )
    lines = (
        alt.Chart(curves)
        .mark_line(strokeWidth=2.5)
        .encode(
            x="x:Q",
            y="y:Q",
            color=named_color("series", names, title=text["legend"]),
            strokeDash=alt.condition(alt.datum.series == "truth", alt.value([5, 3]), alt.value([1, 0])),
            tooltip=["series:N", alt.Tooltip("x:Q", format=".2f"), alt.Tooltip("y:Q", format=".3f")],
        )
    )
    return (dots + lines).properties(title=text["title"])


def parity_scatter(pairs: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str]):
    """score(-q, -k) against score(q, k): additive on the line y = -x, dot product on y = x.

    text: title, x, y; names: the scores "additive", "dot product" (in that order: their colours).
    """
    lim = float(max(pairs.s.abs().max(), pairs.s_flipped.abs().max(), 1e-9)) * 1.05
    scale = alt.Scale(domain=[-lim, lim], nice=False)
    guides = pd.DataFrame({"line": ["y = x (even)", "y = −x (odd)"], "x": [-lim, -lim], "y": [-lim, lim]})
    guides = pd.concat([guides, guides.assign(x=lim, y=[lim, -lim])], ignore_index=True)
    lines = (
        alt.Chart(guides)
        .mark_line(color="#999999", strokeDash=[4, 3])
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale), detail="line:N")
    )
    dots = (
        alt.Chart(pairs)
        .mark_circle(size=30, opacity=0.7)
        .encode(
            x=alt.X("s:Q", scale=scale, title=text["x"]),
            y=alt.Y("s_flipped:Q", scale=scale, title=text["y"]),
            color=named_color("score", names),
            tooltip=["score:N", alt.Tooltip("s:Q", format=".4f"), alt.Tooltip("s_flipped:Q", format=".4f")],
        )
    )
    return (lines + dots).properties(title=text["title"])


def cosine_histogram(bars: pd.DataFrame, curve: pd.DataFrame, text: Mapping[str, str]):
    """Histogram of cos(theta) and its exact density. text: title (naming d), x, density."""
    hist = (
        alt.Chart(bars)
        .mark_rect(opacity=0.75, color="#1b9e77")
        .encode(
            x=alt.X("left:Q", title=text["x"], scale=alt.Scale(domain=[-1, 1])),
            x2="right:Q",
            y=alt.Y("density:Q", title=text["density"]),
            tooltip=[
                alt.Tooltip("left:Q", format=".2f"),
                alt.Tooltip("right:Q", format=".2f"),
                alt.Tooltip("density:Q", format=".3f"),
            ],
        )
    )
    top = float(max(bars.density.max(), 0.1)) * 1.15  # the d = 2 density runs off to infinity at +-1
    theory = (
        alt.Chart(curve[curve.density <= top])
        .mark_line(color="#222222", strokeDash=[5, 3])
        .encode(
            x="x:Q", y="density:Q", tooltip=[alt.Tooltip("x:Q", format=".2f"), alt.Tooltip("density:Q", format=".3f")]
        )
    )
    return (hist + theory).properties(title=text["title"])


def cosine_variance_loglog(df: pd.DataFrame, d: int, text: Mapping[str, str]):
    """Measured Var cos(theta) (±2 SE) against d on log-log axes, the 1/d line, and the current d. text: title, x, y."""
    return measured_vs_theory_loglog(
        df,
        x="d",
        current=d,
        x_title=text["x"],
        y_title=text["y"],
        title=text["title"],
        fmt=".5f",
    )
