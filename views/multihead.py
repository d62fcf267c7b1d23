import pandas as pd
import streamlit as st

from explorer.charts import multihead as charts
from explorer.tables import multihead as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, seed

MODES = ["self", "cross"]


def shapes_table(shapes: pd.DataFrame) -> pd.DataFrame:
    """The steps named in the viewer's language, the columns too; the tensors stay formulas."""
    columns = td("multihead.shapes.columns")
    named = shapes.assign(step=shapes["step"].map(td("multihead.shapes.steps")))
    return named.rename(columns=columns).set_index(columns["step"])


def references_table(ref: pd.DataFrame) -> pd.DataFrame:
    """One column per model, one row per quantity, as the page shows them."""
    rows = td("multihead.references.rows")
    columns = {}
    for r in ref.itertuples():
        same = t(f"multihead.references.same_{'yes' if r.same_count else 'no'}", n=r.n_divisors)
        columns[r.model] = [f"{r.d_model:,}", str(r.heads), str(r.d_k), f"{r.parameters:,}", same]
    order = ["d_model", "heads", "d_k", "parameters", "same_count"]
    return pd.DataFrame(columns, index=pd.Index([rows[k] for k in order], name=t("multihead.references.quantity")))


header(t("multihead.title"), t("multihead.lede"))
predict_first(t("multihead.question"), t("multihead.answer"))

with st.container(border=True):
    c1, c2, c3 = st.columns([2, 3, 2])
    d_model = state.select_slider("d_model", tables.D_MODELS, 16, key="mh_d_model", where=c1)
    offered = tables.divisors(d_model)
    if st.session_state.get("mh_heads", offered[0]) not in offered:
        del st.session_state["mh_heads"]  # kept while it divides the new d_model, back to the default otherwise
    heads = state.radio(
        t("multihead.controls.heads"),
        offered,
        4 if 4 in offered else offered[0],
        key="mh_heads",
        where=c2,
        horizontal=True,
    )
    modes = td("multihead.modes")
    mode = state.segmented_control(
        t("multihead.controls.mode"),
        MODES,
        "self",
        key="mh_mode",
        where=c3,
        format_func=modes.get,
        help=t("multihead.controls.mode_help"),
    )
    t1, t2 = st.columns(2)
    query_text = state.text_input(
        t("multihead.controls.sentence"),
        "the cat sat on the mat because it was tired",
        key="mh_sentence",
        max_chars=tables.MAX_TEXT_CHARS,
        where=t1,
        help=t("multihead.controls.sentence_help", n=tables.MAX_TOKENS),
    )
    key_text = state.text_input(
        t("multihead.controls.source"),
        "le chat dort",
        key="mh_source",
        max_chars=tables.MAX_TEXT_CHARS,
        where=t2,
        disabled=mode != "cross",
    )

query_tokens = key_tokens = None
try:
    query_tokens = tables.parse_tokens(query_text, "sentence")
    if mode == "cross":
        key_tokens = tables.parse_tokens(key_text, "second sentence")
except ValueError as err:
    st.warning(t("multihead.fix_text", error=err), icon=":material/error:")
    query_tokens = None

left, right = st.columns([3, 2])
with right:
    formula(
        r"\mathrm{head}_i=\mathrm{softmax}\!\left(\frac{Q_iK_i^{\top}}{\sqrt{d_k}}\right)V_i",
        t("multihead.head_formula_caption"),
    )
    formula(r"\mathrm{MHA}=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W^O")
    m1, m2, m3 = st.columns(3)
    m1.metric("d_model", d_model)
    m2.metric(t("multihead.metrics.heads"), heads)
    m3.metric("d_k = d_model / h", d_model // heads)
    first = t("multihead.one_head" if heads == 1 else "multihead.heads_differ")  # one head draws one map
    notice([first, *tl("multihead.notice")])


with left, friendly_errors(t("multihead.sections.maps")):
    if query_tokens is not None:
        result = tables.forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        text = td("multihead.charts.maps")
        chart(charts.head_maps, result["maps"], text, name="head_maps", data=result["maps"], width="content")
        shown = dict(n_q=result["n_q"], n_k=result["n_k"], shown=charts.MAX_MAPS, heads=heads)
        st.caption(t(f"multihead.maps_caption_{'some' if heads > charts.MAX_MAPS else 'all'}", **shown))

st.subheader(t("multihead.shapes_subheader"))
s_left, s_right = st.columns(2)
with s_left, friendly_errors(t("multihead.sections.shapes")):
    if query_tokens is not None:
        result = tables.forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        st.table(shapes_table(result["shapes"]))
        st.caption(t("multihead.shapes_caption"))
with s_right, friendly_errors(t("multihead.sections.concat")):
    if query_tokens is not None:
        result = tables.forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        text = td("multihead.charts.concat", n_q=result["n_q"], d_model=d_model, d_k=result["d_k"])
        chart(charts.concat_heatmap, result["concat"], result["d_k"], text, name="concat", data=result["concat"])
        st.caption(t("multihead.concat_caption", check=result["check"]))

st.subheader(t("multihead.parameters_subheader"))
p_left, p_right = st.columns([3, 2])
with p_right:
    formula(r"\#\text{params}=4\,(d_{model}^2+d_{model})", t("multihead.parameters_formula_caption"))
    st.markdown(t("multihead.parameters_text"))
with p_left, friendly_errors(t("multihead.sections.parameters")):
    sweep = tables.parameter_sweep(d_model)
    text = td("multihead.charts.parameters", d_model=d_model)
    chart(charts.parameter_bars, sweep, heads, text, name="parameters", data=sweep)
    st.dataframe(sweep, hide_index=True, width="stretch", column_config=td("multihead.sweep"))

with p_right, friendly_errors(t("multihead.sections.references")):
    st.markdown(t("multihead.references.heading"))
    st.table(references_table(tables.references()))
