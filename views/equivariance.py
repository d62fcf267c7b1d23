import math

import streamlit as st

from attn_core.charts import equivariance as charts
from attn_core.tables import equivariance as tables
from ui import state as controls
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

KINDS = {"random": "random", "reverse": "reverse", "cyclic": "cyclic shift", "typed": "typed"}
WIDTHS = [2, 4, 8, 16, 32, 64]  # even: sinusoidal encodings come in sin/cos pairs
CURRENT = {(causal, positional): label for label, causal, positional in tables.VARIANTS}
BREAKERS = {
    "causal mask": "the causal mask stays lower-triangular in positions while the tokens move",
    "positional encoding": "the encodings stay at positions 0..n−1 while the tokens move",
    "causal + positional": "both the mask and the encodings stay with positions while the tokens move",
}

views = st.cache_data(max_entries=64)(tables.weights_views)
variant_errors = st.cache_data(max_entries=64)(tables.variant_errors)

header(
    "Permutation equivariance",
    "Shuffle the tokens of a sequence and run the same self-attention again: the output comes back shuffled "
    "the same way and nothing else changes, until a mask or positional encodings mark the positions.",
)
predict_first(
    "You shuffle 8 tokens with a random permutation P. Will max |Attention(PX) − P·Attention(X)| be exactly 0? "
    "And with the causal mask on?",
    "Not exactly 0, but a few units of floating-point rounding: in exact arithmetic Attention(PX) = P·Attention(X), "
    "yet the computer now adds the terms of each softmax sum and each weighted sum in another order. Only the "
    "identity gives exactly 0. With the causal mask, the mask stays lower-triangular in positions while the tokens "
    "move, so a token that saw only itself may now see every other: the error grows to the size of the outputs.",
)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    n = controls.slider("sequence length n", 2, 32, 8, 1, key="n", where=c1)
    d = controls.select_slider("model width d", WIDTHS, 16, key="d", where=c1)
    kind = controls.selectbox(
        "permutation P",
        list(KINDS),
        list(KINDS)[0],
        key="perm_kind",
        where=c2,
        format_func=KINDS.get,
        help="random: drawn from the sidebar's seed; cyclic: token i + s moves to position i; typed: your own.",
    )
    shift = controls.number_input("shift s (taken mod n)", 0, 64, 1, key="shift", where=c2, disabled=kind != "cyclic")
    text = controls.text_input(
        "typed permutation",
        "1,0,3,2,5,4,7,6",
        max_chars=8 * 32,
        key="perm_text",
        where=c3,
        disabled=kind != "typed",
        help="Each of 0..n−1 exactly once, comma-separated: entry i is the token that moves to position i.",
    )
    precision = controls.radio(
        "precision", list(tables.PRECISIONS), list(tables.PRECISIONS)[0], key="precision", where=c3, horizontal=True
    )
    causal = controls.toggle("causal mask", False, key="causal", where=c4)
    positional = controls.toggle(
        "positional encoding",
        False,
        key="positional",
        where=c4,
        help="Adds sinusoidal encodings of positions 0..n−1 to X.",
    )
    try:
        perm = tables.choose_permutation(kind, n, seed(), shift=int(shift), text=text)
    except ValueError as err:
        example = ",".join(str(i) for i in reversed(range(n)))
        st.warning(
            f"**Typed permutation not used**: {err}. Expected each of 0..{n - 1} exactly once, comma-separated, "
            f"e.g. `{example}`. Showing the identity until then.",
            icon=":material/edit_note:",
        )
        perm = tuple(range(n))
    st.caption(f"π = ({', '.join(map(str, perm))}): position i of PX holds token π(i), i.e. (PX)ᵢ = X_π(i).")

variant = CURRENT[(causal, positional)]
left, right = st.columns([3, 2])
with right:
    formula(
        r"\begin{aligned}A&=\mathrm{softmax}\big(QK^\top/\sqrt d\,\big)\\ \mathrm{Attention}(X)&=AV\end{aligned}",
        "Q, K, V = XW_q, XW_k, XW_v: n random tokens X of width d and random d×d projections, all from the seed.",
    )
    formula(
        r"\begin{aligned}A'&=\mathrm{softmax}\big(PQK^\top P^\top/\sqrt d\,\big)\\ &=PAP^\top\\ "
        r"\mathrm{Attention}(PX)&=PAP^\top\,PV\\ &=P\,\mathrm{Attention}(X)\end{aligned}",
        "(PX)W = P(XW): W acts on features, P on tokens. softmax acts row by row, and PᵀP = I.",
    )
    formula(
        r"PMP^\top\neq M,\qquad PX+E\neq P(X+E)",
        "what breaks it: the causal mask M and the encodings E belong to positions 0..n−1, not to tokens",
    )
    notice(
        [
            "A′ and P A Pᵀ below match cell by cell: shuffling moves each weight to a new row and column but "
            "never changes it (hover a cell to see which two tokens it links).",
            "The plain error is a few ulps, not 0, because the sums run in another order; type the identity "
            "(0,1,2,…) or set the shift to n and it is exactly 0.",
            "The projections act on features and P on positions, so they cannot break the symmetry; a causal mask "
            "or positional encodings do, and the error jumps from rounding level to the size of the outputs.",
        ]
    )

with left, friendly_errors("The equivariance error"):
    df, s = views(n, d, perm, causal, positional, seed(), precision)
    m1, m2, m3 = st.columns(3)
    m1.metric("equivariance error", f"{s['error']:.2e}", help="max |Attention(PX) − P·Attention(X)| over all outputs")
    m2.metric(
        "rounding tolerance", f"{s['tolerance']:.2e}", help=f"{tables.ULPS_PER_TERM}·(n + d)·ε·max|V|, explained below."
    )
    m3.metric("error ÷ (ε·max|V|)", f"{s['ulps']:.3g}", help="How many units of float rounding the error is worth.")
    claim = f"max |Attention(PX) − P·Attention(X)| = {s['error']:.1e}"
    if s["error"] == 0:
        identity = perm == tuple(range(n))
        why = "P is the identity, so both runs do the same operations" if identity else "the sums rounded alike"
        st.success(f"**Equivariant, exactly**: {claim}; {why}.", icon=":material/check_circle:")
    elif s["equivariant"]:
        st.success(
            f"**Equivariant up to float rounding**: {claim}, {s['ulps']:.2g} ε·max|V|, "
            f"below the tolerance of {s['tolerance']:.1e}.",
            icon=":material/check_circle:",
        )
    else:
        orders = math.log10(s["error"] / s["tolerance"])
        st.info(
            f"**Broken**: {claim}, about {orders:.0f} orders of magnitude above the rounding tolerance, because "
            f"{BREAKERS.get(variant, 'of something rounding cannot explain')}.",
            icon=":material/link_off:",
        )
    st.caption(
        f"Tolerance = {tables.ULPS_PER_TERM}·(n + d)·ε·max|V| with ε = {s['eps']:.1e} ({precision}) and "
        f"max|V| = {s['max_abs_v']:.2f} (V = XW_v). "
        "Permuting re-orders sums of n terms (softmax denominators, Σⱼ aᵢⱼvⱼ) and of d terms (projections, logits); "
        "each re-ordered term can move a result by about one unit of rounding of max|V|. "
        "A broken symmetry moves outputs by a fair fraction of max|V| itself."
    )

with left, friendly_errors("The error of each variant"):
    errors = variant_errors(n, d, perm, seed(), precision)
    st.altair_chart(charts.variant_errors_log(errors, variant, tables.LOG_FLOOR), width="stretch")
    st.caption(
        f"Same tokens, same P, four variants; the outlined bar is the setting chosen above. An error of exactly 0 "
        f"cannot sit on a log axis: it is drawn at {tables.LOG_FLOOR:.0e}, below any rounding error, and labelled "
        "“0 exactly”."
    )

st.subheader("The weights, before and after shuffling")
with friendly_errors("The attention weights"):
    df, s = views(n, d, perm, causal, positional, seed(), precision)
    vmax = float(df.weight.max())
    titles = {"A": "A: weights of X", "A′": "A′: weights of PX", "P A Pᵀ": "P A Pᵀ: A, rows and columns shuffled"}
    for column, (matrix, title) in zip(st.columns(3), titles.items(), strict=True):
        column.altair_chart(charts.weights_heatmap(df, matrix, title, vmax), width="stretch")
    same = s["weights_gap"] <= s["weights_tolerance"]
    st.caption(
        f"One colour scale, 0 to {vmax:.3f}, for all three; hover a cell for the tokens it links. "
        f"max |A′ − P A Pᵀ| = {s['weights_gap']:.1e}: "
        + ("the same matrix up to rounding." if same else "the weights are not just shuffled, the symmetry is broken.")
    )
