import streamlit as st

from attn_core.charts import geometry as charts
from attn_core.charts.common import to_spec
from attn_core.tables import geometry as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

PARITY_D = [2, 4, 8, 16, 32, 64, 128]
HIDDEN = [4, 8, 16, 32, 64, 128]


# Each view caches its table and its finished chart spec by plain parameters, so a rerun redraws
# only the view whose control moved.
@st.cache_data(max_entries=256)
def hull_view(n_points: int, q_x: float, q_y: float, temperature: float, rng_seed: int):
    points, hull, summary = tables.hull_view(n_points, q_x, q_y, temperature, rng_seed)
    return points, summary, to_spec(charts.hull_picture(points, hull, summary, (q_x, q_y)))


@st.cache_data(max_entries=64)
def regression_view(n_samples: int, noise: float, bandwidth: float, rng_seed: int):
    samples, curves, rmse = tables.regression_1d(n_samples, noise, bandwidth, rng_seed)
    return rmse, to_spec(charts.regression_curves(samples, curves))


@st.cache_data(max_entries=64)
def parity_view(d: int, hidden: int, rng_seed: int):
    pairs, stats, params = tables.parity_samples(d, hidden, rng_seed)
    return stats, params, to_spec(charts.parity_scatter(pairs))


cosine_sweep = st.cache_data(max_entries=8)(tables.cosine_variance_sweep)


@st.cache_data(max_entries=32)
def cosine_view(d: int, rng_seed: int):
    bars, curve, stats = tables.cosine_histogram(d, tables.COS_PAIRS, rng_seed)
    sweep = cosine_sweep(tables.COS_SWEEP_PAIRS, rng_seed)
    return (
        stats,
        to_spec(charts.cosine_histogram(bars, curve, d)),
        to_spec(charts.cosine_variance_loglog(sweep, d)),
    )


header(
    "Geometry and kernel regression",
    "Attention averages the value vectors with weights that are positive and sum to one. "
    "In two dimensions you can watch where that average lands, and see that it is a kernel regression.",
)
predict_first(
    "Make the temperature T very small. Does the output move to the value nearest the query q, or somewhere else?",
    "To the value with the **largest q·vᵢ**: the hull vertex farthest along the direction of q, which is often "
    "not the value nearest to q. Dot-product scores reward alignment and length, not closeness. "
    "Raise T instead and the weights even out, so the output slides towards the centroid.",
)

st.subheader("1 · The output lies in the convex hull of the values")
with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    n_points = c1.slider("value vectors n", 3, 12, 6, key="geo_n_points")
    q_x = c2.slider("query q₁", -3.0, 3.0, 1.0, 0.1, key="geo_q_x")
    q_y = c3.slider("query q₂", -3.0, 3.0, 0.5, 0.1, key="geo_q_y")
    temperature = c4.slider("temperature T", 0.05, 5.0, 1.0, 0.05, key="geo_temperature")

summary = None  # stays None if the picture cannot be computed; the views below then skip their numbers
left, right = st.columns([3, 2])
with left, friendly_errors("The 2-D picture"):
    points, summary, spec = hull_view(n_points, q_x, q_y, temperature, seed())
    st.vega_lite_chart(spec, width="content")
with right:
    formula(r"o=\sum_{i=1}^{n}\alpha_i v_i,\qquad \alpha_i\ge 0,\quad \sum_{i=1}^{n}\alpha_i=1")
    formula(
        r"\alpha_i=\frac{e^{\,q\cdot k_i/(\sqrt{d}\,T)}}{\sum_j e^{\,q\cdot k_j/(\sqrt{d}\,T)}}",
        "keys = values here and d = 2: o is a convex combination of the values vᵢ",
    )
    if summary is not None:
        m1, m2 = st.columns(2)
        m1.metric("o inside the hull", "yes" if summary["inside"] else "NO", help="Checked against every hull edge.")
        m2.metric("largest weight", f"{points.attention.max():.3f}", help="On the value labelled in the caption.")
        st.caption(
            "o = ({:.3f}, {:.3f}); ".format(*summary["output"])
            + f"{summary['n_vertices']} of the {n_points} values are hull vertices; the largest weight sits on "
            f"{points.point[points.attention.idxmax()]}."
        )
    notice(
        [
            "Whatever the query, o never leaves the dashed hull: the weights are positive and sum to one.",
            "Small T pushes o to the vertex with the largest q·vᵢ; large T pulls it to the centroid.",
            "Lengthening q does the same as lowering T: only q/T enters the weights.",
        ]
    )

st.subheader("2 · Attention is Nadaraya-Watson kernel regression")
a_col, nw_col = st.columns(2)
with a_col:
    formula(r"o=\mathrm{softmax}\!\left(\frac{qK^\top}{\sqrt{d}\,T}\right)V", "naive_attention(q, K, V, temperature=T)")
with nw_col:
    formula(
        r"\hat f(q)=\frac{\sum_i \mathcal{K}(q,k_i)\,v_i}{\sum_j \mathcal{K}(q,k_j)},\ \ "
        r"\mathcal{K}(q,k)=e^{\,q\cdot k/(\sqrt{d}\,T)}",
        "nadaraya_watson(q, K, V, kernel='exponential')",
    )
if summary is not None:  # the same q, K = V and T as the picture above
    a_col.markdown("attention output: **({:.6f}, {:.6f})**".format(*summary["output"]))
    nw_col.markdown("Nadaraya-Watson prediction: **({:.6f}, {:.6f})**".format(*summary["nw_output"]))
    weights = points.set_index("point")[["logit", "attention", "nw"]].T
    weights.index = ["score q·vᵢ/(√2 T)", "weight αᵢ (attention)", "weight (Nadaraya-Watson)"]
    w_col, d_col = st.columns([5, 1])
    w_col.dataframe(weights, width="stretch")
    d_col.metric(
        "max |difference|",
        f"{max(summary['max_abs_diff_output'], summary['max_abs_diff_weights']):.1e}",
        help="Largest gap between the two computations, over the weights and the output (float64).",
    )

st.markdown("**The same estimator on a 1-D regression problem**")
with st.container(border=True):
    r1, r2, r3 = st.columns(3)
    bandwidth = r1.slider("bandwidth h", 0.05, 2.0, 0.3, 0.05, key="geo_bandwidth")
    n_samples = r2.slider("samples", 5, 200, 40, 5, key="geo_n_samples")
    noise = r3.slider("noise σ", 0.0, 1.0, 0.3, 0.05, key="geo_noise")
left, right = st.columns([3, 2])
with left, friendly_errors("The 1-D regression"):
    rmse, spec = regression_view(n_samples, noise, bandwidth, seed())
    st.vega_lite_chart(spec, width="stretch")
    e1, e2 = st.columns(2)
    e1.metric("RMSE, gaussian kernel", f"{rmse['gaussian']:.3f}", help="Against the noise-free curve.")
    e2.metric("RMSE, exponential kernel", f"{rmse['exponential']:.3f}", help="Against the noise-free curve.")
with right:
    formula(r"\mathcal{K}_{\exp}(x,x_i)=e^{\,x\,x_i/h^2}")
    formula(
        r"\begin{aligned}\mathcal{K}_{\mathrm{gauss}}(x,x_i)&=e^{-(x-x_i)^2/2h^2}\\"
        r"&=e^{\,x\,x_i/h^2}\;e^{-x_i^2/2h^2}\;e^{-x^2/2h^2}\end{aligned}",
        "the last factor cancels in the ratio: a gaussian kernel is the exponential one with a bias per key",
    )
    notice(
        [
            "The gaussian kernel averages nearby samples: a small h follows the noise, a large h flattens the curve.",
            "The exponential (dot-product) kernel is not local: it favours the largest x·xᵢ, so for x > 0 it "
            "copies the rightmost samples and for x < 0 the leftmost ones.",
        ]
    )

st.subheader("3 · Additive against dot-product attention")
with st.container(border=True):
    p1, p2 = st.columns(2)
    d = p1.select_slider("dimension d of q and k", PARITY_D, value=16, key="geo_parity_d")
    hidden = p2.select_slider("additive hidden size h", HIDDEN, value=32, key="geo_hidden")
left, right = st.columns([3, 2])
with left, friendly_errors("The parity check"):
    parity, params, spec = parity_view(d, hidden, seed())
    st.vega_lite_chart(spec, width="stretch")
    o1, o2 = st.columns(2)
    o1.metric("additive: odd residual", f"{parity['additive']['odd']:.1e}", help="max |e(−q,−k) + e(q,k)|")
    o2.metric("dot product: even residual", f"{parity['dot product']['even']:.1e}", help="max |s(−q,−k) − s(q,k)|")
with right:
    formula(r"e(q,k)=w^\top\tanh(W_q q+W_k k)", "additive (Bahdanau) score")
    formula(r"e(-q,-k)=-e(q,k)", "tanh is odd, so the additive score is odd")
    formula(r"s(q,k)=\frac{q\cdot k}{\sqrt d}=s(-q,-k)", "a dot product (any qᵀMk) is even")
    with friendly_errors("The parameter counts"):
        st.dataframe(params, hide_index=True, width="stretch")
    notice(
        [
            "Only the zero function is both odd and even: no choice of weights makes the two scores agree everywhere.",
            "The dot product has no parameters of its own; the additive score needs 2·d·h + h.",
        ]
    )

st.subheader("4 · Random vectors in high dimension are nearly orthogonal")
with st.container(border=True):
    d_cos = st.select_slider("dimension d", list(tables.COS_D_SWEEP), value=64, key="geo_cos_d")
left, right = st.columns(2)
with friendly_errors("The cos θ views"):
    cos_stats, hist_spec, sweep_spec = cosine_view(d_cos, seed())
    left.vega_lite_chart(hist_spec, width="stretch")
    right.vega_lite_chart(sweep_spec, width="stretch")
    f_col, m1, m2 = st.columns([2, 1, 1])
    f_col.latex(r"\mathrm{E}\cos\theta=0,\qquad \mathrm{Var}\cos\theta=\frac{1}{d}")
    m1.metric(
        "measured Var cos θ",
        f"{cos_stats['var']:.5f}",
        help=f"± {cos_stats['var_stderr']:.5f} is one standard error ({tables.COS_PAIRS} pairs).",
    )
    m2.metric("theory 1/d", f"{cos_stats['theory']:.5f}")
notice(
    [
        "By d = 1024 almost every pair of random directions is within about 5° of 90° (three standard deviations).",
        "So dot products of random vectors are small next to |q||k|; learned alignment is what stands out.",
    ]
)
