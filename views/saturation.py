import math

import streamlit as st

from attn_core.charts import saturation as charts
from attn_core.charts.common import to_spec
from attn_core.tables import saturation as tables
from ui import state as controls
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

N_KEYS = [2, 4, 8, 16, 32, 64]
SCALE_LABELS = {"scaled": "q·k / √d_k", "unscaled": "q·k (unscaled)"}
SWEEP_HELP = "Median over the rows of the Frobenius norm of the softmax Jacobian, at T = 1."

sweep = st.cache_data(max_entries=16)(tables.saturation_sweep)
temperature_curve = st.cache_data(max_entries=64)(tables.temperature_curve)
temperature_row = st.cache_data(max_entries=128)(tables.temperature_row)
example = st.cache_data(max_entries=32)(tables.softmax_example)
notes_check = st.cache_data(max_entries=1)(tables.notes_check)


# Building an Altair chart costs ~25 ms, more than this page's maths: charts are cached as Vega-Lite specs keyed
# by the controls their data depend on, and the current d_k and T are spec parameters (charts.set_param), so
# moving d_k or T rebuilds only what must change. Altair's schema check runs in tests/core/test_tables_saturation.py.
def _spec(chart) -> dict:
    return to_spec(chart, validate=False)


@st.cache_data(max_entries=16)
def d_k_charts(n_keys: int, seed_value: int) -> tuple[dict, dict, dict]:
    """Section 1's charts, with the d_k marker at 1 until set_param moves it."""
    df, ceiling, d_k = sweep(n_keys, seed_value), math.log(n_keys), tables.D_K_SWEEP[0]
    return (
        _spec(charts.jacobian_vs_d_k(df, d_k)),
        _spec(
            charts.measure_vs_d_k(
                df,
                d_k,
                column="entropy",
                title="Entropy of the weights, mean over rows",
                y_title="entropy H(p) in nats",
                ceiling=(ceiling, f"log n = {ceiling:.3f} (uniform)"),
            )
        ),
        _spec(
            charts.measure_vs_d_k(
                df, d_k, column="max_weight", title="Largest weight, mean over rows", y_title="max_i p_i (1 = one-hot)"
            )
        ),
    )


@st.cache_data(max_entries=128)
def bars_chart(d_k: int, n_keys: int, temperature: float, scale: str, seed_value: int) -> dict:
    row, _ = temperature_row(d_k, n_keys, temperature, seed_value)
    return _spec(charts.row_bars(row, scale, temperature))


@st.cache_data(max_entries=64)
def entropy_chart(d_k: int, n_keys: int, seed_value: int) -> dict:
    """The entropy-against-T chart, with the T marker at 1 until set_param moves it."""
    return _spec(charts.entropy_vs_temperature(temperature_curve(d_k, n_keys, seed_value), math.log(n_keys), 1.0))


def show_example(logits: tuple[float, ...], weights_column, jacobian_column) -> None:
    """One row of logits: ‖J‖_F, its weights and self-gradients, and the tinted Jacobian."""
    weights, cells, stats = example(logits)
    with weights_column:
        st.markdown("**softmax([" + ", ".join(f"{z:g}" for z in logits) + "])**")
        st.metric("‖J‖_F", f"{stats['jacobian_norm']:.2e}", help="Frobenius norm of the Jacobian diag(p) − p pᵀ.")
        st.caption(f"1 − max p = {stats['one_minus_max']:.3e} · entropy H(p) = {stats['entropy']:.3e} nats")
        st.dataframe(
            weights,
            hide_index=True,
            column_config={
                "i": "i",
                "logit": st.column_config.NumberColumn("logit z_i", format="%g"),
                "weight": st.column_config.NumberColumn("weight p_i", format="%.4e"),
                "self_gradient": st.column_config.NumberColumn("∂p_i/∂z_i", format="%.3e"),
            },
        )
    with jacobian_column:
        st.caption("Jacobian diag(p) − p pᵀ: row i, column j holds ∂p_i/∂z_j.")
        st.dataframe(charts.jacobian_table(cells, tables.JACOBIAN_LIMIT))


header(
    "Softmax saturation and temperature",
    "Feed softmax large logits and it turns into an argmax whose gradient vanishes; divide them by √d_k "
    "or by a temperature and it comes back to life.",
)
_, _, saturated = example(tables.NOTES_UNSCALED)
_, _, healthy = example(tables.NOTES_SCALED)
predict_first(
    "softmax([20, 0, −20]) gives the first key nearly all the weight. How large is ∂p₁/∂z₁, the gradient that "
    "weight passes back to its own logit: about 0.1, 0.001 or 10⁻⁹? And for [2.5, 0, −2.5]?",
    f"∂p₁/∂z₁ = p₁(1 − p₁). For [20, 0, −20] the other keys keep 1 − p₁ = {saturated['one_minus_max']:.3e}, "
    f"so ∂p₁/∂z₁ = {saturated['top_gradient']:.3e}: the 10⁻⁹ answer. For [2.5, 0, −2.5] it is "
    f"{healthy['top_gradient']:.4f}. Section 3 computes both, with the whole Jacobian.",
)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    d_k = controls.select_slider("d_k", list(tables.D_K_SWEEP), 64, key="sat_d_k", where=c1)
    n_keys = controls.select_slider("number of keys n", N_KEYS, 16, key="sat_n_keys", where=c2)
    temperature = controls.select_slider(
        "temperature T", tables.TEMPERATURES, 1.0, key="sat_temperature", where=c3, format_func=lambda t: f"{t:g}"
    )
    scale = controls.radio(
        "logits in section 2",
        list(SCALE_LABELS),
        list(SCALE_LABELS)[0],
        key="sat_scale",
        where=c4,
        format_func=SCALE_LABELS.get,
        horizontal=True,
    )

st.subheader("1 · Larger d_k, sharper softmax, smaller gradient")
with friendly_errors("The d_k sweep"):
    specs = d_k_charts(n_keys, seed())
    jacobian_spec, entropy_spec, max_weight_spec = (charts.set_param(c, charts.D_K_PARAM, d_k) for c in specs)
    now = sweep(n_keys, seed()).query("d_k == @d_k").set_index("series")
    st.caption(f"At d_k = {d_k}, the dotted line in the charts below:")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("median ‖J‖, q·k", f"{now.jacobian_median['unscaled']:.2e}", help=SWEEP_HELP)
    m2.metric("median ‖J‖, q·k/√d_k", f"{now.jacobian_median['scaled']:.2e}", help=SWEEP_HELP)
    m3.metric("largest weight, q·k", f"{now.max_weight['unscaled']:.3f}", help="Mean over the rows of max_i p_i.")
    m4.metric("largest weight, q·k/√d_k", f"{now.max_weight['scaled']:.3f}", help="Mean over the rows of max_i p_i.")
left, right = st.columns(2)
with left, friendly_errors("The Jacobian sweep"):
    st.vega_lite_chart(spec=jacobian_spec, width="stretch")
with right:
    formula(r"p=\mathrm{softmax}(z),\qquad \frac{\partial p_i}{\partial z_j}=p_i\,(\delta_{ij}-p_j)")
    formula(
        r"J=\operatorname{diag}(p)-p\,p^{\top},\qquad \|J\|_F^2=\sum_{i,j}J_{ij}^2",
        f"{tables.SWEEP_ROWS} random queries against n = {n_keys} keys per d_k, q and k from N(0, 1); "
        "scaled and unscaled logits share q and k.",
    )
    notice(
        [
            "Unscaled, the typical row's gradient (the median ‖J‖) collapses as d_k grows; scaled, it stays flat.",
            "The mean stays far above the median: the few rows whose top two logits nearly tie still learn, "
            "the rest are saturated.",
            "In section 2 the unscaled entropy curve is the scaled one shifted right by √d_k: a temperature "
            "T = √d_k does what the scaling does.",
        ]
    )
c1, c2 = st.columns(2)
with c1, friendly_errors("The entropy sweep"):
    st.vega_lite_chart(spec=entropy_spec, width="stretch")
with c2, friendly_errors("The largest-weight sweep"):
    st.vega_lite_chart(spec=max_weight_spec, width="stretch")

st.subheader("2 · Temperature: from argmax to uniform")
with friendly_errors("The temperature view"):
    chosen = temperature_row(d_k, n_keys, temperature, seed())[1].set_index("series").loc[scale]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("entropy H(p)", f"{chosen.entropy:.4f}", help=f"In nats, at T = {temperature:g}, for the bars below.")
    m2.metric("ceiling log n", f"{math.log(n_keys):.4f}", help="The entropy of uniform weights 1/n.")
    m3.metric("largest weight", f"{chosen.max_weight:.4f}")
    m4.metric("‖J‖_F", f"{chosen.jacobian_norm:.2e}", help="Frobenius norm of diag(p) − p pᵀ at this T.")
    c1, c2 = st.columns(2)
    with c1:
        st.vega_lite_chart(spec=bars_chart(d_k, n_keys, temperature, scale, seed()), width="stretch")
        st.caption(f"One query against n = {n_keys} keys at d_k = {d_k}; logits {SCALE_LABELS[scale]}.")
        formula(r"p_i(T)=\frac{e^{z_i/T}}{\sum_j e^{z_j/T}}")
        formula(r"H(p)=-\sum_i p_i\log p_i\ \le\ \log n")
    with c2:
        spec = charts.set_param(entropy_chart(d_k, n_keys, seed()), charts.T_PARAM, temperature)
        st.vega_lite_chart(spec=spec, width="stretch")
        st.caption(f"The same query's entropy at every T; the points mark T = {temperature:g}.")
        formula(
            r"\begin{aligned}T\to 0&:\ p\to\text{one-hot (argmax)},\ H\to 0\\"
            r"T\to\infty&:\ p_i\to\tfrac1n,\ H\to\log n\end{aligned}"
        )

st.subheader("3 · The notes' examples, computed")
left, right = st.columns([3, 2])
with left:
    st.markdown(
        "[2.5, 0, −2.5] is [20, 0, −20] divided by √64 = 8: one row of dot products at d_k = 64, before and "
        "after scaling. Every number below is computed when the page runs, in float64, at T = 1. The Jacobians "
        "share one colour scale (|∂p_i/∂z_j| ≤ 1/4), so a saturated one looks blank."
    )
with right:
    formula(
        r"\frac{\partial p_1}{\partial z_1}=p_1(1-p_1)\approx 1-p_1",
        f"when p₁ ≈ 1. Saturated: ‖J‖_F = {saturated['jacobian_norm']:.2e}. Scaled: {healthy['jacobian_norm']:.3f}, "
        f"{healthy['jacobian_norm'] / saturated['jacobian_norm']:.1e} times larger.",
    )


c1, c2 = st.columns(2)
for column, logits in ((c1, tables.NOTES_UNSCALED), (c2, tables.NOTES_SCALED)):
    with column, friendly_errors(f"The example {logits}"):
        show_example(logits, column, column)

with friendly_errors("The comparison with the notes"):
    st.markdown("**The notes' rounded weights against the computed ones**")
    st.dataframe(
        notes_check(),
        hide_index=True,
        column_config={
            "logits": "logits z",
            "notes": "printed in the notes",
            "computed": "softmax(z), computed",
            "largest_gap": st.column_config.NumberColumn("largest gap", format="%.2e"),
            "worst_factor": st.column_config.NumberColumn("worst factor off", format="%.3g×"),
        },
    )
    st.caption(
        "A small weight printed as 0.0001 looks harmless, but the gradient is proportional to it: "
        "it is off by the factor in the last column."
    )

own_text = st.text_input(
    f"Your own logits: 2 to {tables.MAX_LOGITS} numbers separated by commas", value="4, 1, 0, -1", key="sat_logits"
)
with friendly_errors("Your logits"):
    own = tables.parse_logits(own_text)
    c1, c2 = st.columns([2, 3])
    show_example(own, c1, c2)
