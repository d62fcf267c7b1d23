import math

import streamlit as st

from explorer.charts import equivariance as charts
from explorer.tables import equivariance as tables
from explorer.ui import state
from explorer.ui.claims import notes_claim
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, seed

KINDS = list(tables.PERMUTATION_CHOICES)
WIDTHS = [2, 4, 8, 16, 32, 64]  # even: sinusoidal encodings come in sin/cos pairs
CURRENT = {(causal, positional): label for label, causal, positional in tables.VARIANTS}
MATRICES = {"A": "a", "A′": "a_prime", "P A Pᵀ": "pap"}  # the tables' matrix names, and their keys in the strings

kind_labels = td("equivariance.kinds")
breakers = td("equivariance.breakers")
variant_labels = td("equivariance.variants")


def sci(x: float, digits: int) -> str:
    """An error in exponent form, but an exact 0 as 0 (0.00e+00 reads like a rounded small number)."""
    return "0" if x == 0 else f"{x:.{digits}e}"


def notice_points(setting, variant) -> list[str]:
    """What the weights and the variants' chart show at this setting, filled from their numbers."""
    _, s = tables.weights_views(setting)
    errors = tables.variant_errors(setting.n, setting.d, setting.perm, setting.seed, setting.precision)
    f = tables.plain_facts(errors, setting.perm, s["max_abs_v"], s["eps"])
    same = "same" if s["weights_gap"] <= s["weights_tolerance"] else "differ"
    plain = "identity" if f["identity"] else "alike" if f["plain"] == 0 else "ulps"
    marked = "all_broken" if f["broken"] == f["marked"] else "some_broken"
    return [
        t(f"equivariance.notice.{same}", gap=sci(s["weights_gap"], 1), variant=variant_labels[variant]),
        t(f"equivariance.notice.{plain}", **f),
        t(f"equivariance.notice.{marked}", **f),
    ]


header(t("equivariance.title"), t("equivariance.lede"))
predict_first(t("equivariance.question"), t("equivariance.answer"))

with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    n = state.slider(t("equivariance.controls.n"), 2, 32, 8, 1, key="n", where=c1)
    d = state.select_slider(t("equivariance.controls.d"), WIDTHS, 16, key="d", where=c1)
    kind = state.selectbox(
        t("equivariance.controls.permutation"),
        KINDS,
        KINDS[0],
        key="perm_kind",
        where=c2,
        format_func=kind_labels.get,
        help=t("equivariance.controls.permutation_help"),
    )
    shift = state.number_input(
        t("equivariance.controls.shift"), 0, 64, 1, key="shift", where=c2, disabled=kind != "cyclic"
    )
    text = state.text_input(
        t("equivariance.controls.typed"),
        "1,0,3,2,5,4,7,6",
        max_chars=8 * 32,
        key="perm_text",
        where=c3,
        disabled=kind != "typed",
        help=t("equivariance.controls.typed_help"),
    )
    precision = state.radio(
        t("equivariance.controls.precision"),
        list(tables.PRECISIONS),
        list(tables.PRECISIONS)[0],
        key="precision",
        where=c3,
        horizontal=True,
    )
    causal = state.toggle(t("equivariance.controls.causal"), False, key="causal", where=c4)
    positional = state.toggle(
        t("equivariance.controls.positional"),
        False,
        key="positional",
        where=c4,
        help=t("equivariance.controls.positional_help"),
    )
    try:
        perm = tables.choose_permutation(kind, n, seed(), shift=int(shift), text=text)
    except ValueError as err:
        example = ",".join(str(i) for i in reversed(range(n)))
        st.warning(t("equivariance.typed_warning", err=err, last=n - 1, example=example), icon=":material/edit_note:")
        perm = tuple(range(n))
    st.caption(t("equivariance.permutation_caption", perm=", ".join(map(str, perm))))

variant = CURRENT[(causal, positional)]
setting = tables.Variant(n, d, perm, causal, positional, seed(), precision)  # the weights views' one key
left, right = st.columns([3, 2])
with right:
    formula(
        r"\begin{aligned}A&=\mathrm{softmax}\big(QK^\top/\sqrt d\,\big)\\ \mathrm{Attention}(X)&=AV\end{aligned}",
        t("equivariance.attention_caption"),
    )
    formula(
        r"\begin{gathered}\begin{aligned}A'&=\mathrm{softmax}\big(PQK^\top P^\top/\sqrt d\,\big)\\ &=PAP^\top"
        r"\end{aligned}\\ \begin{aligned}\mathrm{Attention}(PX)&=PAP^\top\,PV\\ &=P\,\mathrm{Attention}(X)"
        r"\end{aligned}\end{gathered}",
        t("equivariance.proof_caption"),
    )
    formula(r"PMP^\top\neq M,\qquad PX+E\neq P(X+E)", t("equivariance.breaks_caption"))
    with friendly_errors(t("equivariance.errors.error")):
        notice(notice_points(setting, variant))

with left, friendly_errors(t("equivariance.errors.error")):
    _, s = tables.weights_views(setting)
    m1, m2, m3 = st.columns(3)
    m1.metric(t("equivariance.metrics.error"), sci(s["error"], 2), help=t("equivariance.metrics.error_help"))
    m2.metric(
        t("equivariance.metrics.tolerance"),
        f"{s['tolerance']:.2e}",
        help=t("equivariance.metrics.tolerance_help", ulps=tables.ULPS_PER_TERM),
    )
    m3.metric(t("equivariance.metrics.ulps"), f"{s['ulps']:.3g}", help=t("equivariance.metrics.ulps_help"))
    claim = f"max |Attention(PX) − P·Attention(X)| = {sci(s['error'], 1)}"
    if s["error"] == 0:
        why = t("equivariance.verdict.identity" if perm == tuple(range(n)) else "equivariance.verdict.alike")
        st.success(t("equivariance.verdict.exact", claim=claim, why=why), icon=":material/check_circle:")
    elif s["equivariant"]:
        st.success(
            t("equivariance.verdict.rounding", claim=claim, ulps=s["ulps"], tolerance=s["tolerance"]),
            icon=":material/check_circle:",
        )
    else:
        orders = math.log10(s["error"] / s["tolerance"])
        why = breakers.get(variant, breakers["unknown"])
        st.info(t("equivariance.verdict.broken", claim=claim, orders=orders, why=why), icon=":material/link_off:")
    st.caption(
        t(
            "equivariance.tolerance_caption",
            ulps=tables.ULPS_PER_TERM,
            eps=s["eps"],
            precision=precision,
            max_v=s["max_abs_v"],
        )
    )

with left, friendly_errors(t("equivariance.errors.variants")):
    errors = tables.variant_errors(n, d, perm, seed(), precision)
    text_variants = td("equivariance.charts.variants")
    chart(
        charts.variant_errors_log,
        errors,
        variant,
        tables.LOG_FLOOR,
        text_variants,
        td("equivariance.variants"),
        td("equivariance.verdicts"),
        name="variant_errors",
        data=tables.variant_rows(n, d, perm, seed(), precision),
    )
    st.caption(t("equivariance.variants_caption", floor=tables.LOG_FLOOR, zero=text_variants["zero"]))

st.subheader(t("equivariance.weights_heading"))
with friendly_errors(t("equivariance.errors.weights")):
    df, s = tables.weights_views(setting)
    vmax = s["largest_weight"]
    titles, heatmap_text = td("equivariance.matrices"), td("equivariance.charts.heatmap")
    for column, (matrix, name) in zip(st.columns(3), MATRICES.items(), strict=True):
        labels = {**heatmap_text, "title": titles[name]}
        cells = tables.weights_matrix(setting, matrix)
        chart(charts.weights_heatmap, df, matrix, labels, vmax, name=f"weights_{name}", data=cells, where=column)
    same = s["weights_gap"] <= s["weights_tolerance"]
    st.caption(
        t("equivariance.weights_caption", vmax=vmax, gap=sci(s["weights_gap"], 1))
        + t("equivariance.weights_same" if same else "equivariance.weights_broken")
    )

st.subheader(t("equivariance.projection.heading"))
left, right = st.columns([3, 2])
with right:
    formula(
        r"\begin{gathered}\begin{aligned}S&=(XW_Q)(XW_K)^\top/\sqrt d\\&=X\,(W_QW_K^\top)\,X^\top/\sqrt d"
        r"\end{aligned}\\ W_Q=W_K=W\ \Rightarrow\\ S=X\,WW^\top X^\top/\sqrt d=S^\top\\ KQ^\top=(QK^\top)^\top"
        r"\end{gathered}",
        t("equivariance.projection.formula_caption"),
    )
    with friendly_errors(t("equivariance.errors.projection")):
        for key, result in tables.projection_claims(n, d, seed()).items():  # judged on the tokens of the metrics beside
            notes_claim(key, result=result)
with left, friendly_errors(t("equivariance.errors.projection")):
    cells, sym = tables.shared_projection(n, d, seed())
    m1, m2, m3 = st.columns(3)
    m1.metric(t("equivariance.projection.separate"), f"{sym['separate']['scores']:.3g}")
    m2.metric(t("equivariance.projection.shared"), f"{sym['shared']['scores']:.3g}")
    m3.metric(t("equivariance.projection.kq_gap"), f"{sym['kq_gap']:.3g}", help=t("equivariance.projection.kq_help"))
    limit = sym["score_limit"]
    text = td("equivariance.charts.projection")
    for column, matrix in zip(st.columns(2), ("separate", "shared"), strict=True):
        title = t(f"equivariance.projection.titles.{matrix}")
        chart(
            charts.projection_heatmap,
            cells,
            matrix,
            "score",
            {**text, "title": title},
            limit,
            name=f"scores_{matrix}",
            data=tables.projection_matrix(n, d, seed(), matrix),
            where=column,
        )
    st.caption(
        t(
            "equivariance.projection.caption",
            separate=sym["separate"]["weights"],
            shared=sym["shared"]["weights"],
        )
    )
