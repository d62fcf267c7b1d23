import math

import streamlit as st

from attn_core.charts import worked_example as charts
from attn_core.tables import worked_example as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

steps_of = st.cache_data(max_entries=64)(tables.attention_steps)
claims = st.cache_data(max_entries=16)(tables.check_claims)

header(
    "Worked example, step by step",
    "The small examples of the lecture notes, one matrix at a time. Edit any number of Q, K or V and "
    "every step below is recomputed; at the bottom, the notes' own numbers are checked against the library.",
)
predict_first(
    "The notes say softmax([8, 2, 1]) ≈ [0.87, 0.09, 0.04]. How large is the first weight really?",
    "About **0.997**. The first weight is 1 / (1 + e^(2−8) + e^(1−8)) = 1 / (1 + 0.0025 + 0.0009): "
    "a gap of 6 in the logits already makes softmax almost one-hot. The last table re-checks this claim.",
)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([2.2, 1.2, 1.4, 0.9], vertical_alignment="center")
    example_key = c1.radio(
        "example",
        list(tables.EXAMPLES),
        format_func=lambda key: tables.EXAMPLES[key].label,
        horizontal=True,
        key="we_example",
    )
    example = tables.EXAMPLES[example_key]
    n, d_k, d_v = len(example.q), len(example.q[0]), len(example.v[0])
    token = c2.selectbox(
        "expand token i",
        list(range(1, n + 1)),
        index=example.focus - 1,
        key=f"we_token_{example_key}",
        help="Write out the sums of this token's row at every step.",
    )
    scaled = c3.toggle("divide by √d_k", value=True, key="we_scaled", help="Off: softmax of the raw scores QKᵀ.")
    if c4.button("Reset", key="we_reset", icon=":material/restart_alt:", help="Back to the example's numbers."):
        st.session_state["we_version"] = st.session_state.get("we_version", 0) + 1  # new keys: fresh editors

version = st.session_state.get("we_version", 0)
st.markdown(f"**Inputs**: {n} tokens; rows are tokens, columns are dimensions; every cell is editable.")
inputs = {}
for column, (name, matrix, width) in zip(
    st.columns(3), (("Q", example.q, d_k), ("K", example.k, d_k), ("V", example.v, d_v)), strict=True
):
    column.caption(f"{name}  ({n} × {width})")
    inputs[name] = column.data_editor(
        tables.as_frame(matrix, tables.labels(name.lower(), n), tables.labels("d", width)),
        num_rows="fixed",
        key=f"we_{name}_{example_key}_{version}",
        width="stretch",
    )

steps = None  # stays None while an input is invalid; the warning then says which cell to fix
with friendly_errors("The inputs"):
    q, k, v = (tables.parse_matrix(name, inputs[name], (n, w)) for name, w in (("Q", d_k), ("K", d_k), ("V", d_v)))
    steps = steps_of(q, k, v, scaled)

if steps is not None:
    detail = tables.token_detail(q, k, v, steps, token)
    divisor = rf"\sqrt{{{d_k}}}" if scaled else "1"
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Step 1 · scores: every query against every key**")
        st.latex(r"S = QK^\top = " + charts.bmatrix(steps["scores"]))
        st.latex(charts.dot_expansion(detail))
        st.markdown(f"**Step 2 · scale by {'√d_k = ' + f'{math.sqrt(d_k):.4f}' if scaled else '1 (switched off)'}**")
        st.latex(rf"S' = \frac{{S}}{{{divisor}}} = " + charts.bmatrix(steps["scaled"]))
        st.markdown("**Step 3 · softmax, row by row**")
        st.latex(r"A = \mathrm{softmax}(S') = " + charts.bmatrix(steps["weights"].drop(columns="row sum"), 4))
        st.latex(charts.softmax_expansion(detail))
        row_sums = ", ".join(f"{s:.12f}" for s in steps["weights"]["row sum"])
        st.caption(f"mᵢ is the largest entry of row i: subtracting it cannot change a ratio. Row sums: {row_sums}.")
        st.markdown("**Step 4 · output: each row of A averages the rows of V**")
        st.latex(r"Z = AV = " + charts.bmatrix(steps["output"]))
        st.latex(charts.output_expansion(detail))
    with right:
        formula(r"A=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)")
        formula(r"Z=\mathrm{Attention}(Q,K,V)=AV")
        with friendly_errors("The weight charts"):
            st.altair_chart(charts.weights_heatmap(tables.weights_long(steps["weights"])), width="stretch")
            parts = tables.contributions(steps["weights"], v, token)
            st.altair_chart(charts.contribution_bars(parts, token), width="stretch")
        notice(
            [
                "Every row of A is positive and sums to 1, so every zᵢ is a weighted average of the rows of V.",
                "Switch off the scaling: the same scores give sharper rows, since dividing by √d_k tempers them.",
                "Type the same numbers into two rows of K: those two keys get equal weight in every row of A.",
            ]
        )

st.subheader("Check the notes")
st.markdown(
    "Each row recomputes one number printed in the lecture notes with `attn_core`. A claim passes (✓) when "
    "every entry is within one unit of the last printed digit; measured claims get four standard errors more."
)
with friendly_errors("The claims table"):
    table = claims(seed())
    passed = int((table.verdict == "✓").sum())
    st.metric("claims that hold", f"{passed} of {len(table)}")
    wrong = table.verdict == "✗"
    st.dataframe(
        table.style.apply(lambda row: ["background-color: #fde2e1" if wrong[row.name] else ""] * len(row), axis=1),
        hide_index=True,
        width="stretch",
        height=35 * (len(table) + 1) + 3,  # every row visible, no inner scrollbar
        column_config={
            "claim": st.column_config.TextColumn(width="medium"),
            "where": st.column_config.TextColumn("in the notes"),
            "notes": st.column_config.TextColumn("the notes say"),
            "computed": st.column_config.TextColumn("computed now", width="medium"),
            "verdict": st.column_config.TextColumn(width="small"),
            "max_abs_error": st.column_config.NumberColumn("max |error|", format="%.2e"),
            "tolerance": st.column_config.NumberColumn(format="%.1e"),
        },
    )
    st.caption(f"Measured rows draw {tables.SAMPLES:,} pairs from the sidebar seed ({seed()}).")
