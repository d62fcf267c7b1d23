import streamlit as st

from attn_core.learn import train
from explorer.charts import learning as charts
from explorer.tables import learning as tables
from explorer.ui import state as controls
from explorer.ui import training
from explorer.ui.frame import (
    chart,
    formula,
    friendly_errors,
    header,
    literal,
    notice,
    predict_first,
    section,
    seed,
    spec_of,
    store,
)
from explorer.ui.i18n import t, td, tl
from explorer.ui.player import Player

MAX_INPUT = 120  # characters: 17 tokens of recall's longest words with room to spare
PLAYER = Player("learn_snapshot", "_learn_playing", "learn")
KEPT = "_learn_kept"  # (key, result) of this session's last run cut short by the time budget (not shared)
LOSSES = ["train_loss", "heldout_loss"]
SCORES = ["train_accuracy", "heldout_accuracy", "best_alignment_mass"]

task_names = td("learning.tasks")
metric_names = td("learning.metrics")


# Kept for the whole server in stores of their own, not with st.cache_*: their decorators, run with the page on
# every rerun, made the cached functions again and read their source each time.
_untrained_runs = store("learning.untrained", 8)  # a model of d_model 256 and 2 layers holds ~4 MB
_curve_frames = store("learning.curve_frames", 32)


def untrained_run(task, d_model, heads, layers, lr, steps, scaled, seed_value):
    """The model as initialised (one forward and backward, no update): cheap, shared by the server, read-only."""
    settings = (task, d_model, heads, layers, lr, steps, scaled, seed_value)
    return _untrained_runs.get_once(settings, lambda: tables.untrained(tables.learn_config(*settings)))


def curve_frames(result, key):
    """The run `key`'s curves, long for each chart and as each chart's CSV columns (shared: callers only read)."""

    def build():
        df = tables.curves(result)
        losses, scores = tables.long_curves(df, LOSSES), tables.long_curves(df, SCORES)
        return losses, scores, df[["step", *LOSSES]], df[["step", *SCORES]]

    return _curve_frames.get_once(key, build)


def attention_maps(result, index, key, where=st) -> None:
    """The attention maps of snapshot `index`, one chart per attention, heads side by side with the right alignment."""
    cfg = result.config
    weights = tables.snapshot_weights(result, index)
    alignment = tables.right_alignment(cfg)
    where.caption(t("learning.maps_caption", sequence=tables.example_input(cfg), n=cfg.eval_size))
    for name in sorted(weights, key=lambda n: (n.startswith("cross"), n)):
        cells = tables.attention_cells(weights, cfg, name, alignment)
        kind = "cross" if name.startswith("cross") else "self"
        text = td("learning.charts.maps") | {"title": t(f"learning.charts.maps.title_{kind}", layer=name[-1])}
        if kind == "self":
            text |= {"query": t("learning.charts.maps.key")}
        figure = spec_of(charts.attention_panels, cells, text, data_key=(key, index, name))
        chart(figure, cells, f"learning_attention_{name}", where=where)


def snapshot_section(result, key) -> None:
    """The snapshot slider, the maps and curves at that snapshot; while playing, one step further every PLAY_S."""
    steps = [s.step for s in result.snapshots]
    step = PLAYER.slider(key, steps, t("learning.controls.snapshot"), t("learning.controls.snapshot_help"))
    index = steps.index(step)
    snap = result.snapshots[index]
    row = st.container(horizontal=True, gap="medium")  # wraps where the column is narrow (projector mode)
    row.metric(t("learning.metrics.step"), f"{snap.step}", width="content")
    row.metric(metric_names["heldout_accuracy"], f"{snap.heldout_accuracy:.1%}", width="content")
    mass = f"{snap.best_alignment_mass:.2f}"
    row.metric(metric_names["best_alignment_mass"], mass, help=t("learning.mass_help"), width="content")
    entropy = tables.map_stats(tables.snapshot_weights(result, index))["entropy"]
    row.metric(t("learning.metrics.entropy"), f"{entropy:.2f}", help=t("learning.entropy_help"), width="content")
    attention_maps(result, index, key)
    losses, scores, loss_rows, score_rows = curve_frames(result, key)
    loss_text = td("learning.charts.loss", chance=tables.chance_loss(result.config))
    accuracy_text = td("learning.charts.accuracy")
    names = {k: metric_names[k] for k in LOSSES}
    spec = spec_of(charts.training_curves, losses, step, loss_text, names, unit_interval=False, data_key=(key, 1))
    chart(spec, loss_rows, "learning_loss")
    names = {k: metric_names[k] for k in SCORES}
    spec = spec_of(charts.training_curves, scores, step, accuracy_text, names, unit_interval=True, data_key=(key, 2))
    chart(spec, score_rows, "learning_accuracy")


def start_notice(result, settings) -> list[str]:
    """What to look for, the first point chosen by the step-0 numbers of these settings (blur or already peaked)."""
    try:
        start = result.snapshots[0] if result is not None else untrained_run(*settings).snapshots[0]
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
    """(the model's answer, None), or (None, what is wrong, as safe Markdown in the viewer's language)."""
    problem = tables.input_problem(result.config, text)
    if problem is not None:
        kind, fields = problem
        return None, t(f"learning.own.problems.{kind}", **{k: literal(v) for k, v in fields.items()})
    try:
        return tables.own_input(result, text), None
    except ValueError as err:  # the task's own rules (recall's distinct keys, say): attn_core's words, escaped
        return None, literal(err)


def own_input_section(result) -> None:
    cfg = result.config
    st.subheader(t("learning.sections.own"))
    words = tables.task_words(cfg)
    example = tables.example_input(cfg)
    text = controls.text_input(
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
    table, attention, alignment = answer
    left, right = st.columns([2, 3])
    right_count = int(table["right"].sum())
    left.markdown(t("learning.own.score", right=right_count, n=len(table)))
    left.dataframe(table, hide_index=True, column_config=td("learning.own.columns"))
    cells = tables.own_cells(result, text, attention, alignment)
    text_ = td("learning.charts.maps") | {"title": t("learning.charts.maps.title_own")}
    chart(charts.attention_panels(cells, text_), cells, "learning_own_attention", where=right)


header(t("learning.title"), t("learning.lede"))
DEFAULTS = ("reverse", 64, 1, 1, tables.AUTO, 300, True)  # the controls' defaults, which the question is about
predict_first(t("learning.question"), t("learning.answer", weight=untrained_run(*DEFAULTS, seed()).final.max_weight))

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 3, 2, 2])
    task = controls.selectbox(
        t("learning.controls.task"),
        list(tables.TASKS),
        "reverse",
        key="learn_task",
        where=c1,
        format_func=task_names.get,
    )
    d_model = controls.select_slider("d_model", list(tables.D_MODELS), 64, key="learn_d_model", where=c2)
    heads = controls.select_slider(t("learning.controls.heads"), list(tables.HEADS), 1, key="learn_heads", where=c3)
    layers = controls.select_slider(t("learning.controls.layers"), list(tables.LAYERS), 1, key="learn_layers", where=c4)
    c5, c6, c7, c8 = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
    lr = controls.select_slider(
        t("learning.controls.lr"),
        list(tables.LRS),
        tables.AUTO,
        key="learn_lr",
        where=c5,
        format_func=lambda v: t("learning.controls.lr_auto") if v == tables.AUTO else f"{v:g}",
        help=t("learning.controls.lr_help"),
    )
    steps = controls.select_slider(t("learning.controls.steps"), list(tables.STEPS), 300, key="learn_steps", where=c6)
    scaled = controls.toggle(
        t("learning.controls.scaled"), True, key="learn_scaled", where=c7, help=t("learning.controls.scaled_help")
    )
    clicked = c8.button(
        t("learning.controls.train"), type="primary", icon=":material/model_training:", key="learn_train"
    )
    st.caption(t(f"learning.summaries.{task}"))

settings = (task, d_model, heads, layers, lr, steps, scaled, seed())
key = ("learn", *settings)
result = training.trained(
    key,
    lambda: tables.learn_config(*settings),
    train,
    clicked=clicked,
    kept_key=KEPT,
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
            start = untrained_run(*settings)
            snap = start.snapshots[0]
            shown = tables.map_stats(tables.snapshot_weights(start, 0))
            row = st.container(horizontal=True, gap="medium")  # labels whole: three columns cut the third
            row.metric(metric_names["heldout_accuracy"], f"{snap.heldout_accuracy:.1%}", width="content")
            mass = f"{snap.best_alignment_mass:.2f}"
            row.metric(metric_names["best_alignment_mass"], mass, help=t("learning.mass_help"), width="content")
            entropy = f"{shown['entropy']:.2f}"
            row.metric(t("learning.metrics.entropy"), entropy, help=t("learning.entropy_help"), width="content")
            attention_maps(start, 0, ("untrained", *settings))
    else:
        f = result.final
        if result.diverged:
            st.warning(t("learning.diverged", step=f.step), icon=":material/warning:")
        elif result.stopped:
            st.warning(t("learning.budget_hit", step=f.step, seconds=tables.TIME_BUDGET_S), icon=":material/timer_off:")
        else:
            trained_box(result)
        run_id = (*key, f.step)  # a run cut short by the time budget is not the full run of the same settings
        steps = [s.step for s in result.snapshots]
        PLAYER.buttons(run_id, steps, t("learning.controls.play"), t("learning.controls.pause"))
        with friendly_errors(t("learning.sections.snapshots")):
            section(snapshot_section, run_every=PLAYER.run_every(run_id))(result, run_id)

with friendly_errors(t("learning.sections.own")):
    own_input_section(result if result is not None else untrained_run(*settings))
