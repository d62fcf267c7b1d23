import streamlit as st

from attn_core.charts import multihead as charts
from attn_core.tables import multihead as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

forward_tables = st.cache_data(max_entries=64)(tables.forward_tables)
parameter_sweep = st.cache_data(max_entries=16)(tables.parameter_sweep)
references = st.cache_data(max_entries=1)(tables.references)


# Building an Altair chart costs more than the forward pass: the built charts are cached too, by plain parameters.
@st.cache_data(max_entries=64)
def forward_charts(query_tokens: tuple, key_tokens: tuple | None, d_model: int, heads: int, seed: int):
    result = forward_tables(query_tokens, key_tokens, d_model, heads, seed)
    return charts.head_maps(result["maps"]), charts.concat_heatmap(result["concat"], result["d_k"])


@st.cache_data(max_entries=64)
def parameter_chart(d_model: int, heads: int):
    return charts.parameter_bars(parameter_sweep(d_model), heads)


header(
    "Multi-head attention",
    "Split d_model into h heads of width d_k = d_model / h: each head attends on its own, the heads are "
    "concatenated back to d_model and mixed by W_o.",
)
predict_first(
    "MultiHeadAttention(64, 1) has 16,640 parameters. How many does MultiHeadAttention(64, 8) have, and how wide "
    "is each of its heads?",
    "Still **16,640** = 4·(64² + 64): W_q, W_k, W_v and W_o stay 64 × 64 with a bias of 64 whatever h is; the "
    "heads only cut the projected vectors into 8 slices of **d_k = 8**. The bar chart below counts real modules "
    "for every h.",
)

with st.container(border=True):
    c1, c2, c3 = st.columns([2, 3, 2])
    d_model = c1.select_slider("d_model", options=tables.D_MODELS, value=16, key="d_model")
    offered = tables.divisors(d_model)
    heads = c2.radio(
        "heads h (the divisors of d_model)",
        offered,
        index=offered.index(4) if 4 in offered else 0,
        horizontal=True,
        key="heads",  # kept while it divides the new d_model, back to the default otherwise
    )
    mode = c3.segmented_control(
        "attention",
        ["self", "cross"],
        default="self",
        key="mode",
        help="Cross: keys and values from a second sentence.",
    )
    t1, t2 = st.columns(2)
    query_text = t1.text_input(
        "sentence (queries; keys and values too in self-attention)",
        "the cat sat on the mat because it was tired",
        max_chars=tables.MAX_TEXT_CHARS,
        key="sentence",
        help=f"Up to {tables.MAX_TOKENS} words separated by spaces.",
    )
    key_text = t2.text_input(
        "second sentence (keys and values in cross-attention)",
        "le chat dort",
        max_chars=tables.MAX_TEXT_CHARS,
        key="source",
        disabled=mode != "cross",
    )

query_tokens = key_tokens = None
try:
    query_tokens = tables.parse_tokens(query_text, "sentence")
    if mode == "cross":
        key_tokens = tables.parse_tokens(key_text, "second sentence")
except ValueError as err:
    st.warning(f"Fix the text to see the maps: {err}.", icon=":material/error:")
    query_tokens = None

left, right = st.columns([3, 2])
with right:
    formula(
        r"\mathrm{head}_i=\mathrm{softmax}\!\left(\frac{Q_iK_i^{\top}}{\sqrt{d_k}}\right)V_i",
        "Q_i = X W_i^Q, K_i = Y W_i^K, V_i = Y W_i^V, where W_i^Q is the i-th block of d_k columns of W_q; "
        "Y = X in self-attention, the second sentence in cross-attention.",
    )
    formula(r"\mathrm{MHA}=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W^O")
    m1, m2, m3 = st.columns(3)
    m1.metric("d_model", d_model)
    m2.metric("heads h", heads)
    m3.metric("d_k = d_model / h", d_model // heads)
    notice(
        [
            "Same words, same weights: the heads still draw different maps, because each one compares queries and "
            "keys in its own d_k-dimensional slice of the projections.",
            "More heads means narrower heads, not more parameters: the four d_model × d_model matrices never change.",
            "In cross-attention the maps turn rectangular, n_q × n_k: each query word of the first sentence spreads "
            "its weight over the words of the second.",
            "There are no positions here: a repeated word has one embedding, so its rows are identical in every head.",
        ]
    )
with left, friendly_errors("The attention maps"):
    if query_tokens is not None:
        result = forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        st.altair_chart(forward_charts(query_tokens, key_tokens, d_model, heads, seed())[0], width="content")
        left_out = heads - charts.MAX_MAPS
        st.caption(
            f"{result['n_q']} queries × {result['n_k']} keys per head"
            + (f"; the first {charts.MAX_MAPS} of {heads} heads shown." if left_out > 0 else ".")
            + " Toy embeddings and weights drawn from the seed."
        )

st.subheader("Split, attend, concatenate, mix: the shape of every step")
s_left, s_right = st.columns(2)
with s_left, friendly_errors("The shapes"):
    if query_tokens is not None:
        result = forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        st.table(result["shapes"].set_index("step"))
        st.caption(
            "Shapes read from the tensors of a real forward pass (hooks on W_q, W_k, W_v, W_o), batch of 1 left out."
        )
with s_right, friendly_errors("The concatenation"):
    if query_tokens is not None:
        result = forward_tables(query_tokens, key_tokens, d_model, heads, seed())
        st.altair_chart(forward_charts(query_tokens, key_tokens, d_model, heads, seed())[1], width="stretch")
        st.caption(
            f"The module's output equals Concat · W_oᵀ + b (largest difference {result['check']:.2g}): "
            "W_o is one d_model × d_model matrix that mixes all heads at once."
        )

st.subheader("The parameter count does not depend on h")
p_left, p_right = st.columns([3, 2])
with p_right:
    formula(r"\#\text{params}=4\,(d_{model}^2+d_{model})", "W_q, W_k, W_v, W_o: d_model × d_model plus a bias each")
    st.markdown(
        "Each head's W_i^Q is a d_model × d_k slice of W_q, and h slices of width d_model / h make up the whole "
        "matrix again. The multiply-adds of Q Kᵀ per query-key pair are h · d_k = d_model as well: splitting into "
        "heads changes *what* is computed, not how much."
    )
with p_left, friendly_errors("The parameter count"):
    st.altair_chart(parameter_chart(d_model, heads), width="stretch")
    st.dataframe(parameter_sweep(d_model), hide_index=True, width="stretch")

with p_right, friendly_errors("The reference models"):
    st.markdown('**Published sizes, counted on `device="meta"`** (no memory is allocated)')
    st.table(references().set_index("quantity"))
