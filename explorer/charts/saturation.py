"""Charts for "Softmax saturation and temperature".

Every title and axis label comes from the page (in the viewer's language) through `text`, a mapping with the
keys each builder lists; `names` maps the series keys "unscaled"/"scaled" to their legend labels.

Every encoding is an explicit channel object (alt.X, alt.Tooltip ...): Altair turns a bare string or dict
into one through a slow schema round trip. The current d_k and T are Vega-Lite parameters (D_K_PARAM, T_PARAM):
the page draws one kept spec per chart and moves its marker with chart(..., params=...) instead of rebuilding it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, color_scale, named_color

SERIES = ["unscaled", "scaled"]
STATS = ["mean", "median"]  # drawn solid and dashed
NOW = "#7570b3"  # the current value of a control, on every chart of the page
D_K_PARAM, T_PARAM = "d_k_now", "t_now"  # Vega-Lite parameters: the current d_k and T


def _named(df: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """df with a `name` column: each row's series as the legend shows it, for the tooltips."""
    return df.assign(name=df.series.map(names).fillna(df.series))


def _decades(values: pd.Series) -> list[float]:
    """Ticks at the powers of ten spanning `values`, so a log axis gets one grid line per decade."""
    lo, hi = math.floor(math.log10(values[values > 0].min())), math.ceil(math.log10(values.max()))
    return [10.0**k for k in range(lo, hi + 1)]


def _d_k_axis(title: str) -> alt.X:
    return alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title=title, axis=alt.Axis(tickCount=11))


def _marker(param: str, value: float):
    """A dotted vertical line at a control's current value, bound to the Vega-Lite parameter `param`.

    The value lives in the spec's params, so the page moves the line in a kept spec without a rebuild.
    """
    now = alt.param(name=param, value=value)
    rule = alt.Chart(pd.DataFrame({"marker": [0]})).mark_rule(color=NOW, strokeDash=[2, 2])
    return rule.encode(x=alt.X(datum=alt.ExprRef(param), type="quantitative")).add_params(now)


def _ceiling(value: float, label: str, *, side: str = "left"):
    """A dashed horizontal line labelled at its left or right end, e.g. the entropy log(n) of uniform weights."""
    base = alt.Chart(pd.DataFrame({"y": [value], "label": [label]}))
    y = alt.Y("y:Q")
    line = base.mark_rule(color="#444", strokeDash=[5, 3]).encode(y=y)
    x = 4 if side == "left" else alt.expr("width - 4")
    text = base.mark_text(align=side, baseline="bottom", x=x, dy=-2, color="#444").encode(y=y, text=alt.Text("label:N"))
    return line + text


def jacobian_vs_d_k(df: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str], *, d_k: float = 1):
    """Mean (solid) and median (dashed) Frobenius norm of the softmax Jacobian against d_k, log-log.

    The current d_k (parameter D_K_PARAM, starting at d_k) is marked; the dash pattern is named in the title (a
    strokeDash legend beside the points would draw no symbol). text: title, x, y, legend, stat, mean, median (the
    tooltip names the statistic).
    """
    long = df.melt(
        id_vars=["d_k", "series"], value_vars=["jacobian_norm", "jacobian_median"], var_name="stat", value_name="norm"
    )
    long["stat"] = long["stat"].map(dict(zip(["jacobian_norm", "jacobian_median"], STATS, strict=True)))
    long = _named(long, names).assign(stat_name=lambda x: x.stat.map({s: text[s] for s in STATS}))
    lines = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=_d_k_axis(text["x"]),
            y=alt.Y(
                "norm:Q",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(format=".0e", values=_decades(long.norm)),
                title=text["y"],
            ),
            color=named_color("series", names, text["legend"]),
            strokeDash=alt.StrokeDash("stat:N", scale=alt.Scale(domain=STATS, range=[[1, 0], [5, 3]]), legend=None),
            tooltip=[
                alt.Tooltip("d_k:Q"),
                alt.Tooltip("name:N", title=text["legend"]),
                alt.Tooltip("stat_name:N", title=text["stat"]),
                alt.Tooltip("norm:Q", title="‖J‖_F", format=".3e"),
            ],
        )
    )
    return (lines + _marker(D_K_PARAM, d_k)).properties(title=text["title"], height=HEIGHT + 60)


def measure_vs_d_k(
    df: pd.DataFrame,
    *,
    column: str,
    text: Mapping[str, str],
    names: Mapping[str, str],
    ceiling: float | None = None,
    d_k: float = 1,
):
    """One saturation measure (mean over rows) against d_k, unscaled against scaled, the current d_k marked
    (parameter D_K_PARAM, starting at d_k).

    ceiling: optional value drawn as a dashed horizontal line, labelled text["ceiling"] at its right end.
    text: title, x, y, legend (and ceiling).
    """
    lines = (
        alt.Chart(_named(df, names))
        .mark_line(point=True)
        .encode(
            x=_d_k_axis(text["x"]),
            y=alt.Y(f"{column}:Q", title=text["y"]),
            color=named_color("series", names, text["legend"]),
            tooltip=[
                alt.Tooltip("d_k:Q"),
                alt.Tooltip("name:N", title=text["legend"]),
                alt.Tooltip(f"{column}:Q", format=".4f"),
            ],
        )
    )
    layers = lines + _marker(D_K_PARAM, d_k)
    if ceiling is not None:
        layers += _ceiling(ceiling, text["ceiling"], side="right")
    return layers.properties(title=text["title"], height=HEIGHT)


def row_bars(row: pd.DataFrame, series: str, text: Mapping[str, str]):
    """One query's weights, keys sorted by logit, with the uniform weight 1/n dashed.

    text: title, x, y, rank (its tooltip), uniform (the label of the 1/n line).
    """
    r = row[row.series == series]
    bars = (
        alt.Chart(r)
        .mark_bar(color=color_scale(SERIES).range[SERIES.index(series)])
        .encode(
            x=alt.X("rank:O", title=text["x"], axis=alt.Axis(labelAngle=0, labelOverlap=True)),
            y=alt.Y("weight:Q", title=text["y"], scale=alt.Scale(domain=[0, 1])),
            tooltip=[
                alt.Tooltip("rank:O", title=text["rank"]),
                alt.Tooltip("logit:Q", format=".3f"),
                alt.Tooltip("weight:Q", format=".4g"),
            ],
        )
    )
    return (bars + _ceiling(1 / len(r), text["uniform"], side="right")).properties(title=text["title"], height=HEIGHT)


def entropy_vs_temperature(
    curve: pd.DataFrame, ceiling: float, text: Mapping[str, str], names: Mapping[str, str], *, temperature: float = 1.0
):
    """Entropy of one row against T on a log axis, both logit scales, the log(n) ceiling, the current T marked.

    The current T is the parameter T_PARAM (starting at `temperature`): the rule and the points (the curve's rows
    at that T, which must be one of curve.temperature) follow it, so the chart is built once per curve.
    text: title, x, y, legend, ceiling.
    """
    x = alt.X(
        "temperature:Q",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(values=_decades(curve.temperature), format="~g"),
        title=text["x"],
    )
    y = alt.Y("entropy:Q", title=text["y"], scale=alt.Scale(domain=[0, ceiling * 1.1]))
    color = named_color("series", names, text["legend"])
    tooltip = [
        alt.Tooltip("name:N", title=text["legend"]),
        alt.Tooltip("temperature:Q", title="T", format=".3g"),
        alt.Tooltip("entropy:Q", format=".4f"),
    ]
    named = _named(curve, names)
    lines = alt.Chart(named).mark_line().encode(x=x, y=y, color=color, tooltip=tooltip)
    points = (
        alt.Chart(named)
        .transform_filter(f"datum.temperature == {T_PARAM}")
        .mark_point(filled=True, size=90, stroke="#222", opacity=1)
        .encode(x=x, y=y, color=color, tooltip=tooltip)
    )
    layers = lines + _marker(T_PARAM, temperature) + points + _ceiling(ceiling, text["ceiling"])
    return layers.properties(title=text["title"], height=HEIGHT)


def jacobian_table(cells: pd.DataFrame, limit: float, uuid: str | None = None):
    """The Jacobian diag(p) − p pᵀ as a pandas Styler: rows i, columns j, cells tinted on a diverging scale.

    The tint is fixed to ±limit for every example, so a saturated Jacobian reads as a blank table.
    A Styler rather than an Altair heatmap: three of them render in a fraction of one chart's time.
    """
    matrix = cells.pivot(index="i", columns="j", values="value")  # (n, n)
    matrix.index.name, matrix.columns.name = "∂p_i/∂z_j", None

    def tint(value: float) -> str:
        alpha = min(abs(value) / limit, 1.0)
        rgb = "202, 0, 32" if value > 0 else "5, 113, 176"  # the ends of Vega's redblue scheme
        ink = "white" if alpha > 0.5 else "#222"
        return f"background-color: rgba({rgb}, {alpha:.3f}); color: {ink}"

    styler = matrix.style if uuid is None else matrix.style.set_uuid(uuid)  # else a random id names its CSS
    return styler.map(tint).format("{:.3g}")  # 0.0749 as it reads, 2.06e-09 only when that small


def jacobian_html(cells: pd.DataFrame, limit: float, uuid: str) -> str:
    """jacobian_table as an HTML table, for st.html: made once per example and cached, it costs well under a
    millisecond per run, where st.dataframe converts a Styler (values, tints and formats) again every run (~10 ms).
    uuid names the table's CSS rules: the same for the same cells (a cached page must not change), and different
    for each table on a page (tables sharing one would take each other's tints)."""
    return jacobian_table(cells, limit, uuid).to_html()
