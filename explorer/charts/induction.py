"""Charts for "Watch an induction head form": losses on first-seen and repeated tokens with the phase change marked,
the layer x head grid of head scores, each head's attention on the probe sequence, and the knockouts.

Every title and axis title comes from the page through `text`; series keys keep their colours in every language.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import altair as alt
import pandas as pd

from explorer.charts.common import HEIGHT, head_maps, label_expr, named_color

SHOWN = "#7570b3"  # the rule at the snapshot shown (the learning pages' colour)
PHASE = "#7a0177"  # the rule at a phase change
# first-seen and repeated tokens of the 2-layer model, then the same lighter for the 1-layer one
LOSS_COLORS = ["#1b9e77", "#d95f02", "#8fd4bf", "#f5b27a"]


def losses(
    df: pd.DataFrame, step: int, phases: Mapping[str, int | None], text: Mapping[str, str], names: Mapping[str, str]
):
    """Loss over training (df: step, model, split, loss): one colour per model and split (the 1-layer model's
    lighter and dashed), a dashed rule at the shown `step` and a solid one, labelled, at each model's phase change
    (phases: {model: step or None}).

    text: title, x, y, legend, split, model, phase (the rule's label, with {model}); names: the splits' and models'
    names.
    """
    series = [f"{m}:{s}" for m in ("two", "one") for s in ("first_seen", "repeated")]
    labels = {k: f"{names[k.split(':')[0]]} · {names[k.split(':')[1]]}" for k in series}
    data = df.assign(series=df["model"] + ":" + df["split"])
    lines = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=18))
        .encode(
            x=alt.X("step:Q", title=text["x"], axis=alt.Axis(format="d", tickMinStep=1)),  # steps are whole
            y=alt.Y("loss:Q", title=text["y"], scale=alt.Scale(zero=True)),
            color=alt.Color(
                "series:N",
                title=text["legend"],
                scale=alt.Scale(domain=series, range=LOSS_COLORS),
                legend=alt.Legend(labelExpr=label_expr(labels), labelLimit=260),
            ),
            strokeDash=alt.StrokeDash(
                "model:N", sort=["two", "one"], scale=alt.Scale(range=[[1, 0], [5, 3]]), legend=None
            ),
            tooltip=[
                alt.Tooltip("model:N", title=text["model"]),
                alt.Tooltip("split:N", title=text["split"]),
                alt.Tooltip("step:Q", title=text["x"]),
                alt.Tooltip("loss:Q", title=text["y"], format=".3f"),
            ],
        )
    )
    shown = alt.Chart(pd.DataFrame({"step": [step]})).mark_rule(color=SHOWN, strokeDash=[4, 3]).encode(x="step:Q")
    marks = pd.DataFrame(  # one label under the other: two phase changes may lie close together
        [
            {"step": s, "label": text["phase"].format(model=names[m]), "y": 10 + 14 * i}
            for i, (m, s) in enumerate(phases.items())
            if s is not None
        ],
        columns=["step", "label", "y"],
    )
    rule = alt.Chart(marks).mark_rule(color=PHASE, strokeWidth=2).encode(x="step:Q")
    label = (
        alt.Chart(marks)
        .mark_text(align="left", dx=4, dy=-4, baseline="bottom", color=PHASE, fontSize=11)
        .encode(x="step:Q", y=alt.Y("y:Q", scale=None, axis=None), text="label:N")
    )
    return (lines + shown + rule + label).properties(title=text["title"], height=HEIGHT)


def score_grid(cells: pd.DataFrame, text: Mapping[str, str], scores: Mapping[str, str], rows: Mapping[str, str]):
    """One heatmap per score: rows = model and layer, columns = heads, each cell its value on one 0..1 scale.

    cells: model, layer, head, row, score, value. text: title, head, row, value; scores / rows: names in the
    viewer's language of the score keys and of the row keys ("two:0", ...)."""
    row_order = list(dict.fromkeys(cells["row"]))
    base = alt.Chart(cells).encode(
        x=alt.X("head:O", title=text["head"], axis=alt.Axis(labelAngle=0)),
        y=alt.Y("row:N", sort=row_order, title=None, axis=alt.Axis(labelExpr=label_expr(rows), labelLimit=180)),
    )
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color("value:Q", scale=alt.Scale(scheme="oranges", domain=[0, 1]), title=text["value"]),
        tooltip=[
            alt.Tooltip("score:N", title=text["score"]),
            alt.Tooltip("row:N", title=text["row"]),
            alt.Tooltip("head:O", title=text["head"]),
            alt.Tooltip("value:Q", title=text["value"], format=".3f"),
        ],
    )
    labels = base.mark_text(fontSize=10).encode(
        text=alt.Text("value:Q", format=".2f"),
        color=alt.condition("datum.value > 0.55", alt.value("white"), alt.value("black")),
    )
    header = label_expr(scores).replace("datum.label", "datum.value")
    return (
        alt.layer(rect, labels)
        .properties(width=118, height=22 * len(row_order))
        .facet(
            column=alt.Column(
                "score:N",
                sort=list(scores),
                title=None,
                header=alt.Header(labelExpr=header, labelFontSize=12),
            )
        )
        .properties(title=text["title"])
        .configure_legend(orient="bottom")
    )


def probe_maps(cells: pd.DataFrame, n: int, text: Mapping[str, str]):
    """Each head's attention on the probe sequence: rows = queries, columns = keys, one panel per head, 0..1.

    cells: head, query, key, q_token, k_token, weight (the causal upper triangle may be left out). text: title,
    head, query, key, weight, token."""
    ticks = list(range(0, n, 8))
    cell = 3 if n > 40 else 6
    hover = {"query:O": "query", "q_token:O": "token", "key:O": "key", "k_token:O": "token"}
    return head_maps(
        cells,
        cell * n,
        text,
        x=alt.X("key:O", title=text["key"], axis=alt.Axis(values=ticks, labelAngle=0)),
        y=alt.Y("query:O", title=text["query"], axis=alt.Axis(values=ticks)),
        hover=hover,
        header_size=12,
    ).configure_legend(orient="right")


def knockouts(df: pd.DataFrame, text: Mapping[str, str], names: Mapping[str, str]):
    """The loss with each head removed alone (df: head, split, loss; head "none" = the intact model), bars per head
    side by side for the two splits. text: title, x, y, split, none (the intact bar's name)."""
    heads = list(dict.fromkeys(df["head"]))
    label = f"datum.label === 'none' ? {json.dumps(text['none'])} : datum.label"
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("head:N", sort=heads, title=text["x"], axis=alt.Axis(labelExpr=label, labelAngle=-45)),
            xOffset=alt.XOffset("split:N", sort=["first_seen", "repeated"]),
            y=alt.Y("loss:Q", title=text["y"]),
            color=named_color("split", {k: names[k] for k in ("first_seen", "repeated")}, text["split"]),
            tooltip=[
                alt.Tooltip("head:N", title=text["x"]),
                alt.Tooltip("split:N", title=text["split"]),
                alt.Tooltip("loss:Q", title=text["y"], format=".3f"),
            ],
        )
        .properties(title=text["title"], height=HEIGHT - 40)
    )
