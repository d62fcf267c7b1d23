import streamlit as st

from attn_core.charts import sqrt_dk as charts
from attn_core.stats import DISTRIBUTIONS
from attn_core.tables import sqrt_dk as tables
from ui import state as controls
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

SWEEP_PAIRS = 2000  # per d_k in the sweep: a 3% standard error on each variance, one cheap draw
PAIRS = [1000, 2000, 5000, 10000, 20000]
LABELS = {"normal": "standard normal", "uniform": "uniform, unit variance", "shifted": "normal with mean μ ≠ 0"}

histograms = st.cache_data(max_entries=32)(tables.score_histograms)
sweep = st.cache_data(max_entries=16)(tables.variance_sweep)
softmax_row = st.cache_data(max_entries=64)(tables.softmax_row)

header(
    "Why divide by √d_k",
    "Draw random queries and keys, take their dot products, and see how far they spread as the dimension grows.",
)
predict_first(
    "With d_k = 256 and entries drawn from N(0, 1), what is the standard deviation of q·k?",
    "Var(q·k) = d_k, so the standard deviation is √256 = 16. Set d_k to 256 below and read the measured variance.",
)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    d_k = controls.select_slider("d_k", list(tables.D_K_SWEEP), 64, key="d_k", where=c1)
    n_pairs = controls.select_slider("query/key pairs", PAIRS, 5000, key="n_pairs", where=c2)
    distribution = controls.selectbox(
        "entries drawn from", DISTRIBUTIONS, "normal", key="distribution", where=c3, format_func=LABELS.get
    )
    mean = controls.slider("mean μ", 0.0, 2.0, 0.5, 0.1, key="mean", where=c3, disabled=distribution != "shifted")
    temperature = controls.slider("softmax temperature T", 0.1, 5.0, 1.0, 0.1, key="temperature", where=c4)

left, right = st.columns([3, 2])
with right:
    formula(r"\mathrm{Var}(q\cdot k)=\sum_{i=1}^{d_k}\mathrm{Var}(q_i k_i)=d_k", "for independent q_i, k_i ~ N(0, 1)")
    formula(r"\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1")
    notice(
        [
            "The unscaled histogram widens like √d_k, the scaled one stays put: its variance is 1 at every d_k.",
            "Only a small share of unscaled scores lands in [-3, 3], where softmax still responds to changes.",
            "With a non-zero mean the derivation fails: the variance becomes d_k(1 + 2μ²) and the mean d_k μ².",
        ]
    )

with left, friendly_errors("The score histograms"):
    bars, curves, stats = histograms(d_k, n_pairs, distribution, mean, seed())
    u, s = stats["unscaled"], stats["scaled"]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Var(q·k)", f"{u['var']:.2f}", help=f"Measured; ± {u['var_stderr']:.2f} is one standard error.")
    m2.metric("theory: d_k", f"{d_k}", help="For i.i.d. zero-mean, unit-variance entries.")
    m3.metric("Var(q·k/√d_k)", f"{s['var']:.3f}")
    m4.metric(
        "in [-3, 3]",
        f"{u['share_within_pm3']:.0%}",
        delta=f"scaled: {s['share_within_pm3']:.0%}",
        delta_color="off",
        help="Share of unscaled scores in softmax's responsive range [-3, 3]; below it, the scaled share.",
    )
    if controls.toggle("overlay both on one axis", True, key="overlay"):
        st.altair_chart(charts.overlaid_histograms(bars, curves), width="stretch")
    else:
        h1, h2 = st.columns(2)
        h1.altair_chart(
            charts.score_histogram(bars, curves, "unscaled", 3 * u["std"], "q·k with N(0, d_k), shaded ±3σ"),
            width="stretch",
        )
        h2.altair_chart(
            charts.score_histogram(bars, curves, "scaled", 3 * s["std"], "q·k / √d_k with N(0, 1), shaded ±3σ"),
            width="stretch",
        )
    st.caption(
        f"±3σ holds {u['share_within_3sigma']:.2%} of the unscaled and {s['share_within_3sigma']:.2%} of the scaled "
        f"scores ({n_pairs} pairs; a Gaussian holds 99.73%)."
    )

c_left, c_right = st.columns(2)
with c_left, friendly_errors("The variance sweep"):
    st.altair_chart(charts.variance_loglog(sweep(SWEEP_PAIRS, distribution, mean, seed()), d_k), width="stretch")
    st.caption(f"{SWEEP_PAIRS} pairs per d_k; the dashed line is the theory for the chosen distribution.")
with c_right, friendly_errors("The softmax row"):
    row = softmax_row(d_k, 8, temperature, seed())
    st.altair_chart(charts.softmax_bars(row), width="stretch")
    top = row.groupby("series").weight.max()
    st.markdown(
        f"Largest weight: **{top['unscaled']:.3f}** unscaled against **{top['scaled']:.3f}** scaled "
        f"(T = {temperature:g}). " + r"Formula: $\mathrm{softmax}(z/T)_i = e^{z_i/T} / \sum_j e^{z_j/T}$."
    )
