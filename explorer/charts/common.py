"""Shared chart conventions: sizes, palettes, the line/point pieces several pages reuse."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import altair as alt
import pandas as pd

HEIGHT = 280
# Colour-blind-safe pairs: unscaled/scaled and theory lines are recognisable on every page.
SERIES_COLORS = {"unscaled": "#d95f02", "scaled": "#1b9e77", "theory": "#444444"}


# Altair's jsonschema check of a spec costs more than every other part of a page's rerun together (profiled:
# about a quarter of a warm rerun's CPU). A server skips it; the tests set ATTN_VALIDATE_CHARTS=1
# (tests/conftest.py), so every chart of every page they draw is checked against the Vega-Lite schema.
VALIDATE = os.environ.get("ATTN_VALIDATE_CHARTS") == "1"
_DEFAULT_VIEW = {"continuousWidth": 300, "continuousHeight": 300}  # Altair's theme: Streamlit sizes charts itself
# Charts are sized by the pages' ranges (the largest, positional's encoding heatmap, is some 30,000 cells), not by
# Altair's 5,000-row guard, which st.altair_chart lifts as well.
alt.data_transformers.disable_max_rows()


def to_spec(chart: alt.TopLevelMixin, *, validate: bool | None = None) -> dict:
    """The chart as a plain Vega-Lite dict, as st.altair_chart would send it (its own config kept).

    A page can cache this dict by its plain parameters: building a layered chart costs tens of milliseconds,
    more than the tables behind it. `validate` defaults to VALIDATE (on in the tests, off on a server).
    """
    spec = chart.to_dict(validate=VALIDATE if validate is None else validate)
    config = spec.pop("config", {})
    if config.get("view") == _DEFAULT_VIEW:
        del config["view"]
    return {**spec, "config": config} if config else spec


def color_scale(domain: list[str]) -> alt.Scale:
    palette = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
    return alt.Scale(
        domain=domain, range=[SERIES_COLORS.get(d, palette[i % len(palette)]) for i, d in enumerate(domain)]
    )


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string literal is a valid Vega string literal


def label_expr(names: Mapping[str, str]) -> str:
    """A Vega labelExpr showing names[key] for an axis or legend label `key` (other labels as they are)."""
    return "".join(f"datum.label === {_quote(k)} ? {_quote(v)} : " for k, v in names.items()) + "datum.label"


def prefixed_header(word: str) -> str:
    """A Vega labelExpr for a facet header: `word`, a space, then the panel's value ("head 3")."""
    return f"{_quote(word + ' ')} + datum.value"


def named_color(field: str, names: Mapping[str, str], title: str | None = None) -> alt.Color:
    """Colour by the series keys in `field`, the legend showing `names[key]` (the viewer's language) instead.

    The keys keep their colours in every language; only the legend's text changes.
    """
    legend = alt.Legend(labelExpr=label_expr(names))
    return alt.Color(f"{field}:N", scale=color_scale(list(names)), title=title, legend=legend)


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


def measured_vs_theory_loglog(
    df: pd.DataFrame, *, x: str, current, x_title: str, y_title: str, title: str, fmt: str = ".2f"
):
    """Measured values (column `empirical`, ±2 `stderr` bars) against `theory` on log-log axes.

    df has columns x, empirical, stderr, theory; a dotted rule marks the current x.
    """
    x_enc = alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=x_title)
    y_scale = alt.Scale(type="log")
    theory = (
        alt.Chart(df)
        .mark_line(color="#222222", strokeDash=[5, 3])
        .encode(x=x_enc, y=alt.Y("theory:Q", scale=y_scale, title=y_title))
    )
    points = (
        alt.Chart(df)
        .mark_point(filled=True, size=70, color=SERIES_COLORS["unscaled"])
        .encode(
            x=x_enc,
            y=alt.Y("empirical:Q", scale=y_scale),
            tooltip=[
                alt.Tooltip(f"{x}:Q"),
                alt.Tooltip("empirical:Q", format=fmt),
                alt.Tooltip("stderr:Q", format=fmt),
                alt.Tooltip("theory:Q", format=fmt),
            ],
        )
    )
    bars = (
        alt.Chart(df.assign(lo=df.empirical - 2 * df.stderr, hi=df.empirical + 2 * df.stderr))
        .mark_rule(color=SERIES_COLORS["unscaled"])
        .encode(x=x_enc, y=alt.Y("lo:Q", scale=y_scale), y2="hi:Q")
    )
    now = alt.Chart(pd.DataFrame({x: [current]})).mark_rule(color="#7570b3", strokeDash=[2, 2]).encode(x=x_enc)
    return (theory + bars + points + now).properties(title=title, height=HEIGHT)


def head_maps(
    cells: pd.DataFrame,
    side: int,
    text: Mapping[str, str],
    *,
    x: alt.X,
    y: alt.Y,
    hover: Mapping[str, str],
    header_size: int | None = None,
):
    """Each head's attention map, two panels a row headed "head h": one square of `side` px per head, the
    weight on one 0..1 colour scale for every head, so that panels compare.

    cells: head, weight and the fields of x, y and hover. hover: the tooltip's fields before the weight, each an
    Altair shorthand ("query:O") to the key of `text` that titles it. text: title, head, weight and hover's keys."""
    tooltip = [alt.Tooltip(field, title=text[key]) for field, key in hover.items()]
    tooltip.append(alt.Tooltip("weight:Q", title=text["weight"], format=".3f"))
    size = alt.Undefined if header_size is None else header_size
    header = alt.Header(labelExpr=prefixed_header(text["head"]), labelFontSize=size)
    return (
        alt.Chart(cells)
        .mark_rect()
        .encode(
            x=x,
            y=y,
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title=text["weight"]),
            tooltip=tooltip,
        )
        .properties(width=side, height=side)
        .facet(facet=alt.Facet("head:O", title=None, header=header), columns=2)
        .properties(title=text["title"])
    )
