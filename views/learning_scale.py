import math

import pandas as pd
import streamlit as st

from explorer.charts import learning as charts
from explorer.tables import learning as tables
from explorer.ui import state, training
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, seed

BUDGET_S = 2 * tables.TIME_BUDGET_S  # two runs
task_names = td("learning.tasks")
names = td("learning_scale.series")


def complete(both) -> bool:
    return all(r.diverged or not r.stopped for r in (both.scaled, both.unscaled))


def start_metrics(scaled, unscaled, d_k) -> None:
    """Step 0: the same weights in both models, so the logits differ by exactly √d_k."""
    ratio = unscaled.logit_std / scaled.logit_std
    st.markdown(t("learning_scale.start_ratio", d_k=d_k, root=math.sqrt(d_k), ratio=ratio))
    row = st.container(horizontal=True, gap="medium")  # wraps where the column is narrow (projector mode)
    for name, value in (
        ("logit_sd_scaled", scaled.logit_std),
        ("logit_sd_unscaled", unscaled.logit_std),
        ("max_weight_scaled", scaled.max_weight),
        ("max_weight_unscaled", unscaled.max_weight),
    ):
        row.metric(t(f"learning_scale.metrics.{name}"), f"{value:.2f}", width="content")


def start_notice(settings) -> list[str]:
    """What to look for, the first point chosen by the step-0 largest weights shown beside it."""
    try:
        scaled, unscaled = tables.untrained_pair(settings)
    except ValueError:  # settings the page refuses: the left column says why
        return tl("learning_scale.notice")
    kind = "peaked" if unscaled.max_weight > tables.PEAKED else "spread"
    uniform = 1 / scaled.attention["cross1"].shape[-1]
    fields = {"scaled": scaled.max_weight, "unscaled": unscaled.max_weight, "uniform": uniform}
    first = t(f"learning_scale.start_{kind}", threshold=tables.PEAKED, **fields)
    return [first, *tl("learning_scale.notice")]


def verdict(summary: pd.DataFrame) -> str:
    rows = summary.set_index("series")
    parts = []
    for series in ("scaled", "unscaled"):
        hit = rows.loc[series, "steps_to_accuracy"]
        when = t("learning_scale.never") if pd.isna(hit) else t("learning_scale.at_step", step=int(hit))
        parts.append(
            t(
                "learning_scale.verdict_run",
                run=names[series],
                when=when,
                accuracy=rows.loc[series, "final_accuracy"],
                mass=rows.loc[series, "final_alignment_mass"],
            )
        )
    return " ".join(parts)


header(t("learning_scale.title"), t("learning_scale.lede"))
predict_first(t("learning_scale.question"), t("learning_scale.answer"))

with st.container(border=True):
    c1, c2, c3, c4, c5 = st.columns([3, 3, 2, 2, 2], vertical_alignment="bottom")
    task = state.selectbox(
        t("learning.controls.task"),
        list(tables.TASKS),
        "reverse",
        key="scale_task",
        where=c1,
        format_func=task_names.get,
    )
    d_k = state.select_slider("d_k", list(tables.D_KS), 64, key="scale_d_k", where=c2)
    init_scale = state.select_slider(
        t("learning_scale.controls.init_scale"),
        list(tables.INIT_SCALES),
        2.0,
        key="scale_init",
        where=c3,
        format_func=lambda v: f"{v:g}",
        help=t("learning_scale.controls.init_scale_help"),
    )
    steps = state.select_slider(
        t("learning.controls.steps"), list(tables.SCALE_STEPS), 300, key="scale_steps", where=c4
    )
    clicked = c5.button(
        t("learning_scale.controls.train"), type="primary", icon=":material/model_training:", key="scale_train"
    )
    st.caption(t("learning_scale.controls_caption"))

settings = tables.ScaleSettings(task, d_k, init_scale, steps, seed())
key = ("scale", settings)
both = training.trained(
    key,
    settings.config,
    tables.compare_scaling,
    clicked=clicked,
    budget_s=BUDGET_S,
    stop_key="scale_stop",
    complete=complete,
    runs=2,  # scaled and unscaled
)

left, right = st.columns([3, 2])
with right:
    formula(r"\mathrm{Var}(q\cdot k)=d_k\,s^4\quad(\text{i.i.d.})")
    formula(r"\mathrm{sd}\Big(\frac{q\cdot k}{\sqrt{d_k}}\Big)=s^2", t("learning_scale.formula_caption"))
    formula(r"\frac{\partial p_i}{\partial z_j}=p_i(\delta_{ij}-p_j)\ \to\ 0", t("learning_scale.jacobian_caption"))
    notice(start_notice(settings))
with left, friendly_errors(t("learning_scale.sections.start")):
    st.subheader(t("learning_scale.sections.start"))
    s0, u0 = tables.untrained_pair(settings)
    start_metrics(s0, u0, d_k)
    variance = tables.variance_points(init_scale, task, seed(), d_k, both)
    text, series = td("learning_scale.charts.variance", s=init_scale), td("learning_scale.variance_series")
    chart(charts.variance_vs_d_k, variance, d_k, text, series, name="scale_variance_vs_d_k", data=variance)
    st.caption(t("learning_scale.variance_caption"))

if both is None:
    st.info(t("learning_scale.untrained"), icon=":material/info:")
    st.stop()

with friendly_errors(t("learning_scale.sections.training")):
    st.subheader(t("learning_scale.sections.training"))
    for name, run in (("scaled", both.scaled), ("unscaled", both.unscaled)):
        if run.diverged:
            st.warning(f"**{names[name]}**: " + t("learning.diverged", step=run.final.step), icon=":material/warning:")
        elif run.stopped:
            stopped_text = t("learning.budget_hit", step=run.final.step, seconds=BUDGET_S)
            st.warning(f"**{names[name]}**: " + stopped_text, icon=":material/timer_off:")
    df, summary = tables.scale_frames(both)
    st.info(verdict(summary), icon=":material/insights:")  # two runs' facts, not a success: neither may learn
    panels = [
        ("train_loss", False, "loss"),
        ("heldout_accuracy", False, "accuracy"),
        ("entropy", False, "entropy"),
        ("max_weight", False, "max_weight"),
        ("logit_std", True, "logit_std"),
        ("qk_var_per_d_k", True, "qk_var"),
    ]
    columns = st.columns(2)
    for i, (column, log, text_key) in enumerate(panels):
        text = td(f"learning_scale.charts.{text_key}") | td("learning_scale.charts.common")
        rows = tables.scale_columns(both, (column,))
        chart(
            charts.two_runs, df, column, text, names, log=log, name=f"scale_{column}", data=rows, where=columns[i % 2]
        )
    text = td("learning_scale.charts.grad") | td("learning_scale.charts.common")
    rows = tables.scale_columns(both, ("grad_norm_q", "grad_norm_k"))
    chart(charts.gradient_norms, df, text, names, name="scale_grad_norms", data=rows)
    st.caption(t("learning_scale.grad_caption"))
    st.markdown(t("learning_scale.summary_heading"))
    shown = tables.summary_shown(both, names)
    st.dataframe(shown, hide_index=True, column_config=td("learning_scale.summary"))
