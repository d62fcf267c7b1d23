import math

import streamlit as st

from explorer.charts import language_model as charts
from explorer.tables import language_model as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, literal, notice, predict_first

EXAMPLES = tables.EXAMPLES
DEFAULT_TEXT = EXAMPLES["repeat"]
OWN = "own"
SECTIONS = tuple(f"language_model.sections.{k}" for k in ("maps", "heads", "next", "large"))


def read_text(text: str) -> str | None:
    """The text if the model can read it; else None, after saying what is wrong (the text itself never echoed raw)."""
    problem = tables.text_problem(text)
    if problem is None:
        return text
    kind, fields = problem
    message = t(f"language_model.problems.{kind}", **{k: literal(v) for k, v in fields.items()})
    st.warning(t("language_model.bad_text") + " " + message, icon=":material/error:")
    return None


def roles_caption(roles: dict[str, str]) -> None:
    """The derived thresholds in the order roles are given, and the scores that name no head."""
    found = {k: v for k, v in tables.thresholds().items() if v is not None}
    shown = ", ".join(f"{roles[k]} ≥ {v:.2f}" for k, v in found.items())
    none = ", ".join(roles[k] for k, v in tables.thresholds().items() if v is None) or "—"
    sizes = tables.calibration_sizes()
    st.caption(t("language_model.roles_caption", thresholds=shown, none=none, **sizes))


def maps_section(text: str) -> None:
    st.subheader(t("language_model.sections.maps"), anchor="maps")
    for layer in range(1, tables.layers() + 1):
        cells = tables.layer_cells(text, layer)
        words = td("language_model.charts.maps") | {"title": t("language_model.charts.maps.title", layer=layer)}
        chart(charts.layer_maps, cells, len(text), words, name=f"lm_maps_layer{layer}", data=cells, width="content")
    st.caption(t("language_model.maps_caption", cut=tables.SHOWN_WEIGHT))


def heads_section(text: str) -> None:
    st.subheader(t("language_model.sections.heads"), anchor="heads")
    heads = tables.head_table(text)
    left, right = st.columns([3, 2])
    names, words = td("language_model.scores"), td("language_model.charts.scores")
    chart(
        charts.score_grid,
        tables.long_scores(text),
        names,
        words,
        name="lm_scores",
        data=heads,
        where=left,
        width="content",
    )
    roles = td("language_model.roles")
    left.dataframe(tables.roles_shown(text, roles), hide_index=True, column_config=td("language_model.columns"))
    with right:
        formula(r"\mathrm{prev}_h=\frac{1}{n-1}\sum_{i\ge1}A^h_{i,\,i-1}")
        formula(
            r"\mathrm{ind}_h=\operatorname{mean}_{i}\sum_{j<i:\;x_j=x_i}A^h_{i,\,j+1}",
            t("language_model.induction_caption"),
        )
        formula(r"\mathrm{first}_h=\frac{1}{n-1}\sum_{i\ge1}A^h_{i,0}")
        formula(r"H_h=\frac{1}{n-1}\sum_{i\ge1}-\sum_{j\le i}A^h_{ij}\ln A^h_{ij}", t("language_model.entropy_caption"))
        roles_caption(roles)
    e_left, e_right = st.columns([3, 2])
    words = td("language_model.charts.entropy")
    chart(charts.entropy_bars, heads, words, name="lm_entropy", data=tables.entropy_rows(text), where=e_left)
    by_layer = tables.entropy_by_layer(text)
    row = e_right.container(horizontal=True, gap="medium")
    for r in by_layer.itertuples():
        row.metric(t("language_model.metrics.entropy", layer=r.layer), f"{r.entropy:.2f}", width="stretch")
    e_right.caption(t("language_model.uniform_caption", uniform=by_layer["uniform_entropy"].iloc[0]))


def next_section(text: str) -> None:
    st.subheader(t("language_model.sections.next"), anchor="next")
    left, right = st.columns([3, 2])
    df = tables.positions(text)
    names = td("language_model.kinds")
    chart(charts.position_losses, df, names, td("language_model.charts.losses"), name="lm_losses", data=df, where=left)
    split = tables.loss_split(text)
    row = left.container(horizontal=True, gap="medium")
    for kind in ("repeated", "first_seen"):
        value = split[kind]
        shown = "—" if math.isnan(value) else f"{value:.2f}"
        row.metric(t(f"language_model.metrics.loss_{kind}", n=split[f"{kind}_count"]), shown, width="stretch")
    top = tables.next_characters(text)
    chart(charts.next_bars, top, td("language_model.charts.next"), name="lm_next", data=top, where=right)
    with right:
        formula(r"p(x_{i+1}\mid x_{\le i})=\mathrm{softmax}\big(W_U\,\mathrm{LN}(h_i)\big)")
        formula(r"\ell_i=-\ln p(x_{i+1}\mid x_{\le i})", t("language_model.loss_caption"))


def what_to_notice(text: str) -> list[str]:
    """Points chosen from the numbers of this text: the strongest heads of each kind, the loss split."""
    prev, ind = tables.strongest(text, "previous_token"), tables.strongest(text, "induction")
    kind = "prev" if prev["role"] else "no_prev"
    points = [t(f"language_model.notice_{kind}", head=prev["name"], value=prev["value"])]
    if math.isnan(ind["value"]):  # no pair repeats: no head has an induction score
        points.append(t("language_model.notice_no_repeat"))
    else:
        kind = "induction" if ind["role"] else "weak_induction"
        points.append(t(f"language_model.notice_{kind}", head=ind["name"], value=ind["value"]))
    split = tables.loss_split(text)
    if not math.isnan(split["repeated"]) and not math.isnan(split["first_seen"]):
        key = "notice_loss_lower" if split["repeated"] < split["first_seen"] else "notice_loss_not_lower"
        points.append(t(f"language_model.{key}", repeated=split["repeated"], first=split["first_seen"]))
    return points


def large_models(text: str) -> None:
    """What is documented for large models beside what this model does on this text: measured numbers only."""
    st.subheader(t("language_model.sections.large"), anchor="large")
    sink, ind = tables.strongest(text, "first_token"), tables.strongest(text, "induction")["value"]
    uniform = tables.uniform_first_token(len(text))
    st.markdown("\n".join(f"- {p}" for p in tl("language_model.large_documented")))
    if sink["role"]:
        ours = [t("language_model.sink_yes", head=sink["name"], value=sink["value"], uniform=uniform)]
    else:
        low, high = tables.head_range("first_token", sink["name"])
        fields = {"head": sink["name"], "value": sink["value"], "uniform": uniform, "low": low, "high": high}
        ours = [t("language_model.sink_no", **fields)]
    if not math.isnan(ind):
        ours.append(t("language_model.large_induction", value=ind))
    st.caption(t("language_model.large_caption"))
    st.markdown(f"**{t('language_model.here')}**\n" + "\n".join(f"- {p}" for p in ours))


header(t("language_model.title"), t("language_model.lede"), SECTIONS)
with friendly_errors(t("language_model.sections.model")):
    prev, ind = (tables.strongest(DEFAULT_TEXT, score)["layer"] for score in ("previous_token", "induction"))
    predict_first(t("language_model.question"), t("language_model.answer", prev=prev, ind=ind))

with st.container(border=True):
    sources = td("language_model.sources")
    source = state.radio(
        t("language_model.controls.source"),
        list(EXAMPLES) + [OWN],
        "repeat",
        key="lm_source",
        horizontal=True,
        format_func=sources.get,
    )
    typed = state.text_input(
        t("language_model.controls.text", n=tables.MAX_TEXT),
        DEFAULT_TEXT,
        key="lm_text",
        max_chars=tables.MAX_TEXT,
        disabled=source != OWN,
        help=t("language_model.controls.text_help", n=tables.MAX_TEXT),
    )
    if source == OWN:
        st.caption(t("language_model.controls.text_help", n=tables.MAX_TEXT))
        text = read_text(typed)
    else:
        text = EXAMPLES[source]
        st.code(text, language=None)

if text is not None:
    left, right = st.columns([3, 2])
    with right:
        formula(r"A^h=\mathrm{softmax}\!\Big(\frac{Q^hK^{h\top}}{\sqrt{d_k}}+M\Big)", t("language_model.mask_caption"))
        formula(
            r"h^{(l+1)}=h^{(l)}+\sum_h A^h\mathrm{LN}(h^{(l)})W_V^hW_O^h+b^{(l)}",
            t("language_model.stream_caption"),
        )
        with friendly_errors(t("language_model.sections.heads")):
            notice(what_to_notice(text))
    with left, friendly_errors(t("language_model.sections.maps")):
        maps_section(text)
    with friendly_errors(t("language_model.sections.heads")):
        heads_section(text)
    with friendly_errors(t("language_model.sections.next")):
        next_section(text)
    with friendly_errors(t("language_model.sections.large")):
        large_models(text)

with friendly_errors(t("language_model.sections.model")):
    card = tables.model_summary()
    architecture = t(f"language_model.arch_{'mlp' if card['mlp'] else 'attention'}")
    repeats = t(f"language_model.repeats_{card['repeat_source']}", fraction=card["repeat_fraction"])
    curriculum = t("language_model.curriculum", copy_first=card["copy_first"]) if card["copy_first"] else ""
    words = {"architecture": architecture, "repeats": repeats, "curriculum": curriculum}
    words["position_words"] = t(f"language_model.positions_{card['positions']}")
    st.caption(t("language_model.model_card", **card, **words))
