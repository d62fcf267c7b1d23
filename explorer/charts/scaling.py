"""Charts for "Memory and time scaling": time and peak memory against n, with guide lines.

Channels are typed objects (alt.Detail(...), not "field:N") and layers few: a shorthand string costs
altair a schema lookup of ~10 ms, and every layer is validated again when the chart is drawn.
Every title and label comes from the page (in the viewer's language): `text`, `names` (method key ->
legend label) and `sources` (run key -> legend label); the data keeps the English keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, label_expr

# One colour per method on every chart (colour-blind-safe Dark2), whatever subset is shown.
METHOD_COLORS = {
    "naive": "#d95f02",
    "naive_masked": "#e7298a",
    "tiled": "#1b9e77",
    "sdpa": "#7570b3",
    "triton": "#66a61e",
}
GUIDE_COLOR = "#8c8c8c"
THEORY_COLOR = "#222222"


def _series(method: str, slope: float | None, names: Mapping[str, str]) -> str:
    label = names.get(method, method)
    return label if slope is None or math.isnan(slope) else f"{label}: {slope:.2f}"


def scaling_chart(
    pts: pd.DataFrame,
    guides: pd.DataFrame,
    *,
    value: str,
    text: Mapping[str, str],
    names: Mapping[str, str],
    sources: Mapping[str, str],
    slopes: dict[str, float],
    log: bool = True,
    band: tuple[str, str] | None = None,
    theory: pd.DataFrame | None = None,
):
    """One quantity against n: a line per (method, run), guide lines, optional p10-p90 rules and theory line.

    pts: source, method, n and the `value` column; guides: guide, n, value; theory: n, value;
    slopes: method -> slope, written into the legend. Live runs solid, recorded ones dashed.
    text: title, x, y, log (appended to the axis titles on log axes, e.g. " (log)"), legend (title of the
    method legend), run (title of the run legend), theory (the name of the theory line, with `theory`).
    names: method -> legend label; sources: pts.source value -> legend label.
    """
    methods = [m for m in METHOD_COLORS if m in set(pts.method)]
    color = alt.Color(
        "series:N",
        title=text["legend"],
        scale=alt.Scale(
            domain=[_series(m, slopes.get(m), names) for m in methods], range=[METHOD_COLORS[m] for m in methods]
        ),
        legend=alt.Legend(orient="bottom", columns=2, labelLimit=240),
    )
    runs = list(dict.fromkeys(pts.source))
    dash = alt.StrokeDash(  # a legend only when runs are compared; on top, where it never runs off the side
        "source:N",
        title=text["run"],
        scale=alt.Scale(domain=runs),
        legend=(
            alt.Legend(orient="top", symbolType="stroke", symbolStrokeWidth=2, labelExpr=label_expr(sources))
            if len(runs) > 1
            else None
        ),
    )
    ticks = alt.Axis(values=sorted({int(n) for n in pts.n}), format="d") if log else alt.Axis(format="d")  # measured n
    x = alt.X(
        "n:Q",
        axis=ticks,
        scale=alt.Scale(type="log", base=2) if log else alt.Scale(type="linear"),
        title=text["x"] + (text["log"] if log else ""),
    )
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    axis_title = text["y"] + (text["log"] if log else "")  # short: a y title longer than the plot hides the chart title

    def ys(field: str) -> alt.Y:  # every layer on one y scale, under one title
        return alt.Y(f"{field}:Q", scale=y_scale, title=axis_title)

    tooltip = [alt.Tooltip("source:N"), alt.Tooltip("method:N"), alt.Tooltip("n:Q")]
    tooltip += [alt.Tooltip(f"{c}:Q", format=".3g") for c in (value, *(band or ()))]
    chart = alt.Chart().encode(x=x)
    refs = _references(guides, theory, text.get("theory", ""))
    # One data source whose rows each fill only their layer's y column: Vega-Lite drops a mark whose y is
    # null, so no filter transform is needed (altair sanitises each DataFrame and copies each transform:
    # tens of ms per chart otherwise).
    layers = [
        # dots in their own layer: a line with point=True would draw the run legend as dots, not dashes
        chart.mark_line(strokeWidth=2).encode(y=ys(value), color=color, strokeDash=dash, detail=alt.Detail("source:N")),
        chart.mark_point(filled=True, size=50, opacity=1).encode(y=ys(value), color=color, tooltip=tooltip),
    ]
    if band is not None:
        layers.append(chart.mark_rule(opacity=0.6).encode(y=ys(band[0]), y2=alt.Y2(f"{band[1]}:Q"), color=color))
    series = [_series(m, slopes.get(m), names) for m in pts.method]
    data = pd.concat([pts.assign(series=series), refs], ignore_index=True)
    # Legends below keep the plot wide in a narrow column; Streamlit fits legends and title into `height`,
    # hence the extra room. Title and height go to the constructor: .properties() validates them again.
    height = HEIGHT + 150 + (50 if len(runs) > 1 else 0) + (70 if not refs.empty else 0)
    if refs.empty:
        return alt.layer(*layers, data=data, title=text["title"], height=height)
    # the reference lines keep colours and dashes of their own: the methods' and the runs' scales stay as they are
    lines = _reference_lines(chart, ys("ref"), refs, text.get("guides", ""))
    layered = alt.layer(lines, alt.layer(*layers), data=data, title=text["title"], height=height)
    # the legends below the plot one under another: side by side, the methods' ran past a narrow column's edge
    stacked = {"expr": "{bottom: {direction: 'vertical', anchor: 'start'}}"}
    return layered.resolve_scale(color="independent", strokeDash="independent").configure_legend(layout=stacked)


# A dash pattern per reference line: their names are in a legend of their own, never written on the plot, where
# they lay over the data at the lines' left end
GUIDE_DASHES = {"O(n²)": [8, 4], "O(n)": [2, 3]}
THEORY_DASH = [4, 2, 1, 2]


def _reference_lines(chart: alt.Chart, y: alt.Y, refs: pd.DataFrame, title: str) -> alt.Chart:
    """The grey guide lines and the dark theory line, told apart by their dashes in a legend below the plot."""
    names = list(dict.fromkeys(refs.guide))
    dashes = [GUIDE_DASHES.get(g, THEORY_DASH) for g in names]
    inks = [GUIDE_COLOR if g in GUIDE_DASHES else THEORY_COLOR for g in names]
    legend = alt.Legend(
        orient="bottom", title=title, symbolType="stroke", symbolStrokeWidth=2, symbolSize=400, labelLimit=240
    )
    return chart.mark_line(strokeWidth=1.3).encode(
        y=y,
        strokeDash=alt.StrokeDash("guide:N", scale=alt.Scale(domain=names, range=dashes), legend=legend),
        color=alt.Color("guide:N", scale=alt.Scale(domain=names, range=inks), legend=legend),
    )


def _references(guides: pd.DataFrame, theory: pd.DataFrame | None, label: str) -> pd.DataFrame:
    """Rows of the grey guide lines and of the dark theory line, named `label` (y in `ref`)."""
    parts = [guides[["guide", "n", "value"]]]
    if theory is not None and not theory.empty:
        parts.append(theory[["n", "value"]].assign(guide=label))
    return pd.concat(parts, ignore_index=True).rename(columns={"value": "ref"})
