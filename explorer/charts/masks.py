"""Charts for the "Masks lab": the mask parts, and query x key matrices with hidden cells faded and NaN marked.

Every title, axis label and legend label comes from the page (in the viewer's language) through `text`, a
mapping with the keys each builder lists; `names` maps the mask parts' keys to their labels. A title may hold
line breaks ("\n"): the charts are only as wide as their n cells, so long titles take several lines. The charts
carry no `config` (a page may restyle them for the projector, which replaces it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT

HIDDEN_GREY = "#c8c8c8"
NAN_COLOR = "#e7298a"  # NaN cells stand out from every colour scheme used here
CELL = 30  # pixels per cell when a chart sizes itself from n
SUM = "Σ"  # the extra column holding each row's sum
INK = alt.Scale(domain=["black", "white", NAN_COLOR], range=["#222222", "#ffffff", NAN_COLOR])  # text colours as named


def _side(n: int) -> int:
    return max(180, min(HEIGHT + 60, CELL * n))


def _title(title: str) -> str | list[str]:
    lines = title.split("\n")
    return lines if len(lines) > 1 else title


def mask_parts(cells: pd.DataFrame, order: list[str], text: Mapping[str, str], names: Mapping[str, str]):
    """One small grid per mask part and the combined AND, in `order`; cells: part, query, key, allowed.

    text: title, x, y, allowed, hidden (the two cell states), part, cell (tooltip titles); names: part -> label.
    """
    n = int(cells["query"].max()) + 1
    side = max(110, min(140, 12 * n))
    allowed, hidden = text["allowed"], text["hidden"]
    data = cells.assign(label=cells["part"].map(lambda p: names.get(p, p)))
    return (
        alt.Chart(data)
        .transform_calculate(state=f"datum.allowed ? {json.dumps(allowed)} : {json.dumps(hidden)}")
        .mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("key:O", title=text["x"], axis=alt.Axis(labelAngle=0)),
            y=alt.Y("query:O", title=text["y"]),
            color=alt.Color(
                "state:N",
                scale=alt.Scale(domain=[allowed, hidden], range=["#1b9e77", HIDDEN_GREY]),
                title=None,
                legend=alt.Legend(orient="top"),
            ),
            tooltip=[
                alt.Tooltip("label:N", title=text["part"]),
                alt.Tooltip("query:O", title=text["y"]),
                alt.Tooltip("key:O", title=text["x"]),
                alt.Tooltip("state:N", title=text["cell"]),
            ],
        )
        .properties(width=side, height=side)
        .facet(
            facet=alt.Facet("label:N", sort=[names.get(p, p) for p in order], title=None),
            columns=min(len(order), 3),  # 3 fit the column
        )
        .properties(title=_title(text["title"]))
    )


def cell_heatmap(
    df: pd.DataFrame,
    value: str,
    text: Mapping[str, str],
    *,
    scheme: str = "blues",
    diverging: bool = False,
    fmt: str = ".2f",
    row_sums: pd.DataFrame | None = None,
):
    """A query x key matrix with its numbers printed; hidden cells faded to grey, NaN cells labelled NaN in pink.

    df: query, key, hidden and the column `value` (NaN allowed). A diverging scheme is centred on 0, the
    others span [0, 1] (weights). `row_sums` (query, row_sum) adds a last column Σ with each row's sum.
    An exact zero prints as 0, anything else with `fmt` (so 0.00 means small, not zero).
    text: title, x, y, legend (the colour scale's title), cell, hidden, visible (a cell's state in the tooltip).
    """
    n_q, n_k = int(df["query"].max()) + 1, int(df["key"].max()) + 1
    top = df[value].abs().max(skipna=True)
    dark_from = 0.6 * (float(top) if diverging and pd.notna(top) and top > 0 else 1.0)
    data = df[["query", "key", value]].assign(
        column=df["key"].astype(str),
        shade=df["hidden"].map({True: "hidden", False: "visible"}),
        state=df["hidden"].map({True: text["hidden"], False: text["visible"]}),
    )
    if row_sums is not None:
        sums = pd.DataFrame(
            {"query": row_sums["query"], "column": SUM, value: row_sums["row_sum"], "shade": SUM, "state": SUM}
        )
        data = pd.concat([data, sums], ignore_index=True)
    values = data[value]
    data = data.assign(
        label=["NaN" if pd.isna(x) else "0" if x == 0 else format(x, fmt) for x in values],
        ink=[
            NAN_COLOR if pd.isna(x) else "white" if (c != SUM and abs(x) > dark_from) else "black"
            for x, c in zip(values, data["column"], strict=True)
        ],
        painted=values.notna() & (data["column"] != SUM),  # NaN cells and the Σ column stay unpainted
    )
    order = [str(j) for j in range(n_k)] + ([SUM] if row_sums is not None else [])
    scale = alt.Scale(scheme=scheme, domainMid=0) if diverging else alt.Scale(scheme=scheme, domain=[0, 1])
    base = alt.Chart().encode(  # data goes on the layer: Altair then need not compare the layers' data
        x=alt.X("column:O", sort=order, title=text["x"], axis=alt.Axis(labelAngle=0)),
        y=alt.Y("query:O", title=text["y"]),
    )
    rects = (
        base.transform_filter("datum.painted")
        .mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            color=alt.Color(f"{value}:Q", scale=scale, title=text["legend"]),
            opacity=alt.Opacity(
                "shade:O", scale=alt.Scale(domain=["visible", "hidden"], range=[1.0, 0.25]), legend=None
            ),
            tooltip=[
                alt.Tooltip("query:O", title=text["y"]),
                alt.Tooltip("column:O", title=text["x"]),
                alt.Tooltip(f"{value}:Q", title=text["legend"], format=".4g"),
                alt.Tooltip("state:N", title=text["cell"]),
            ],
        )
    )
    labels = base.mark_text(fontSize=10 if n_k <= 8 else 8).encode(
        text=alt.Text("label:N"), color=alt.Color("ink:N", scale=INK, legend=None)
    )
    width = _side(n_k + (row_sums is not None))
    # "pad": width and height are the plot's, legends and axes come on top (Streamlit's "fit" would squeeze them in)
    pad = alt.AutoSizeParams(type="pad")
    return alt.layer(rects, labels, data=data).properties(
        title=_title(text["title"]),
        width=width,
        height=_side(n_q),
        autosize=pad,
        view=alt.ViewBackground(fill=HIDDEN_GREY),  # shows through the faded hidden cells
    )


def renormalisation_bars(rows: pd.DataFrame, text: Mapping[str, str]):
    """Each token's weight before and after masking, side by side; rows: token, real, before, after.

    text: title, x, y, before, after, stage (legend title), real, padding (the token kinds in the tooltip).
    """
    stages = {"before": text["before"], "after": text["after"]}
    data = rows.melt(id_vars=["token", "real"], value_vars=list(stages), var_name="stage", value_name="weight")
    data = data.assign(
        stage=data["stage"].map(stages), kind=data["real"].map({True: text["real"], False: text["padding"]})
    )
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("token:O", title=text["x"], axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("stage:N", sort=list(stages.values())),
            y=alt.Y("weight:Q", title=text["y"], scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "stage:N",
                sort=list(stages.values()),
                scale=alt.Scale(range=["#9e9e9e", "#1b9e77"]),
                title=text["stage"],
                legend=alt.Legend(orient="top"),
            ),
            tooltip=[
                alt.Tooltip("token:O", title=text["x"]),
                alt.Tooltip("kind:N", title=text["kind"]),
                alt.Tooltip("stage:N", title=text["stage"]),
                alt.Tooltip("weight:Q", title=text["y"], format=".4f"),
            ],
        )
        .properties(title=_title(text["title"]), height=HEIGHT)
    )
