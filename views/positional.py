import math

import streamlit as st

from attn_core.charts import positional as charts
from attn_core.tables import positional as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

AMPLITUDES = (0.0, 0.01, 0.02, 0.05) + tuple(round(0.1 * i, 1) for i in range(1, 21))  # the slider's 0.1 steps
KINDS = {"random": "random shuffle (from the seed)", "reverse": "reverse the order", "cyclic": "rotate by one"}
ALIAS_WINDOW = 480  # positions drawn in the aliasing chart at most

encoding = st.cache_data(max_entries=32)(tables.encoding_table)
gram = st.cache_data(max_entries=32)(tables.gram_by_offset)
shift = st.cache_data(max_entries=64)(tables.shift_check)
circle = st.cache_data(max_entries=64)(tables.rotation_circle)
aliasing = st.cache_data(max_entries=64)(tables.aliasing_table)
collision = st.cache_data(max_entries=64)(tables.first_collision)
symmetry = st.cache_data(max_entries=32)(tables.equivariance_sweep)


def _kept_in_range(key: str, default: int, last: int) -> None:
    """Remember a slider's value when its range changes, pulled back inside if another control shrank it."""
    st.session_state[key] = min(st.session_state.get(key, default), last)


header(
    "Positional encoding",
    "Attention by itself cannot tell the first token from the last. Sinusoids of many frequencies give every "
    "position a code: shifting a position turns the code, and the code breaks attention's symmetry.",
)
predict_first(
    "Tag each position p with two sinusoids, of periods 4 and 6. Which is the first position after 0 that gets "
    "exactly the same code as position 0?",
    "**12**, the least common multiple, not 4 · 6 = 24: both sinusoids repeat after 12. Only coprime periods "
    "(say 4 and 5) push the first repeat out to their product, 20. Try both in *Aliasing* below.",
)

with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    n = c1.slider("positions n", 8, 128, 64, 8, key="pe_n")
    d_model = c2.select_slider("d_model", options=[4, 8, 16, 32, 64, 128], value=32, key="pe_d_model")
    base = c3.select_slider("base", options=[100, 1000, 10000], value=10000, key="pe_base")

st.subheader("The code")
left, right = st.columns([3, 2])
with left, friendly_errors("The encoding"):
    st.altair_chart(charts.encoding_heatmap(encoding(n, d_model, base)), height=400)
with right:
    formula(r"PE_{(pos,\,2i)} = \sin(pos\,\omega_i)")
    formula(r"PE_{(pos,\,2i+1)} = \cos(pos\,\omega_i)")
    formula(r"\omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}", "one frequency per (sin, cos) pair of dimensions")
    notice(
        [
            "The first pairs of dimensions turn fast (period 2π ≈ 6 positions), the last ones barely move: "
            "together they read like the digits of a clock.",
            "The dot product of two codes depends only on how far apart they are: every diagonal of the Gram "
            "matrix is constant, and all n² values fall on one curve.",
            "Moving every position by k is one fixed rotation M_k, the same for every pos.",
            "Adding positions makes attention care about order: shuffled tokens no longer give a shuffled output.",
        ]
    )

st.subheader("Dot products depend on the offset only")
g1, g2, g3 = st.columns([2, 3, 2])
with friendly_errors("The dot products"):
    cells, by_offset, spread = gram(n, d_model, base)
    g1.altair_chart(charts.gram_heatmap(cells), height=340)
    g2.altair_chart(charts.offset_collapse(by_offset), height=340)
    with g3:
        formula(r"p_i\cdot p_j = \sum_k \cos\big((i-j)\,\omega_k\big)", "sin a sin b + cos a cos b = cos(a − b)")
        st.metric(
            "largest spread within one offset",
            f"{spread:.1e}",
            help="Over every offset: max − min of p_i·p_j among the pairs with that i − j. Rounding only.",
        )
        st.caption(
            f"{n}² = {n * n:,} dot products in {len(by_offset)} offsets; per offset the smallest (circle) and "
            "largest (cross) sit on the dashed curve."
        )

st.subheader("Shifting a position is a rotation")
with st.container(border=True):
    s1, s2, s3 = st.columns(3)
    pos = s1.slider("pos", 0, 200, 10, key="pe_pos")
    k = s2.slider("shift k", -32, 32, 5, key="pe_k")
    _kept_in_range("pe_freq", 2, d_model // 2 - 1)
    freq = s3.slider("frequency i", 0, d_model // 2 - 1, key="pe_freq")
r1, r2, r3 = st.columns([3, 2, 2])
with friendly_errors("The shift"):
    check = shift(pos, k, d_model, base, n, freq)
    r1.altair_chart(charts.shift_matrix_heatmap(check["m_k"], k), height=340)
    r1.caption(f"Zero entries left blank: {len(check['m_k'])} of {d_model}² entries are non-zero.")
    r2.altair_chart(charts.rotation_circle(circle(n, d_model, base, freq, pos, k), freq), width="content", height=340)
    with r3:
        formula(r"PE(pos+k) = M_k\, PE(pos)", "M_k depends on k only, never on pos")
        (a, b), (c, e) = check["block"]
        formula(
            rf"M_k^{{({freq})}} = \begin{{pmatrix}}\cos k\omega_{{{freq}}} & \sin k\omega_{{{freq}}}\\ "
            rf"-\sin k\omega_{{{freq}}} & \cos k\omega_{{{freq}}}\end{{pmatrix}}"
        )
        formula(
            rf"= \begin{{pmatrix}}{a:.4f} & {b:.4f}\\ {c:.4f} & {e:.4f}\end{{pmatrix}}",
            f"read from M_k, rows and columns {2 * freq}, {2 * freq + 1}: a turn by k·ω = {check['angle']:.4f} rad",
        )
        m1, m2 = st.columns(2)
        m1.metric("max error at pos", f"{check['error_at_pos']:.1e}", help="max |PE(pos+k) − M_k PE(pos)|")
        m2.metric("all n positions", f"{check['error_all']:.1e}", help="The same M_k for pos = 0..n−1.")

st.subheader("Aliasing: one period repeats, several periods repeat much later")
with st.container(border=True):
    periods = tuple(
        st.multiselect(
            "periods T (in positions)",
            options=list(range(2, 17)),
            default=[4, 6],
            max_selections=4,
            key="pe_periods",
            help="Each period adds one (sin, cos) pair: code(p) = [sin 2πp/T₁, cos 2πp/T₁, sin 2πp/T₂, …].",
        )
    )
a1, a2 = st.columns([3, 2])
with friendly_errors("The aliasing check"):
    lcm = tables.collision_period(periods) if periods else None
    found = collision(periods)
    window = min(ALIAS_WINDOW, max(2 * (lcm or 0) + 1, 3 * periods[0] + 1, 25))
    a1.altair_chart(charts.aliasing(aliasing(periods, window), found), height=320)
    with a2:
        formula(
            r"\text{code}(p) = \text{code}(0) \iff T_1 \mid p,\ \dots,\ T_m \mid p"
            r"\iff \operatorname{lcm}(T_1,\dots,T_m) \mid p"
        )
        x1, x2, x3 = st.columns(3)
        x1.metric("first collision", "none" if found is None else f"{found:,}", help="Found by comparing the codes.")
        x2.metric("lcm of the periods", f"{lcm:,}")
        x3.metric("product", f"{math.prod(periods):,}")
        coprime = tables.pairwise_coprime(periods)
        st.caption(
            f"Pairwise coprime: **{'yes' if coprime else 'no'}**"
            + (
                ", so the lcm is the full product."
                if coprime
                else ": a shared factor makes the lcm smaller than the product."
            )
            + f" One period alone repeats after {periods[0]} positions."
        )
        st.caption("The dashed line marks the first collision of all periods together.")
        if lcm > window:
            st.caption(f"The chart shows positions 0..{window - 1}; the first collision lies further out.")

st.subheader("Positions break permutation equivariance")
with st.container(border=True):
    e1, e2 = st.columns(2)
    kind = e1.selectbox("permutation P", list(KINDS), format_func=KINDS.get, key="pe_kind")
    amplitude = e2.slider("amplitude a of the encoding", 0.0, 2.0, 1.0, 0.1, key="pe_amplitude")
q1, q2 = st.columns([3, 2])
with friendly_errors("The equivariance check"):
    sweep = symmetry(n, d_model, base, kind, AMPLITUDES, seed())
    q1.altair_chart(charts.equivariance(sweep, amplitude), height=320)
    with q2:
        formula(r"f(X) = \mathrm{Attention}(Z, Z, Z)")
        formula(r"Z = X + a\,PE", "the tokens X plus the encoding of their positions")
        formula(r"f(PX) \overset{?}{=} P\, f(X)", "PE stays in position order while P shuffles the tokens")
        at_a = sweep.set_index("amplitude").error
        y1, y2 = st.columns(2)
        y1.metric("error without PE", f"{at_a[0.0]:.1e}", help="a = 0: attention is permutation equivariant.")
        y2.metric(f"error with PE (a = {amplitude:g})", f"{at_a[round(amplitude, 1)]:.1e}")
        st.caption(f"{n} tokens X ~ N(0, 1) of width {d_model} serve as queries, keys and values.")
