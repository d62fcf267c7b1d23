import math

import streamlit as st

from explorer.charts import geometry as charts
from explorer.tables import geometry as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

PARITY_D = [2, 4, 8, 16, 32, 64, 128]
HIDDEN = [4, 8, 16, 32, 64, 128]


def sci(x: float) -> str:
    """A residual in exponent form, an exact 0 as 0 (0.0e+00 reads like a rounded small number)."""
    return "0" if x == 0 else f"{x:.1e}"


header(
    t("geometry.title"),
    t("geometry.lede"),
    sections=(
        "geometry.sections.hull",
        "geometry.sections.regression",
        "geometry.sections.parity",
        "geometry.sections.cosine",
    ),
)
predict_first(t("geometry.question"), t("geometry.answer"))


@section
def hull_and_weights() -> None:
    """The convex-hull picture and, for the same q, K = V and T, attention beside Nadaraya-Watson."""
    st.subheader(t("geometry.sections.hull"), anchor="hull")
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns(4)
        n_points = state.slider(t("geometry.controls.n_points"), 3, 12, 6, 1, key="geo_n_points", where=c1)
        q_x = state.slider(t("geometry.controls.q_x"), -3.0, 3.0, 1.0, 0.1, key="geo_q_x", where=c2)
        q_y = state.slider(t("geometry.controls.q_y"), -3.0, 3.0, 0.5, 0.1, key="geo_q_y", where=c3)
        temperature = state.slider(
            t("geometry.controls.temperature"), 0.05, 5.0, 1.0, 0.05, key="geo_temperature", where=c4
        )

    summary = None  # stays None if the picture cannot be computed; the views below then skip their numbers
    left, right = st.columns([3, 2])
    with left, friendly_errors(t("geometry.errors.picture")):
        points, hull, summary = tables.hull_view(n_points, q_x, q_y, temperature, seed())
        text = td("geometry.charts.hull")
        chart(
            charts.hull_picture,
            points,
            hull,
            summary,
            (q_x, q_y),
            text,
            name="hull_picture",
            data=points,
            width="content",
        )
    with right:
        formula(r"o=\sum_{i=1}^{n}\alpha_i v_i,\qquad \alpha_i\ge 0,\quad \sum_{i=1}^{n}\alpha_i=1")
        formula(
            r"\alpha_i=\frac{e^{\,q\cdot k_i/(\sqrt{d}\,T)}}{\sum_j e^{\,q\cdot k_j/(\sqrt{d}\,T)}}",
            t("geometry.captions.convex"),
        )
        if summary is not None:
            m1, m2 = st.columns(2)
            m1.metric(
                t("geometry.metrics.inside"),
                t("geometry.metrics.yes") if summary["inside"] else t("geometry.metrics.no"),
                help=t("geometry.metrics.inside_help"),
            )
            m2.metric(
                t("geometry.metrics.largest"), f"{points.attention.max():.3f}", help=t("geometry.metrics.largest_help")
            )
            x, y = summary["output"]
            st.caption(
                t(
                    "geometry.captions.hull",
                    x=x,
                    y=y,
                    k=summary["n_vertices"],
                    n=n_points,
                    point=points.point[points.attention.idxmax()],
                )
            )
        notice(tl("geometry.notice.hull"))

    st.subheader(t("geometry.sections.regression"), anchor="regression")
    a_col, nw_col = st.columns(2)
    with a_col:
        formula(
            r"o=\mathrm{softmax}\!\left(\frac{qK^\top}{\sqrt{d}\,T}\right)V", "naive_attention(q, K, V, temperature=T)"
        )
    with nw_col:
        formula(
            r"\hat f(q)=\frac{\sum_i \mathcal{K}(q,k_i)\,v_i}{\sum_j \mathcal{K}(q,k_j)},\ \ "
            r"\mathcal{K}(q,k)=e^{\,q\cdot k/(\sqrt{d}\,T)}",
            "nadaraya_watson(q, K, V, kernel='exponential')",
        )
    if summary is not None:  # the same q, K = V and T as the picture above
        a_col.markdown(t("geometry.attention_output", x=summary["output"][0], y=summary["output"][1]))
        nw_col.markdown(t("geometry.nw_output", x=summary["nw_output"][0], y=summary["nw_output"][1]))
        labels = tuple(t(f"geometry.weights.{kind}") for kind in ("logit", "attention", "nw"))
        weights = tables.weights_table(n_points, q_x, q_y, temperature, seed(), labels)
        w_col, d_col = st.columns([5, 1])
        w_col.dataframe(weights, width="stretch")
        d_col.metric(
            t("geometry.metrics.max_diff"),
            sci(max(summary["max_abs_diff_output"], summary["max_abs_diff_weights"])),
            help=t("geometry.metrics.max_diff_help"),
        )


hull_and_weights()


@section
def regression_1d() -> None:
    """Kernel regression in one dimension: its own bandwidth, samples and noise."""
    st.markdown(f"**{t('geometry.sections.regression_1d')}**")
    with st.container(border=True):
        r1, r2, r3 = st.columns(3)
        bandwidth = state.slider(t("geometry.controls.bandwidth"), 0.05, 2.0, 0.3, 0.05, key="geo_bandwidth", where=r1)
        n_samples = state.slider(t("geometry.controls.n_samples"), 5, 200, 40, 5, key="geo_n_samples", where=r2)
        noise = state.slider(t("geometry.controls.noise"), 0.0, 1.0, 0.3, 0.05, key="geo_noise", where=r3)
    left, right = st.columns([3, 2])
    with left, friendly_errors(t("geometry.errors.regression")):
        samples, curves, rmse = tables.regression_1d(n_samples, noise, bandwidth, seed())
        chart(
            charts.regression_curves,
            samples,
            curves,
            td("geometry.charts.regression"),
            td("geometry.series.regression"),
            name="kernel_regression",
            data=tables.regression_rows(n_samples, noise, bandwidth, seed()),
        )
        e1, e2 = st.columns(2)
        e1.metric(t("geometry.metrics.rmse_gaussian"), f"{rmse['gaussian']:.3f}", help=t("geometry.metrics.rmse_help"))
        e2.metric(
            t("geometry.metrics.rmse_exponential"), f"{rmse['exponential']:.3f}", help=t("geometry.metrics.rmse_help")
        )
    with right:
        formula(r"\mathcal{K}_{\exp}(x,x_i)=e^{\,x\,x_i/h^2}")
        formula(
            r"\begin{aligned}\mathcal{K}_{\mathrm{gauss}}(x,x_i)&=e^{-(x-x_i)^2/2h^2}\\"
            r"&=e^{\,x\,x_i/h^2}\;e^{-x_i^2/2h^2}\;e^{-x^2/2h^2}\end{aligned}",
            t("geometry.captions.gauss"),
        )
        notice(tl("geometry.notice.regression"))


regression_1d()


@section
def parity() -> None:
    """Additive against dot-product scores under q, k -> -q, -k."""
    st.subheader(t("geometry.sections.parity"), anchor="parity")
    with st.container(border=True):
        p1, p2 = st.columns(2)
        d = state.select_slider(t("geometry.controls.parity_d"), PARITY_D, 16, key="geo_parity_d", where=p1)
        hidden = state.select_slider(t("geometry.controls.hidden"), HIDDEN, 32, key="geo_hidden", where=p2)
    params = None
    left, right = st.columns([3, 2])
    with left, friendly_errors(t("geometry.errors.parity")):
        pairs, parity, params = tables.parity_samples(d, hidden, seed())
        text, names = td("geometry.charts.parity"), td("geometry.series.parity")
        chart(charts.parity_scatter, pairs, text, names, name="parity_scatter", data=pairs)
        o1, o2 = st.columns(2)
        o1.metric(t("geometry.metrics.odd"), sci(parity["additive"]["odd"]), help="max |e(−q,−k) + e(q,k)|")
        o2.metric(t("geometry.metrics.even"), sci(parity["dot product"]["even"]), help="max |s(−q,−k) − s(q,k)|")
    with right:
        formula(r"e(q,k)=w^\top\tanh(W_q q+W_k k)", t("geometry.captions.additive"))
        formula(r"e(-q,-k)=-e(q,k)", t("geometry.captions.odd"))
        formula(r"s(q,k)=\frac{q\cdot k}{\sqrt d}=s(-q,-k)", t("geometry.captions.even"))
        if params is not None:
            words = td("geometry.params.names"), td("geometry.params.counts"), td("geometry.params.columns")
            st.dataframe(tables.parameters_table(d, hidden, seed(), *words), hide_index=True, width="stretch")
        notice(tl("geometry.notice.parity"))


parity()


@section
def cosine() -> None:
    """Cosines of random directions: their variance 1/d."""
    st.subheader(t("geometry.sections.cosine"), anchor="cosine")
    with st.container(border=True):
        d_cos = state.select_slider(t("geometry.controls.cos_d"), list(tables.COS_D_SWEEP), 64, key="geo_cos_d")
    left, right = st.columns(2)
    with friendly_errors(t("geometry.errors.cosine")):
        bars, curve, cos_stats = tables.cosine_histogram(d_cos, tables.COS_PAIRS, seed())
        sweep = tables.cosine_variance_sweep(tables.COS_SWEEP_PAIRS, seed())
        hist_text = td("geometry.charts.cosine", d=d_cos)
        chart(charts.cosine_histogram, bars, curve, hist_text, name="cosine_histogram", data=bars, where=left)
        sweep_text = td("geometry.charts.cosine_sweep")
        chart(charts.cosine_variance_loglog, sweep, d_cos, sweep_text, name="cosine_variance", data=sweep, where=right)
        f_col, m1, m2 = st.columns([2, 1, 1])
        f_col.latex(r"\mathrm{E}\cos\theta=0,\qquad \mathrm{Var}\cos\theta=\frac{1}{d}")
        m1.metric(
            t("geometry.metrics.cos_var"),
            f"{cos_stats['var']:.5f}",
            help=t("geometry.metrics.cos_var_help", se=cos_stats["var_stderr"], n=tables.COS_PAIRS),
        )
        m2.metric(t("geometry.metrics.cos_theory"), f"{cos_stats['theory']:.5f}")
        notice(cosine_notice(d_cos, cos_stats))


def cosine_notice(d: int, stats: dict) -> list[str]:
    """What the histogram shows at this d, in the numbers measured on its own pairs."""
    if math.isnan(stats["degrees"]):  # 3/sqrt(d) >= 1: three standard deviations allow every angle
        return tl("geometry.notice.cosine_wide", d=d, band=stats["band"], next_d=tables.COS_NARROW_FROM)
    keys = ("within", "degrees", "band")
    return tl("geometry.notice.cosine_narrow", d=d, pairs=tables.COS_PAIRS, **{k: stats[k] for k in keys})


cosine()
