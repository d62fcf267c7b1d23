import streamlit as st

from explorer.charts import learning as charts
from explorer.tables import learning as tables
from explorer.ui import state, training
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, literal, notice, predict_first, section, seed
from explorer.ui.player import Player

MAX_INPUT = 120  # characters: 17 tokens of recall's longest words with room to spare
PLAYER = Player("learn_snapshot", "_learn_playing", "learn")

task_names = td("learning.tasks")
metric_names = td("learning.metrics")


def attention_maps(result, index, where=st) -> None:
    """The attention maps of snapshot `index`, one chart per attention, heads side by side with the right alignment."""
    cfg = result.config
    where.caption(t("learning.maps_caption", sequence=tables.example_input(cfg), n=cfg.eval_size))
    for name in tables.map_names(result):
        cells = tables.snapshot_cells(result, index, name)
        kind = "cross" if name.startswith("cross") else "self"
        text = td("learning.charts.maps") | {"title": t(f"learning.charts.maps.title_{kind}", layer=name[-1])}
        if kind == "self":
            text |= {"query": t("learning.charts.maps.key")}
        chart(charts.attention_panels, cells, text, name=f"learning_attention_{name}", data=cells, where=where)


def snapshot_section(result, run_id) -> None:
    """The snapshot slider, the maps and curves at that snapshot; while playing, one step further every PLAY_S."""
    steps = [s.step for s in result.snapshots]
    step = PLAYER.slider(run_id, steps, t("learning.controls.snapshot"), t("learning.controls.snapshot_help"))
    index = steps.index(step)
    snap = result.snapshots[index]
    row = st.container(horizontal=True, gap="medium")  # wraps where the column is narrow (projector mode)
    row.metric(t("learning.metrics.step"), f"{snap.step}", width="content")
    row.metric(metric_names["heldout_accuracy"], f"{snap.heldout_accuracy:.1%}", width="content")
    mass = f"{snap.best_alignment_mass:.2f}"
    row.metric(metric_names["best_alignment_mass"], mass, help=t("learning.mass_help"), width="content")
    entropy = tables.map_stats(tables.snapshot_weights(result, index))["entropy"]
    row.metric(t("learning.metrics.entropy"), f"{entropy:.2f}", help=t("learning.entropy_help"), width="content")
    attention_maps(result, index)
    losses, scores, loss_rows, score_rows = tables.curve_frames(result)
    loss_text = td("learning.charts.loss", chance=tables.chance_loss(result.config))
    accuracy_text = td("learning.charts.accuracy")
    names = {k: metric_names[k] for k in tables.LOSSES}
    chart(
        charts.training_curves,
        losses,
        step,
        loss_text,
        names,
        unit_interval=False,
        name="learning_loss",
        data=loss_rows,
    )
    names = {k: metric_names[k] for k in tables.SCORES}
    chart(
        charts.training_curves,
        scores,
        step,
        accuracy_text,
        names,
        unit_interval=True,
        name="learning_accuracy",
        data=score_rows,
    )


def start_notice(result, settings) -> list[str]:
    """What to look for, the first point chosen by the step-0 numbers of these settings (blur or already peaked)."""
    try:
        start = result.snapshots[0] if result is not None else tables.untrained_run(settings).snapshots[0]
    except ValueError:  # settings the page refuses: the left column says why
        return tl("learning.notice")
    uniform = 1 / start.attention["cross1"].shape[-1]
    kind = "peaked" if start.max_weight > tables.PEAKED else "blur"
    first = t(f"learning.start_{kind}", weight=start.max_weight, uniform=uniform, threshold=tables.PEAKED)
    return [first, *tl("learning.notice")]


def trained_box(result) -> None:
    """The verdict on a finished run: a success only when its held-out accuracy reaches tables.LEARNED."""
    f = result.final
    fields = {"accuracy": f.heldout_accuracy, "mass": f.best_alignment_mass, "seconds": result.seconds}
    fields |= {"threshold": tables.LEARNED, "chance": tables.chance_accuracy(result.config)}
    if tables.learned(result):
        st.success(t("learning.trained", **fields), icon=":material/check_circle:")
    else:
        st.warning(t("learning.not_learned", **fields), icon=":material/trending_flat:")


def read_input(result, text: str):
    """((answer table, attention cells), None), or (None, what is wrong, as safe Markdown in the viewer's language)."""
    problem = tables.input_problem(result.config, text)
    if problem is not None:
        kind, fields = problem
        return None, t(f"learning.own.problems.{kind}", **{k: literal(v) for k, v in fields.items()})
    try:
        return tables.own_answer(result, text), None
    except ValueError as err:  # the task's own rules (recall's distinct keys, say): attn_core's words, escaped
        return None, literal(err)


def own_input_section(result) -> None:
    cfg = result.config
    st.subheader(t("learning.sections.own"))
    words = tables.task_words(cfg)
    example = tables.example_input(cfg)
    text = state.text_input(
        t("learning.controls.own", n=result.task.input_len),
        "",
        max_chars=MAX_INPUT,
        key="learn_input",
        placeholder=example,
        help=t(f"learning.own.format_{cfg.task}", words=words),
    )
    st.caption(t(f"learning.own.format_{cfg.task}", words=words) + " " + t("learning.own.example"))
    st.code(example, language=None)
    if not text.strip():
        return
    answer, problem = read_input(result, text)
    if answer is None:
        st.warning(t("learning.own.bad", n=result.task.input_len, words=words) + " " + problem, icon=":material/error:")
        return
    table, cells = answer
    left, right = st.columns([2, 3])
    right_count = int(table["right"].sum())
    left.markdown(t("learning.own.score", right=right_count, n=len(table)))
    left.dataframe(table, hide_index=True, column_config=td("learning.own.columns"))
    text_ = td("learning.charts.maps") | {"title": t("learning.charts.maps.title_own")}
    chart(charts.attention_panels, cells, text_, name="learning_own_attention", data=cells, where=right)


header(t("learning.title"), t("learning.lede"))
defaults = tables.LearnSettings("reverse", 64, 1, 1, tables.AUTO, 300, True, seed())  # the question is about them
predict_first(t("learning.question"), t("learning.answer", weight=tables.untrained_run(defaults).final.max_weight))

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 3, 2, 2])
    task = state.selectbox(
        t("learning.controls.task"),
        list(tables.TASKS),
        "reverse",
        key="learn_task",
        where=c1,
        format_func=task_names.get,
    )
    d_model = state.select_slider("d_model", list(tables.D_MODELS), 64, key="learn_d_model", where=c2)
    heads = state.select_slider(t("learning.controls.heads"), list(tables.HEADS), 1, key="learn_heads", where=c3)
    layers = state.select_slider(t("learning.controls.layers"), list(tables.LAYERS), 1, key="learn_layers", where=c4)
    c5, c6, c7, c8 = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
    lr = state.select_slider(
        t("learning.controls.lr"),
        list(tables.LRS),
        tables.AUTO,
        key="learn_lr",
        where=c5,
        format_func=lambda v: t("learning.controls.lr_auto") if v == tables.AUTO else f"{v:g}",
        help=t("learning.controls.lr_help"),
    )
    steps = state.select_slider(t("learning.controls.steps"), list(tables.STEPS), 300, key="learn_steps", where=c6)
    scaled = state.toggle(
        t("learning.controls.scaled"), True, key="learn_scaled", where=c7, help=t("learning.controls.scaled_help")
    )
    clicked = c8.button(
        t("learning.controls.train"), type="primary", icon=":material/model_training:", key="learn_train"
    )
    st.caption(t(f"learning.summaries.{task}"))

settings = tables.LearnSettings(task, d_model, heads, layers, lr, steps, scaled, seed())
key = ("learn", settings)
result = training.trained(
    key,
    settings.config,
    tables.train,
    clicked=clicked,
    budget_s=tables.TIME_BUDGET_S,
    stop_key="learn_stop",
    complete=lambda r: r.diverged or not r.stopped,
)

left, right = st.columns([3, 2])
with right:
    formula(r"A=\mathrm{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big)" if scaled else r"A=\mathrm{softmax}(Q K^\top)")
    formula(
        r"\begin{aligned}Q&=\mathrm{LN}(E[u]+P)\,W_Q\\K&=\mathrm{LN}(E[x]+P)\,W_K\end{aligned}",
        t("learning.formula_caption"),
    )
    formula(r"\mathcal{L}=-\frac{1}{n_t}\sum_i \log p_\theta(y_i\mid x)")
    formula(r"m=\frac{1}{n_t}\sum_{i,j}A_{ij}\,A^\star_{ij}", t("learning.mass_caption"))
    notice(start_notice(result, settings))
with left:
    if result is None:
        with friendly_errors(t("learning.sections.untrained")):
            st.info(t("learning.untrained"), icon=":material/info:")
            start = tables.untrained_run(settings)
            snap = start.snapshots[0]
            shown = tables.map_stats(tables.snapshot_weights(start, 0))
            row = st.container(horizontal=True, gap="medium")  # labels whole: three columns cut the third
            row.metric(metric_names["heldout_accuracy"], f"{snap.heldout_accuracy:.1%}", width="content")
            mass = f"{snap.best_alignment_mass:.2f}"
            row.metric(metric_names["best_alignment_mass"], mass, help=t("learning.mass_help"), width="content")
            entropy = f"{shown['entropy']:.2f}"
            row.metric(t("learning.metrics.entropy"), entropy, help=t("learning.entropy_help"), width="content")
            attention_maps(start, 0)
    else:
        f = result.final
        if result.diverged:
            st.warning(t("learning.diverged", step=f.step), icon=":material/warning:")
        elif result.stopped:
            st.warning(t("learning.budget_hit", step=f.step, seconds=tables.TIME_BUDGET_S), icon=":material/timer_off:")
        else:
            trained_box(result)
        run_id = (key, f.step)  # a run cut short by the time budget is not the full run of the same settings
        steps = [s.step for s in result.snapshots]
        PLAYER.buttons(run_id, steps, t("learning.controls.play"), t("learning.controls.pause"))
        with friendly_errors(t("learning.sections.snapshots")):
            section(snapshot_section, run_every=PLAYER.run_every(run_id))(result, run_id)

with friendly_errors(t("learning.sections.own")):
    own_input_section(result if result is not None else tables.untrained_run(settings))
