"""The "Learning" pages: the untrained view, a tiny training run, snapshots, typed input, and √d_k under training.

Training runs here are tiny (d_model 16, 20 steps: well under a second each) and use seeds no other test uses,
so that the server-wide shelf of finished runs (explorer.ui.training) starts empty for them.
"""

import math
import re

from app_helpers import assert_clean, metric, open_link

from explorer.tables import learning as tables

PAGE = "views/learning.py"
SCALE = "views/learning_scale.py"
TINY = {"learn_d_model": "16", "learn_steps": "20"}


def train(at):
    at.button(key="learn_train").click().run()
    assert_clean(at)
    return at


def test_first_view_is_the_untrained_model_beside_the_right_alignment():
    at = open_link(PAGE, {"seed": "101"})
    assert_clean(at)
    assert any("before any training" in i.value for i in at.info)
    assert any("Predict first" in i.value for i in at.info)
    assert float(metric(at, "alignment mass")) < 0.5  # random W_Q, W_K: a blur, not the anti-diagonal
    assert len(at.get("vega_lite_chart")) == 1
    assert "learn_snapshot" not in [s.key for s in at.select_slider]  # nothing trained: no snapshots yet


def test_train_tiny_move_the_snapshot_slider_and_type_inputs():
    at = train(open_link(PAGE, {**TINY, "seed": "102"}))
    assert any(w.value.startswith("Not learned: after training") for w in at.warning)  # 20 steps: not 95%
    slider = at.select_slider(key="learn_snapshot")
    steps = [int(o) for o in slider.options]
    assert steps[0] == 0 and steps[-1] == 20 and slider.value == 20
    assert len(at.get("vega_lite_chart")) == 3  # the maps, the loss, the accuracy
    last_mass = float(metric(at, "alignment mass"))
    slider.set_value(0).run()
    assert_clean(at)
    assert metric(at, "step") == "0" and float(metric(at, "alignment mass")) < last_mass  # sharper after training
    # Play from the start walks one snapshot on per tick (the first tick comes with the click)
    at.button(key="learn_play").click().run()
    assert_clean(at)
    assert at.select_slider(key="learn_snapshot").value == steps[1]
    at.button(key="learn_pause").click().run()

    at.text_input(key="learn_input").input("a b c d e f g h").run()
    assert_clean(at)
    assert any("positions right" in m.value for m in at.markdown)
    assert len(at.get("vega_lite_chart")) == 4  # and the map of the typed input
    hostile = "**b** <img src=x> [l](http://x)"
    at.text_input(key="learn_input").input(hostile).run()
    assert_clean(at)
    warning = next(w.value for w in at.warning if "cannot read this input" in w.value)
    assert "Use only letters and digits" in warning and not re.search(r"img|http|\*\*b", warning)  # not echoed
    at.text_input(key="learn_input").input("a b c").run()  # the wrong length
    assert any("It has 3 tokens instead of 8." in w.value for w in at.warning)
    at.text_input(key="learn_input").input("a b c d e f g zz").run()  # a word the task does not know
    assert any("“zz” is not one of them." in w.value for w in at.warning)
    at.session_state["lang"] = "zh"
    at.run()
    assert any("“zz”不在其中" in w.value for w in at.warning)


def test_a_trained_run_is_shared_with_the_next_student():
    first = train(open_link(PAGE, {**TINY, "seed": "103", "learn_task": "reorder"}))
    again = open_link(PAGE, {**TINY, "seed": "103", "learn_task": "reorder"})  # no click: the shelf has it
    assert_clean(again)
    assert [w.value for w in again.warning] == [w.value for w in first.warning] != []
    assert again.select_slider(key="learn_snapshot").options == first.select_slider(key="learn_snapshot").options


def test_recall_shows_one_sequence_and_reads_a_typed_query():
    at = train(open_link(PAGE, {**TINY, "seed": "104", "learn_task": "recall"}))
    at.text_input(key="learn_input").input("A 1 B 2 C 3 D 4 C").run()
    assert_clean(at)
    assert any("positions right" in m.value for m in at.markdown)
    at.text_input(key="learn_input").input("A 1 B 2 C 3 D 4 E").run()  # the query is not one of the keys
    assert any("must be one of the keys" in w.value for w in at.warning)


def test_too_much_work_gets_a_clear_message():
    at = open_link(PAGE, {"learn_d_model": "256", "learn_layers": "2", "learn_steps": "1000"})
    assert_clean(at)
    assert any("times the work one click may take" in w.value for w in at.warning)
    zh = open_link(PAGE, {"learn_d_model": "256", "learn_layers": "2", "learn_steps": "1000", "lang": "zh"})
    assert any("计算量" in w.value for w in zh.warning)


def test_a_full_server_line_says_so(monkeypatch):
    from explorer.ui import heavy

    line = heavy.Line(slots=1, max_waiting=0)
    monkeypatch.setattr(heavy, "server_line", lambda: line)
    with line.place():  # another student's training holds the only slot, and nobody may wait
        at = train(open_link(PAGE, {**TINY, "seed": "105"}))
    assert any("Too many benchmarks and training runs" in w.value for w in at.warning)
    assert any("before any training" in i.value for i in at.info)  # the page still shows the untrained model


def test_scale_page_states_the_step_zero_ratio_before_training():
    at = open_link(SCALE, {"scale_d_k": "256", "scale_init": "1.0", "seed": "106"})
    assert_clean(at)
    text = next(m.value for m in at.markdown if m.value.startswith("**At step 0**"))
    assert "√d_k = 16.00 times" in text and "measured here: 16.000 times" in text
    unscaled, scaled = float(metric(at, "logit sd, unscaled")), float(metric(at, "logit sd, scaled"))
    assert math.isclose(unscaled / scaled, 16, rel_tol=1e-2)  # the metrics are rounded to two decimals
    assert float(metric(at, "largest weight, unscaled")) > float(metric(at, "largest weight, scaled"))


def test_scale_page_relationship_scaled_learns_unscaled_stalls():
    """What the page states, measured (attn_core/learn/scaling.py, benchmarks/learn_scaling.md): at d_k = 64 with
    init scale 2 (reverse, seed 0), the scaled run reaches 95% held-out accuracy, the unscaled one never does."""
    at = open_link(SCALE, {"scale_d_k": "64", "scale_init": "2.0", "scale_steps": "60", "seed": "0"})
    at.button(key="scale_train").click().run()
    assert_clean(at)
    verdict = at.success[0].value
    scaled, unscaled = verdict.split("**unscaled (q·k)**")
    assert "reached 95% held-out accuracy at step" in scaled and "never reached" in unscaled
    assert len(at.get("vega_lite_chart")) == 8  # Var(q·k) vs d_k, six statistics, the gradient norms
    summary = at.dataframe[0].value
    assert list(summary["series"]) == ["scaled (q·k/√d_k)", "unscaled (q·k)"]
    first = {r["series"]: r for r in summary.to_dict("records")}
    ratio = first["unscaled (q·k)"]["init_logit_std"] / first["scaled (q·k/√d_k)"]["init_logit_std"]
    assert math.isclose(ratio, math.sqrt(64), rel_tol=1e-4)


def test_a_run_cut_short_by_the_time_budget_is_shown_but_not_shared(monkeypatch):
    monkeypatch.setattr(tables, "TIME_BUDGET_S", 0.0)  # every step is past the budget: it stops at step 0
    at = train(open_link(PAGE, {**TINY, "seed": "107"}))
    assert any("time budget of 0 s ran out" in w.value for w in at.warning)
    assert at.select_slider(key="learn_snapshot").options == ["0"]
    other = open_link(PAGE, {**TINY, "seed": "107"})  # another student: the shelf holds no run of these settings
    assert any("before any training" in i.value for i in other.info)
