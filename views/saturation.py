import math

import streamlit as st

from explorer.charts import saturation as charts
from explorer.tables import saturation as tables
from explorer.ui import state
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

N_KEYS = [2, 4, 8, 16, 32, 64]
SCALES = ["scaled", "unscaled"]
MAX_LOGITS_TEXT = 200  # characters: 16 numbers with room to spare, and what a URL value may hold

names = td("saturation.series")
scale_labels = td("saturation.scales")


def notice_points(f: dict, d_k: int, n_keys: int) -> list[str]:
    """What the sweep's charts show at this n and d_k, filled from its numbers (the shape changes with n)."""
    shape = "rises" if f["peak_d_k"] > 1 else "falls"
    below = "below" if f["below_from"] is not None else "never_below"
    if f["ratio"] >= tables.FAR:
        spread = t("saturation.notice.far", d_k=d_k, **f)
    else:
        near = "saturation.notice.near" if f["far_from"] else "saturation.notice.near_never"
        spread = t(near, d_k=d_k, n=n_keys, far=tables.FAR, **f)
    median = t(f"saturation.notice.{shape}", **f) + t(f"saturation.notice.{below}", **f)  # its space in en only
    return [median, spread, t("saturation.notice.temperature", root=d_k**0.5)]


def show_example(logits: tuple[float, ...], weights_column, jacobian_column) -> None:
    """One row of logits: ‖J‖_F, its weights and self-gradients, and the tinted Jacobian."""
    weights, _, stats = tables.softmax_example(logits)
    columns = td("saturation.example.columns")
    with weights_column:
        st.markdown("**softmax([" + ", ".join(f"{z:g}" for z in logits) + "])**")
        st.metric(
            t("saturation.metrics.jacobian"),
            f"{stats['jacobian_norm']:.3g}",
            help=t("saturation.example.jacobian_help"),
        )
        st.caption(t("saturation.example.stats", rest=stats["one_minus_max"], entropy=stats["entropy"]))
        st.dataframe(
            weights,
            hide_index=True,
            column_config={
                "i": "i",
                "logit": st.column_config.NumberColumn(columns["logit"], format="%g"),
                # 4 significant digits: 0.9184 as it reads, 2.061e-9 in exponent form only when it is that small
                "weight": st.column_config.NumberColumn(columns["weight"], format="%.4g"),
                "self_gradient": st.column_config.NumberColumn(columns["self_gradient"], format="%.4g"),
            },
        )
    with jacobian_column:
        st.caption(t("saturation.example.jacobian_caption"))
        st.html(tables.jacobian_html(logits))


header(
    t("saturation.title"),
    t("saturation.lede"),
    sections=("saturation.sections.sweep", "saturation.sections.temperature", "saturation.sections.examples"),
)
_, _, saturated = tables.softmax_example(tables.NOTES_UNSCALED)
_, _, healthy = tables.softmax_example(tables.NOTES_SCALED)
predict_first(
    t("saturation.question"),
    t(
        "saturation.answer",
        rest=saturated["one_minus_max"],
        saturated=saturated["top_gradient"],
        healthy=healthy["top_gradient"],
    ),
)

with state.box("sat_d_k", "sat_n_keys"):  # these two drive sections 1 and 2; T and the logits sit by section 2
    c1, c2 = st.columns(2)
    d_k = state.select_slider("d_k", list(tables.D_K_SWEEP), 64, key="sat_d_k", where=c1)
    n_keys = state.select_slider(t("saturation.controls.n_keys"), N_KEYS, 16, key="sat_n_keys", where=c2)

st.subheader(t("saturation.sections.sweep"), anchor="sweep")
with friendly_errors(t("saturation.errors.sweep")):
    chart_text = {
        "jacobian": td("saturation.charts.jacobian"),
        "entropy": td("saturation.charts.entropy", value=math.log(n_keys)),
        "max_weight": td("saturation.charts.max_weight"),
    }
    swept, parts = tables.saturation_sweep(n_keys, seed()), tables.sweep_parts(n_keys, seed())
    now = parts["at"][d_k]
    st.caption(t("saturation.now_caption", d_k=d_k))
    m1, m2, m3, m4 = st.columns(4)
    median_help, largest_help = t("saturation.metrics.median_help"), t("saturation.metrics.largest_help")
    m1.metric(t("saturation.metrics.median_unscaled"), f"{now.jacobian_median['unscaled']:.3g}", help=median_help)
    m2.metric(t("saturation.metrics.median_scaled"), f"{now.jacobian_median['scaled']:.3g}", help=median_help)
    m3.metric(t("saturation.metrics.largest_unscaled"), f"{now.max_weight['unscaled']:.3f}", help=largest_help)
    m4.metric(t("saturation.metrics.largest_scaled"), f"{now.max_weight['scaled']:.3f}", help=largest_help)
left, right = st.columns(2)
with left, friendly_errors(t("saturation.errors.jacobian")):
    text = chart_text["jacobian"]
    marker = {charts.D_K_PARAM: d_k}  # a spec parameter: moving d_k draws the kept chart, nothing is rebuilt
    chart(charts.jacobian_vs_d_k, swept, text, names, name="jacobian_vs_d_k", data=parts["jacobian"], params=marker)
with right:
    formula(r"p=\mathrm{softmax}(z),\qquad \frac{\partial p_i}{\partial z_j}=p_i\,(\delta_{ij}-p_j)")
    formula(
        r"J=\operatorname{diag}(p)-p\,p^{\top},\qquad \|J\|_F^2=\sum_{i,j}J_{ij}^2",
        t("saturation.sweep_caption", rows=tables.SWEEP_ROWS, n=n_keys),
    )
    notice(notice_points(tables.sweep_facts(swept, d_k), d_k, n_keys))
c1, c2 = st.columns(2)
with c1, friendly_errors(t("saturation.errors.entropy")):
    text, ceiling = chart_text["entropy"], math.log(n_keys)
    chart(
        charts.measure_vs_d_k,
        swept,
        column="entropy",
        text=text,
        names=names,
        ceiling=ceiling,
        name="entropy_vs_d_k",
        data=parts["entropy"],
        params={charts.D_K_PARAM: d_k},
    )
with c2, friendly_errors(t("saturation.errors.max_weight")):
    text = chart_text["max_weight"]
    chart(
        charts.measure_vs_d_k,
        swept,
        column="max_weight",
        text=text,
        names=names,
        name="max_weight_vs_d_k",
        data=parts["max_weight"],
        params={charts.D_K_PARAM: d_k},
    )


@section
def temperature_part(d_k, n_keys) -> None:
    """Temperature: its own T and scale, for the d_k and n chosen above."""
    st.subheader(t("saturation.sections.temperature"), anchor="temperature")
    with state.box("sat_temperature", "sat_scale"):
        c1, c2 = st.columns(2)
        temperature = state.select_slider(
            t("saturation.controls.temperature"),
            tables.TEMPERATURES,
            1.0,
            key="sat_temperature",
            where=c1,
            format_func=lambda x: f"{x:g}",
        )
        scale = state.radio(
            t("saturation.controls.scale"),
            SCALES,
            SCALES[0],
            key="sat_scale",
            where=c2,
            format_func=scale_labels.get,
            horizontal=True,
        )
    with friendly_errors(t("saturation.errors.temperature")):
        row, measures = tables.temperature_row(d_k, n_keys, temperature, seed())
        chosen = measures.set_index("series").loc[scale]
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(
            t("saturation.metrics.entropy"),
            f"{chosen.entropy:.4f}",
            help=t("saturation.metrics.entropy_help", t=temperature),
        )
        m2.metric(t("saturation.metrics.ceiling"), f"{math.log(n_keys):.4f}", help=t("saturation.metrics.ceiling_help"))
        m3.metric(t("saturation.metrics.largest"), f"{chosen.max_weight:.4f}")
        m4.metric(
            t("saturation.metrics.jacobian"), f"{chosen.jacobian_norm:.3g}", help=t("saturation.metrics.jacobian_help")
        )
        c1, c2 = st.columns(2)
        with c1:
            bars_text = td("saturation.charts.bars", t=temperature, value=1 / n_keys)
            shown = tables.bar_rows(d_k, n_keys, temperature, scale, seed())
            chart(charts.row_bars, row, scale, bars_text, name="weights_at_t", data=shown)
            st.caption(t("saturation.bars_caption", n=n_keys, d_k=d_k, scale=scale_labels[scale]))
            formula(r"p_i(T)=\frac{e^{z_i/T}}{\sum_j e^{z_j/T}}")
            formula(r"H(p)=-\sum_i p_i\log p_i\ \le\ \log n")
        with c2:
            curve, text = tables.temperature_curve(d_k, n_keys, seed()), td("saturation.charts.temperature")
            ceiling = math.log(n_keys)
            marker = {charts.T_PARAM: temperature}
            chart(
                charts.entropy_vs_temperature,
                curve,
                ceiling,
                text,
                names,
                name="entropy_vs_t",
                data=curve,
                params=marker,
            )
            st.caption(t("saturation.curve_caption", t=temperature))
            formula(
                r"\begin{aligned}T\to 0&:\ p\to\text{one-hot (argmax)},\ H\to 0\\"
                r"T\to\infty&:\ p_i\to\tfrac1n,\ H\to\log n\end{aligned}"
            )


temperature_part(d_k, n_keys)


st.subheader(t("saturation.sections.examples"), anchor="examples")
left, right = st.columns([3, 2])
with left:
    st.markdown(t("saturation.examples_intro"))
with right:
    formula(
        r"\frac{\partial p_1}{\partial z_1}=p_1(1-p_1)\approx 1-p_1",
        t(
            "saturation.examples_caption",
            saturated=saturated["jacobian_norm"],
            healthy=healthy["jacobian_norm"],
            ratio=healthy["jacobian_norm"] / saturated["jacobian_norm"],
        ),
    )


c1, c2 = st.columns(2)
for column, logits in ((c1, tables.NOTES_UNSCALED), (c2, tables.NOTES_SCALED)):
    with column, friendly_errors(t("saturation.errors.example", logits=logits)):
        show_example(logits, column, column)

with friendly_errors(t("saturation.errors.notes")):
    headers = td("saturation.notes.columns")
    st.markdown(t("saturation.notes.heading"))
    rows = tables.notes_check()
    st.dataframe(
        rows.assign(verdict=rows.verdict.map(td("notes.verdicts"))).drop(columns="key"),  # the claims table's verdicts
        hide_index=True,
        column_config={
            "verdict": headers["verdict"],
            "logits": headers["logits"],
            "notes": headers["notes"],
            "computed": headers["computed"],
            "largest_gap": st.column_config.NumberColumn(headers["largest_gap"], format="%.3g"),
            "worst_factor": st.column_config.NumberColumn(headers["worst_factor"], format="%.3g×"),
        },
    )
    st.caption(t("saturation.notes.caption"))


@section
def own_example_part() -> None:
    """A row of logits the student types."""
    own_text = state.text_input(
        t("saturation.controls.logits", n=tables.MAX_LOGITS),
        "4, 1, 0, -1",
        max_chars=MAX_LOGITS_TEXT,
        key="sat_logits",
    )
    with friendly_errors(t("saturation.errors.own")):
        own = tables.parse_logits(own_text)
        c1, c2 = st.columns([2, 3])
        show_example(own, c1, c2)


own_example_part()
