import streamlit as st

from explorer.charts import sqrt_dk as charts
from explorer.tables import sqrt_dk as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, seed

SWEEP_PAIRS = 2000  # per d_k in the sweep: a 3% standard error on each variance, one cheap draw
PAIRS = [1000, 2000, 5000, 10000, 20000]
ROW_KEYS = 8  # keys in the softmax row


def notice_points(d_k: int, distribution: str, mean: float, span) -> list[str]:
    """What to notice, true for the chosen distribution; the gaps line quotes the softmax row's spans."""
    if distribution == "shifted":
        var, drift = tables.scaled_moments(d_k, mean)
        first = t("sqrt_dk.notice.shifted", var=var, drift=drift, d_k=d_k)
    else:
        first = t("sqrt_dk.notice.widens")
    return [first, t("sqrt_dk.notice.gaps", u=span["unscaled"], s=span["scaled"], d_k=d_k)]


labels = td("sqrt_dk.distributions")
names = td("sqrt_dk.series")

header(t("sqrt_dk.title"), t("sqrt_dk.lede"))
predict_first(t("sqrt_dk.question"), t("sqrt_dk.answer"))

with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    d_k = state.select_slider("d_k", list(tables.D_K_SWEEP), 64, key="d_k", where=c1)
    n_pairs = state.select_slider(t("sqrt_dk.controls.pairs"), PAIRS, 5000, key="n_pairs", where=c2)
    distribution = state.selectbox(
        t("sqrt_dk.controls.distribution"),
        tables.DISTRIBUTIONS,
        "normal",
        key="distribution",
        where=c3,
        format_func=labels.get,
    )
    mean = state.slider(
        t("sqrt_dk.controls.mean"), 0.0, 2.0, 0.5, 0.1, key="mean", where=c3, disabled=distribution != "shifted"
    )

left, right = st.columns([3, 2])
with right:
    formula(r"\mathrm{Var}(q\cdot k)=\sum_{i=1}^{d_k}\mathrm{Var}(q_i k_i)=d_k", t("sqrt_dk.variance_caption"))
    formula(r"\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1")
    # softmax ignores a shift of its row: what the scaling changes is the gaps within one row (its logits' span)
    with friendly_errors(t("sqrt_dk.sections.softmax")):
        notice(notice_points(d_k, distribution, mean, tables.logit_spans(d_k, ROW_KEYS, seed())))

with left, friendly_errors(t("sqrt_dk.sections.histograms")):
    setting = (d_k, n_pairs, distribution, mean, seed())
    bars, curves, stats = tables.score_histograms(*setting)
    facts = tables.histogram_facts(*setting)
    u, s = stats["unscaled"], stats["scaled"]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("sqrt_dk.metrics.var"), f"{u['var']:.2f}", help=t("sqrt_dk.metrics.var_help", se=u["var_stderr"]))
    which, theory = "shifted" if distribution == "shifted" else "centred", facts["theory_var"]
    m2.metric(t(f"sqrt_dk.metrics.theory.{which}"), f"{theory:g}", help=t(f"sqrt_dk.metrics.theory_help.{which}"))
    m3.metric(t("sqrt_dk.metrics.scaled"), f"{s['var']:.3f}")
    m4.metric(
        t("sqrt_dk.metrics.std"),
        f"{u['std']:.2f}",
        delta=t("sqrt_dk.metrics.std_delta", std=s["std"]),
        delta_color="off",
        delta_arrow="off",  # two values side by side, not a change
        help=t("sqrt_dk.metrics.std_help"),
    )
    if state.toggle(t("sqrt_dk.controls.overlay"), True, key="overlay"):
        text = td("sqrt_dk.charts.overlaid")
        band = facts["bands"]["scaled"]
        chart(charts.overlaid_histograms, bars, curves, band, text, names, name="score_histograms", data=bars)
    else:
        h1, h2 = st.columns(2)
        for where, series in ((h1, "unscaled"), (h2, "scaled")):
            chart(
                charts.score_histogram,
                bars,
                curves,
                series,
                facts["bands"][series],
                td(f"sqrt_dk.charts.{series}"),
                name=f"score_histogram_{series}",
                data=tables.series_bars(*setting, series),
                where=where,
            )
    # dividing by sqrt(d_k) divides sigma too, so both series hold the same share: one number
    st.caption(t("sqrt_dk.sigma_caption", share=u["share_within_3sigma"], n=n_pairs))
    # A sum of few products q_i k_i is not normal (one product of two normals peaks at 0, with heavy tails): say so
    # where the bars visibly leave the curve (tables.histogram_facts).
    theory = facts["kurtosis_theory"]
    if facts["not_normal"]:
        why = t("sqrt_dk.not_normal.normal", theory=theory) if theory is not None else t("sqrt_dk.not_normal.other")
        total = t("sqrt_dk.not_normal.one") if d_k == 1 else t("sqrt_dk.not_normal.sum", d_k=d_k)
        promise = t(f"sqrt_dk.not_normal.promise.{which}")
        text = t("sqrt_dk.not_normal.text", d_k=d_k, kurtosis=s["kurtosis"], why=why, total=total, promise=promise)
        st.info(text, icon=":material/info:")

c_left, c_right = st.columns(2)
with c_left, friendly_errors(t("sqrt_dk.sections.sweep")):
    variances = tables.variance_sweep(SWEEP_PAIRS, distribution, mean, seed())
    text = td("sqrt_dk.charts.sweep")
    chart(charts.variance_loglog, variances, d_k, text, name="variance_sweep", data=variances)
    st.caption(t("sqrt_dk.sweep_caption", n=SWEEP_PAIRS))
with c_right, friendly_errors(t("sqrt_dk.sections.softmax")):
    # T drives only this chart: its slider sits beside it, not in the box at the top
    temperature = state.slider(t("sqrt_dk.controls.temperature"), 0.1, 5.0, 1.0, 0.1, key="temperature")
    row = tables.softmax_row(d_k, ROW_KEYS, temperature, seed())
    chart(charts.softmax_bars, row, td("sqrt_dk.charts.softmax"), names, name="softmax_row", data=row)
    if distribution != "normal":  # the row stays a plain N(0, 1) draw: say so beside a page set to another one
        st.caption(t("sqrt_dk.row_normal", n=ROW_KEYS))
    top = tables.largest_weights(d_k, ROW_KEYS, temperature, seed())
    st.markdown(
        t("sqrt_dk.largest", u=top["unscaled"], s=top["scaled"], t=temperature)
        + r" $\mathrm{softmax}(z/T)_i = e^{z_i/T} / \sum_j e^{z_j/T}$."
    )
