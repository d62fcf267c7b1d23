import pandas as pd
import streamlit as st

from attn_core.charts import masks as charts
from attn_core.tables import masks as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

mask_parts = st.cache_data(max_entries=64)(tables.mask_parts)
scores_and_weights = st.cache_data(max_entries=64)(tables.scores_and_weights)
fill_comparison = st.cache_data(max_entries=64)(tables.fill_comparison)


# Building an Altair chart costs more than computing these small tables: the built charts are cached too,
# keyed by the same plain parameters. `spec` is (n, parts, lengths, window, block, custom grid, sequence).
@st.cache_data(max_entries=64)
def mask_chart(spec: tuple):
    cells, _ = mask_parts(*spec)
    return charts.mask_parts(cells, [*spec[1], "combined"])


@st.cache_data(max_entries=64)
def score_charts(spec: tuple, seed: int):
    grid, rows = scores_and_weights(*spec, seed)
    title = ["Raw scores q·k/√d_k", "(grey: hidden by the mask)"]
    scores = charts.cell_heatmap(grid, "score", title, scheme="blueorange", diverging=True)
    return scores, charts.cell_heatmap(grid, "weight", ["Weights from masked_softmax", "Σ = row sum"], row_sums=rows)


@st.cache_data(max_entries=64)
def fill_chart(spec: tuple, dtype: str, method: str, seed: int):
    cells, rows, _ = fill_comparison(*spec, dtype, seed)
    title = [f"Weights from {method}", f"in {dtype}; Σ = row sum"]
    return charts.cell_heatmap(cells[cells.method == method], "weight", title, row_sums=rows[rows.method == method])


@st.cache_data(max_entries=64)
def gradient_chart(spec: tuple, dtype: str, seed: int):
    cells, _, _ = fill_comparison(*spec, dtype, seed)
    title = ["∂L/∂s through masked_softmax", f"(autograd, {dtype})"]
    lib = cells[cells.method == tables.LIBRARY]
    return charts.cell_heatmap(lib, "grad", title, scheme="purpleorange", diverging=True)


header(
    "Masks lab",
    "Combine padding, causal, sliding-window, block and hand-ticked masks, then follow them through the scores, "
    "the weights and the gradients.",
)
predict_first(
    "A query whose keys are all hidden (a padding position under a sliding window, say) goes through "
    "`torch.softmax` after `masked_fill`. What comes out if the fill is -inf? And if it is -1e9?",
    "With -inf every exponential is 0 and the row is 0/0: **NaN** in every weight, and the NaN spreads into the "
    "output and the loss. With -1e9 (or the dtype's minimum) all logits of the row are equal, so softmax is "
    "**uniform, 1/n** over keys that were meant to be invisible: no error, silently wrong. The library's "
    "`masked_softmax` returns **zeros**. Pick a fill below and read the fully masked rows.",
)


def custom_grid(n: int) -> tables.Grid:
    """The hand-ticked part: an n x n grid of checkboxes, all ticked to start (no effect under the AND)."""
    columns = [f"k{j}" for j in range(n)]
    start = pd.DataFrame(True, index=[f"q{i}" for i in range(n)], columns=columns)
    config = {c: st.column_config.CheckboxColumn(c, width=36) for c in columns}
    with st.expander("Custom grid: untick the keys a query must not see", expanded=True):
        edited = st.data_editor(start, column_config=config, num_rows="fixed", key=f"custom_grid_{n}")
    return tables.parse_grid(edited.to_numpy().tolist(), n)


with st.container(border=True):
    c1, c2 = st.columns([1, 3])
    n = c1.slider("sequence length n", 2, tables.MAX_N, 6, key="n")
    chosen = c2.pills(
        "mask parts, combined with AND",
        tables.PARTS,
        selection_mode="multi",
        default=["padding", "sliding window"],
        key="parts",
    )
    parts = tuple(p for p in tables.PARTS if p in (chosen or []))
    c3, c4, c5, c6 = st.columns(4)
    lengths_text = c3.text_input(
        "padding: real length of each sequence",
        "6, 2",
        max_chars=tables.MAX_LENGTHS_CHARS,
        key="lengths",
        disabled="padding" not in parts,
        help=f"Up to {tables.MAX_BATCH} sequences, e.g. 6, 2: keys from position `length` on are padding.",
    )
    window = c5.slider("sliding window width", 1, tables.MAX_N, 3, key="window", disabled="sliding window" not in parts)
    block = c6.slider("block size", 1, tables.MAX_N, 2, key="block", disabled="block causal" not in parts)
    lengths = (n,)
    if "padding" in parts:
        try:
            lengths = tables.parse_lengths(lengths_text, n)
        except ValueError as err:
            c3.warning(f"Padding is left out until the lengths are fixed: {err}.", icon=":material/error:")
            parts = tuple(p for p in parts if p != "padding")
    sequence = c4.selectbox(
        "sequence shown",
        range(len(lengths)),
        index=len(lengths) - 1,
        format_func=lambda b: f"sequence {b} (length {lengths[b]})",
        key="sequence",
        disabled=len(lengths) == 1,
    )
    custom = None
    if "custom" in parts:
        try:
            custom = custom_grid(n)
        except ValueError as err:
            st.warning(f"The custom grid is left out: {err}.", icon=":material/error:")
            parts = tuple(p for p in parts if p != "custom")

spec = (n, parts, lengths, window, block, custom, min(sequence, len(lengths) - 1))

st.subheader("The mask, the scores, the weights")
left, right = st.columns([3, 2])
with right:
    formula(
        r"\begin{gathered}\tilde s_{ij}=\begin{cases}s_{ij} & M_{ij}=1\\ -\infty & M_{ij}=0\end{cases}\\"
        r"w_{ij}=\frac{e^{\tilde s_{ij}}}{\sum_{l} e^{\tilde s_{il}}}\end{gathered}",
        "M = M_padding ∧ M_causal ∧ M_window ∧ M_block ∧ M_custom: a key is visible only where every chosen "
        "part allows it.",
    )
    notice(
        [
            "Padding hides whole columns (the same keys from every query); causal, window and block masks hide "
            "cells above or far from the diagonal. Their AND can leave a query with no key at all.",
            "Every score is computed, hidden or not: the mask acts only on the softmax, so a dense implementation "
            "pays for the hidden cells too (compare the two shares under the grid with the padding alone).",
            "Hidden cells get weight exactly 0; a row with a visible key sums to 1, a fully masked row to 0.",
        ]
    )
with left, friendly_errors("The mask"):
    _, stats = mask_parts(*spec)
    st.altair_chart(mask_chart(spec), width="content")
    m1, m2, m3 = st.columns(3)
    m1.metric("hidden scores", f"{stats['hidden_share']:.0%}", help="Share of all B·n² score cells of the batch.")
    m2.metric("padding keys", f"{stats['padding_share']:.0%}", help="Share of all B·n key positions of the batch.")
    m3.metric("fully masked rows", ", ".join(map(str, stats["fully_masked"])) or "none")

with friendly_errors("The scores and weights"):
    scores, weights = score_charts(spec, seed())
    s1, s2 = st.columns(2)
    s1.altair_chart(scores, width="content")
    s2.altair_chart(weights, width="content")
    st.caption(f"Queries and keys drawn N(0, 1) from the seed, d_k = {tables.D_K}; sequence {spec[-1]} shown.")


@st.fragment
def fill_and_gradient(spec: tuple) -> None:
    """The fill value and gradient sections: their own two controls rerun only this part of the page."""
    st.subheader("The fill value and the fully masked row")
    f1, f2, _ = st.columns([2, 1, 1])
    fill = f1.segmented_control("fill hidden logits with", tables.FILLS, default="-inf", key="fill") or "-inf"
    dtype = f2.selectbox("logit dtype", tuple(tables.DTYPES), key="dtype")
    method = f"torch.softmax, fill {fill}"
    left, right = st.columns([3, 2])
    with right:
        formula(r"w_{ij}=\frac{e^{c}}{n\,e^{c}}=\frac{1}{n}", "a finite fill c on a fully masked row of n keys")
        formula(r"w_{ij}=\frac{e^{-\infty}}{\sum_l e^{-\infty}}=\frac{0}{0}=\text{NaN}", "the fill -inf on that row")
        formula(
            r"\begin{gathered}w_{ij}=\frac{e^{\tilde s_{ij}-m_i}}{Z_i}\\ Z_i=\begin{cases}\sum_l e^{\tilde s_{il}-m_i}"
            r"&\text{if }>0\\1&\text{if }=0\end{cases}\end{gathered}",
            "masked_softmax; m_i is the row's largest visible score (0 if none), subtracted so exp cannot overflow.",
        )
        st.markdown(
            "**Why.** Softmax cannot say *attend to nothing*: its weights sum to 1. A finite fill makes every logit "
            "of the row equal, so the row spreads evenly over keys that should be invisible; -inf leaves 0/0. The "
            "library sees the empty row (its sum is 0), divides by 1 instead and returns zeros. In float16 the -1e9 "
            "recipe does not even run: -1e9 does not fit, and `masked_fill` refuses it."
        )
    with left, friendly_errors("The fill comparison"):
        _, _, summary = fill_comparison(*spec, dtype, seed())
        by_method = summary.set_index("method")
        full = bool(mask_parts(*spec)[1]["fully_masked"])

        def fully_masked_weight(name: str) -> str:
            """What the metric prints for one recipe: refused, no such row, NaN, 0 or the uniform 1/n."""
            row = by_method.loc[name]
            if row["error"]:
                return "refused"
            v = row["fully masked row weight"]
            if not full:
                return "no such row"
            return "NaN" if pd.isna(v) else ("0" if v == 0 else f"{v:.4g} ≈ 1/{round(1 / v)}")

        w1, w2 = st.columns(2)
        w1.metric("torch.softmax, fully masked row", fully_masked_weight(method))
        w2.metric("masked_softmax, fully masked row", fully_masked_weight(tables.LIBRARY))
        if by_method.loc[method, "error"]:
            st.warning(
                f"`masked_fill` with {fill} in {dtype} fails: {by_method.loc[method, 'error']}", icon=":material/error:"
            )
        else:
            st.altair_chart(fill_chart(spec, dtype, method, seed()), width="content")
        if not full:
            st.info(
                "No query row is fully masked here. Try padding with a sliding window (lengths 6, 2 and window 3), "
                "a length of 0, or untick a whole row of the custom grid.",
                icon=":material/lightbulb:",
            )

    with friendly_errors("The summary of fills"):
        _, _, summary = fill_comparison(*spec, dtype, seed())
        shown = tables.summary_text(
            summary.drop(columns=["loss", "max |grad| hidden logits", "max |grad| visible logits"])
        )
        st.table(shown.assign(fact=shown["fact"].str.replace("grad", "∂L/∂z")).set_index("fact"))
        st.caption(
            f"All four recipes run live in {dtype} on sequence {spec[-1]}. ∂L/∂z: gradient of L = Σ W⊙U (U drawn from "
            "the seed, standing in for whatever follows the softmax) with respect to the logits the softmax receives."
        )

    st.subheader("The gradient that reaches hidden logits")
    left, right = st.columns([3, 2])
    with right:
        formula(
            r"\frac{\partial L}{\partial z_{ij}}=w_{ij}\Big(u_{ij}-\sum_l w_{il}\,u_{il}\Big),"
            r"\qquad u=\frac{\partial L}{\partial w}"
        )
        st.markdown(
            "A hidden key has w_ij = 0, so the gradient of its logit is exactly 0: no signal flows back through "
            "it. The gradient is still a full n × n tensor (autograd stores the zeros). On a fully masked row a "
            "finite fill gives uniform weights, so there the hidden logits *do* receive a gradient (see the table)."
        )
    with left, friendly_errors("The gradient"):
        _, _, summary = fill_comparison(*spec, dtype, seed())
        library = summary.set_index("method").loc[tables.LIBRARY]
        hidden_max, visible_max = library["max |grad| hidden logits"], library["max |grad| visible logits"]
        g1, g2 = st.columns(2)
        g1.metric("max |∂L/∂s| on hidden logits", "no hidden cell" if pd.isna(hidden_max) else f"{hidden_max:g}")
        g2.metric("max |∂L/∂s| on visible logits", "no visible cell" if pd.isna(visible_max) else f"{visible_max:.3g}")
        st.altair_chart(gradient_chart(spec, dtype, seed()), width="content")


fill_and_gradient(spec)
