import streamlit as st

from explorer.charts import induction as charts
from explorer.tables import induction as tables
from explorer.ui import state, training
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td
from explorer.ui.page import anchor_of, formula, friendly_errors, header, notice, predict_first, section, seed
from explorer.ui.player import Player

PLAYER = Player("ind_snapshot", "_ind_playing", "ind")
SECTIONS = ("induction.sections.losses", "induction.sections.scores", "induction.sections.knockout")
MAPS = ("two:0", "two:1", "one:0")  # which model's layer the probe maps show

names = td("induction.names")


def loss_section(pair, step) -> None:
    left, right = st.columns([3, 2])
    df, phases, falls = tables.loss_view(pair)
    text = td("induction.charts.loss")
    chart(charts.losses, df, step, phases, text, names, name="induction_losses", data=df, where=left)
    trained = len(tables.run_steps(pair.two)) > 1
    left.caption(phase_caption(phases, falls) if trained else t("induction.phase_untrained"))
    with right:
        formula(
            r"\begin{gathered}\mathcal{L}_{\text{rep}}=-\frac{1}{|R|}\sum_{i\in R}\log p_\theta(x_{i+1}\mid x_{\le i})"
            r"\\ R=\{i:\ \exists\, j<i,\ (x_j,x_{j+1})=(x_i,x_{i+1})\}"
            r"\\ \text{gap}=\mathcal{L}_{\text{first}}-\mathcal{L}_{\text{rep}}\end{gathered}",
            t("induction.loss_caption", min_rise=tables.PHASE_RISE),
        )


def phase_caption(phases, falls) -> str:
    parts = []
    for model in tables.MODELS:
        if phases[model] is None:
            parts.append(t("induction.phase_none", model=names[model]))
        else:
            before, after, first_before, first_after = falls[model]
            found = dict(before=before, after=after, first_before=first_before, first_after=first_after)
            parts.append(t("induction.phase_found", model=names[model], step=phases[model], **found))
    return " ".join(parts)


def snapshot_step(pair, run_id) -> int:
    """The snapshot slider (with Play while playing), or step 0 for the untrained models."""
    steps = tables.run_steps(pair.two)
    if len(steps) < 2:
        return steps[0]
    return PLAYER.slider(run_id, steps, t("induction.controls.snapshot"), t("induction.controls.snapshot_help"))


def snapshots_section(pair, run_id) -> None:
    """The snapshot slider; the losses, the score grid of both models and the probe maps at that snapshot."""
    st.subheader(t("induction.sections.losses"), anchor=anchor_of("induction.sections.losses"))
    step = snapshot_step(pair, run_id)
    loss_section(pair, step)
    scores_part(pair, step)


def scores_part(pair, step) -> None:
    st.subheader(t("induction.sections.scores"), anchor=anchor_of("induction.sections.scores"))
    cells = tables.score_cells(pair, step)
    rows = {
        f"{m}:{layer}": t("induction.row", model=names[m], layer=layer)
        for m in tables.MODELS
        for layer in range(tables.LAYERS[m])
    }
    text = td("induction.charts.grid") | {"title": t("induction.charts.grid.title", step=step)}
    columns = tables.score_rows(pair, step)
    chart(charts.score_grid, cells, text, td("induction.scores"), rows, name="induction_scores", data=columns)
    left, right = st.columns([3, 2])
    with right:
        formula(r"s^{\text{prev}}_h=\frac{1}{n-1}\sum_{i\ge 1}A_{i,\,i-1}", t("induction.prev_caption"))
        formula(
            r"s^{\text{ind}}_h=\operatorname*{mean}_{i\in Q}\ \sum_{j\,:\,x_{j-1}=x_i,\ j\le i}A_{ij}",
            t("induction.ind_caption"),
        )
        notice(notes(pair, step))
    with left:
        maps_part(pair, step)


def maps_part(pair, step) -> None:
    which = state.segmented_control(
        t("induction.controls.map"), list(MAPS), "two:1", key="ind_map", format_func=map_name
    )
    model, layer = (which or "two:1").split(":")
    result = getattr(pair, model)
    index = tables.index_at(result, step)
    layer = int(layer)
    cells = tables.probe_cells(pair, model, index, layer)
    text = td("induction.charts.map") | {"title": t("induction.charts.map.title", name=map_name(which or "two:1"))}
    n = result.config.seq_len
    chart(charts.probe_maps, cells, n, text, name=f"induction_map_{model}_{layer}", data=cells)
    segment = result.config.max_segment  # probe_sequence: one segment of max_segment tokens, then its copies
    st.caption(t("induction.map_caption", n=n, segment=segment, lag=segment - 1))


def map_name(which: str) -> str:
    model, layer = which.split(":")
    return t("induction.row", model=names[model], layer=layer)


def notes(pair, step) -> list[str]:
    """What to notice, each sentence chosen by the numbers of the snapshot shown (never fixed text)."""
    f = tables.facts(pair, step)
    points = [
        t("induction.notice.ind_yes" if f["ind"] >= f["threshold"] else "induction.notice.ind_no", **f),
        t("induction.notice.prev_yes" if f["prev"] >= f["threshold"] else "induction.notice.prev_no", **f),
        t("induction.notice.one_no" if f["one_ind"] < f["threshold"] else "induction.notice.one_yes", **f),
    ]
    points.append(
        t("induction.notice.rep_lower" if f["rep_two"] < f["rep_one"] else "induction.notice.rep_not_lower", **f)
    )
    if f["sink"] > 2 * f["uniform"]:
        points.append(t("induction.notice.sink", **f))
    return points


def knockout_section(pair) -> None:
    st.subheader(t("induction.sections.knockout"), anchor=anchor_of("induction.sections.knockout"))
    result = pair.two
    left, right = st.columns([2, 3])
    heads = state.multiselect(
        t("induction.controls.heads"),
        tables.head_options(result.config),
        [],
        key="ind_knockout",
        where=left,
        placeholder=t("induction.controls.heads_placeholder"),
    )
    modes = td("induction.modes")
    mode = state.radio(
        t("induction.controls.mode"), list(tables.MODES), "zero", key="ind_mode", where=left,
        format_func=modes.get, horizontal=True, help=t("induction.controls.mode_help"),
    )  # fmt: skip
    chosen = tuple(sorted(heads))
    table = tables.knockouts(pair, chosen, mode)
    last = result.snapshots[-1].step  # knockouts use the kept final weights, not the slider's snapshot
    left.markdown(knockout_text(table, chosen, last))
    shown = tables.knockout_rows(pair, chosen, mode, names)
    left.dataframe(shown, hide_index=True, column_config=td("induction.knockout_columns"))
    singles = tables.head_knockouts(pair, mode)
    text = td("induction.charts.knockout")
    chart(charts.knockouts, singles, text, names, name="induction_knockouts", data=singles, where=right)
    right.caption(t("induction.knockout_caption", step=last))


def knockout_text(table, chosen, step: int) -> str:
    if not chosen:
        return t("induction.knockout_none")
    rep = table.set_index("split").loc["repeated"]
    key = "induction.knockout_up" if rep["knocked_out"] > rep["intact"] else "induction.knockout_not_up"
    return t(key, heads=", ".join(chosen), before=rep["intact"], after=rep["knocked_out"], step=step)


header(t("induction.title"), t("induction.lede"), SECTIONS)
predict_first(t("induction.question"), t("induction.answer"))

with st.container(border=True):
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    steps_label = t("induction.controls.steps")
    steps = state.select_slider(steps_label, list(tables.STEPS), tables.DEFAULT_STEPS, key="ind_steps", where=c1)
    train = t("induction.controls.train")
    clicked = c2.button(train, type="primary", icon=":material/model_training:", key="ind_train")
    st.caption(t("induction.controls_caption"))

settings = (steps, seed())
key = ("induction", *settings)
pair = training.trained(
    key,
    lambda: tables.pair_config(*settings),
    tables.train_pair,
    clicked=clicked,
    budget_s=tables.TIME_BUDGET_S,
    stop_key="ind_stop",
    complete=tables.complete,
    cost=lambda pair: training.Cost(*tables.cost(pair)),
)

if pair is None:
    st.info(t("induction.untrained"), icon=":material/info:")
    shown, run_id = tables.untrained(*settings), ("untrained", *settings)
else:
    if not tables.complete(pair):
        st.warning(t("induction.budget_hit", seconds=tables.TIME_BUDGET_S), icon=":material/timer_off:")
    shown, run_id = pair, (*key, pair.two.snapshots[-1].step, pair.one.snapshots[-1].step)
    steps = [s.step for s in shown.two.snapshots]
    PLAYER.buttons(run_id, steps, t("induction.controls.play"), t("induction.controls.pause"))

every = PLAYER.run_every(run_id) if pair is not None else None
with friendly_errors(t("induction.sections.scores")):
    section(snapshots_section, run_every=every)(shown, run_id)
predict_first(t("induction.question_one"), t("induction.answer_one"))
with friendly_errors(t("induction.sections.knockout")):
    if pair is None:  # removing heads that have learned nothing shows nothing: no work for a plain view
        st.subheader(t("induction.sections.knockout"), anchor=anchor_of("induction.sections.knockout"))
        st.info(t("induction.knockout_untrained"), icon=":material/info:")
    else:
        section(knockout_section)(pair)
