import math

import streamlit as st

from explorer.charts import positional as charts
from explorer.tables import positional as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

AMPLITUDES = (0.0, 0.01, 0.02, 0.05) + tuple(round(0.1 * i, 1) for i in range(1, 21))  # the slider's 0.1 steps
PERIODS = list(range(2, 17))
MAX_PERIODS = 4  # lcm(11, 13, 15, 16) = 34320 stays within tables.SEARCH_LIMIT

header(
    t("positional.title"),
    t("positional.lede"),
    sections=(
        "positional.sections.code",
        "positional.sections.dots",
        "positional.sections.shift",
        "positional.sections.aliasing",
        "positional.sections.symmetry",
    ),
)
predict_first(t("positional.question"), t("positional.answer"))

with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    n = state.slider(t("positional.controls.n"), 8, 128, 64, 8, key="pe_n", where=c1)
    d_model = state.select_slider("d_model", [4, 8, 16, 32, 64, 128], 32, key="pe_d_model", where=c2)
    base = state.select_slider(t("positional.controls.base"), [100, 1000, 10000], 10000, key="pe_base", where=c3)

st.subheader(t("positional.sections.code"), anchor="code")
left, right = st.columns([3, 2])
with left, friendly_errors(t("positional.errors.encoding")):
    pe = tables.encoding_table(n, d_model, base)
    text = td("positional.charts.encoding")
    chart(charts.encoding_heatmap, pe, text, name="encoding", data=pe, properties={"height": 400})
with right:
    formula(r"PE_{(pos,\,2i)} = \sin(pos\,\omega_i)")
    formula(r"PE_{(pos,\,2i+1)} = \cos(pos\,\omega_i)")
    formula(r"\omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}", t("positional.frequency_caption"))
    fastest, slowest = tables.periods(d_model, base)  # the clock line quotes this setting's periods
    notice([t("positional.clock", fast=fastest, slow=slowest, n=n), *tl("positional.notice")])

st.subheader(t("positional.sections.dots"), anchor="dots")
g1, g2, g3 = st.columns([2, 3, 2])
with friendly_errors(t("positional.errors.dots")):
    cells, by_offset, spread = tables.gram_by_offset(n, d_model, base)
    text, tall = td("positional.charts.gram"), {"height": 340}
    chart(charts.gram_heatmap, cells, text, name="gram", data=cells, where=g1, properties=tall)
    text = td("positional.charts.offsets")
    chart(charts.offset_collapse, by_offset, text, name="offsets", data=by_offset, where=g2, properties=tall)
    with g3:
        formula(  # two lines: one overflows the narrow column (Chinese, projector)
            r"\begin{gathered}p_i\cdot p_j\\ = \sum_k \cos\big((i-j)\,\omega_k\big)\end{gathered}",
            "sin a sin b + cos a cos b = cos(a − b)",
        )
        st.metric(t("positional.metrics.spread"), f"{spread:.1e}", help=t("positional.metrics.spread_help"))
        st.caption(t("positional.gram_caption", n=n, pairs=n * n, offsets=len(by_offset)))


@section
def shift_part(n, d_model, base) -> None:
    """PE(pos+k) = M_k PE(pos): its own position, offset and frequency."""
    st.subheader(t("positional.sections.shift"), anchor="shift")
    with st.container(border=True):
        s1, s2, s3 = st.columns(3)
        pos = state.slider(t("positional.controls.pos"), 0, 200, 10, 1, key="pe_pos", where=s1)
        k = state.slider(t("positional.controls.k"), -32, 32, 5, 1, key="pe_k", where=s2)
        last = d_model // 2 - 1  # the frequencies of this d_model: a smaller d_model pulls the chosen one back inside
        freq = state.slider(t("positional.controls.freq"), 0, last, min(2, last), 1, key="pe_freq", where=s3)
    r1, r2, r3 = st.columns([3, 2, 2])
    with friendly_errors(t("positional.errors.shift")):
        check = tables.shift_check(pos, k, d_model, base, n, freq)
        m_k, text = check["m_k"], td("positional.charts.shift", k=k)
        chart(charts.shift_matrix_heatmap, m_k, text, name="m_k", data=m_k, where=r1, properties={"height": 340})
        r1.caption(t("positional.nonzero_caption", nonzero=len(m_k), d=d_model))
        points = tables.rotation_circle(n, d_model, base, freq, pos, k)
        text = td("positional.charts.circle", freq=freq)
        chart(
            charts.rotation_circle, points, freq, text, name="rotation_circle", data=points, where=r2, width="content"
        )
        with r3:
            formula(r"PE(pos+k) = M_k\, PE(pos)", t("positional.shift_caption"))
            (a, b), (c, e) = check["block"]
            formula(
                rf"M_k^{{({freq})}} = \begin{{pmatrix}}\cos k\omega_{{{freq}}} & \sin k\omega_{{{freq}}}\\ "
                rf"-\sin k\omega_{{{freq}}} & \cos k\omega_{{{freq}}}\end{{pmatrix}}"
            )
            formula(
                rf"= \begin{{pmatrix}}{a:.4f} & {b:.4f}\\ {c:.4f} & {e:.4f}\end{{pmatrix}}",
                t("positional.block_caption", row=2 * freq, col=2 * freq + 1, angle=check["angle"]),
            )
            m1, m2 = st.columns(2)
            m1.metric(
                t("positional.metrics.at_pos"), f"{check['error_at_pos']:.1e}", help="max |PE(pos+k) − M_k PE(pos)|"
            )
            m2.metric(t("positional.metrics.all"), f"{check['error_all']:.1e}", help=t("positional.metrics.all_help"))


shift_part(n, d_model, base)


@section
def aliasing_part() -> None:
    """When two codes of periods T_1..T_m collide: its own periods."""
    st.subheader(t("positional.sections.aliasing"), anchor="aliasing")
    with st.container(border=True):
        periods = tuple(
            state.multiselect(
                t("positional.controls.periods"),
                PERIODS,
                [4, 6],
                key="pe_periods",
                max_selections=MAX_PERIODS,
                help=t("positional.controls.periods_help"),
            )
        )
    a1, a2 = st.columns([3, 2])
    if not periods:
        a1.warning(t("positional.no_period"), icon=":material/edit_note:")
    else:
        with friendly_errors(t("positional.errors.aliasing")):
            lcm = tables.collision_period(periods)
            found = tables.first_collision(periods)
            window = tables.aliasing_window(periods)
            distances = tables.aliasing_table(periods, window)
            names = {
                "one period": t("positional.series.one", first=periods[0]),
                "all periods": t("positional.series.all"),
            }
            text = td("positional.charts.aliasing")
            tall = {"height": 320}
            chart(
                charts.aliasing,
                distances,
                found,
                text,
                names,
                name="aliasing",
                data=distances,
                where=a1,
                properties=tall,
            )
            with a2:
                formula(  # one step a line: on one line it overflows the column and is cut off after the first ⇔
                    r"\begin{aligned}&\text{code}(p) = \text{code}(0)\\ \iff\ & T_1 \mid p,\ \dots,\ T_m \mid p\\"
                    r"\iff\ & \operatorname{lcm}(T_1,\dots,T_m) \mid p\end{aligned}"
                )
                x1, x2, x3 = st.columns(3)
                shown = t("positional.none") if found is None else f"{found:,}"
                x1.metric(t("positional.metrics.collision"), shown, help=t("positional.metrics.collision_help"))
                x2.metric(t("positional.metrics.lcm"), f"{lcm:,}")
                x3.metric(t("positional.metrics.product"), f"{math.prod(periods):,}")
                coprime = tables.pairwise_coprime(periods)
                st.caption(t("positional.coprime_yes" if coprime else "positional.coprime_no", first=periods[0]))
                # the dashed line is drawn only when the collision lies on the chart (positions 0..window - 1)
                further = t("positional.further_caption", last=window - 1)
                st.caption(t("positional.dashed_caption") if lcm < window else further)


aliasing_part()


@section
def symmetry_part(n, d_model, base) -> None:
    """Positions break permutation equivariance: its own kind of order and amplitude."""
    st.subheader(t("positional.sections.symmetry"), anchor="symmetry")
    with st.container(border=True):
        e1, e2 = st.columns(2)
        kinds = td("positional.kinds")
        kind = state.selectbox(
            t("positional.controls.kind"), list(kinds), "random", key="pe_kind", where=e1, format_func=kinds.get
        )
        amplitude = state.slider(t("positional.controls.amplitude"), 0.0, 2.0, 1.0, 0.1, key="pe_amplitude", where=e2)
        a = round(amplitude, 1)  # a value typed into the link between two steps: the nearest computed amplitude
    q1, q2 = st.columns([3, 2])
    with friendly_errors(t("positional.errors.symmetry")):
        sweep = tables.equivariance_sweep(n, d_model, base, kind, AMPLITUDES, seed())
        text = td("positional.charts.equivariance")
        chart(
            charts.equivariance, sweep, a, text, name="equivariance", data=sweep, where=q1, properties={"height": 320}
        )
        with q2:
            formula(r"f(X) = \mathrm{Attention}(Z, Z, Z)")
            formula(r"Z = X + a\,PE", t("positional.tokens_caption"))
            formula(r"f(PX) \overset{?}{=} P\, f(X)", t("positional.order_caption"))
            at_a = tables.sweep_errors(n, d_model, base, kind, AMPLITUDES, seed())
            y1, y2 = st.columns(2)
            y1.metric(t("positional.metrics.without"), f"{at_a[0.0]:.1e}", help=t("positional.metrics.without_help"))
            y2.metric(t("positional.metrics.with", a=a), f"{at_a[a]:.1e}")
            st.caption(t("positional.sweep_caption", n=n, d=d_model))


symmetry_part(n, d_model, base)
