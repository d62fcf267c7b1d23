"""The "Learning" pages: the untrained view, a tiny training run, snapshots, typed input, and √d_k under training.

Training runs here are tiny (d_model 16, 20 steps: well under a second each) and use seeds no other test uses,
so that the server-wide shelf of finished runs (explorer.ui.training) starts empty for them.
"""

import math
import re
import sys
import threading
import time

from app_helpers import assert_clean, metric, open_link

from explorer.tables import learning as tables
from explorer.ui import training

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
    line, gate = training.TrainingLine(slots=1, max_waiting=0), threading.Event()
    monkeypatch.setattr(training, "server_line", lambda: line)
    holder, _ = line.join("other", lambda **kw: gate.wait(10), steps=1, flops=1.0, budget_s=60, complete=bool)
    while line.look(holder).state != "training":  # another student's run holds the only slot; nobody may wait
        time.sleep(0.01)
    try:
        at = train(open_link(PAGE, {**TINY, "seed": "105"}))
    finally:
        gate.set()
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
    verdict = next(i.value for i in at.info if "**unscaled (q·k)**" in i.value)
    assert not at.success  # a comparison of two runs, whichever learns, is not a green verdict
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
    assert at.session_state["_learn_kept"][0][0] == "learn"  # this session's, where sessions kept it before
    at.run()  # a plain rerun still shows this session's run
    assert any("time budget of 0 s ran out" in w.value for w in at.warning)
    other = open_link(PAGE, {**TINY, "seed": "107"})  # another student: the shelf holds no run of these settings
    assert any("before any training" in i.value for i in other.info)


drawers: dict[str, set[int]] = {}


def held_line(monkeypatch, slots=1):
    """A fresh training line whose one slot another student's run holds until the returned gate is set; the texts
    the waiting pages draw are recorded."""
    line, gate, texts = training.TrainingLine(slots=slots), threading.Event(), []
    monkeypatch.setattr(training, "server_line", lambda: line)
    drawn = training.status_text

    def spy(view):
        texts.append(drawn(view))
        drawers.setdefault(texts[-1], set()).add(threading.get_ident())  # which page's thread drew it
        return texts[-1]

    drawers.clear()
    monkeypatch.setattr(training, "status_text", spy)
    holder, _ = line.join("holder", lambda **kw: gate.wait(30), steps=1, flops=1.0, budget_s=60, complete=bool)
    while line.look(holder).state != "training":
        time.sleep(0.01)
    return line, gate, texts


def click_in_thread(at, key):
    thread = threading.Thread(target=lambda: at.button(key=key).click().run(timeout=120))
    thread.start()
    return thread


def wait_for(condition, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_two_students_with_the_same_settings_share_one_run(monkeypatch):
    train_module = sys.modules["attn_core.learn.train"]  # the package's name `train` is the function

    loops = []
    train_iter = train_module.train_iter

    def counted(*args, **kwargs):  # training loops of the line's workers (the untrained view makes step 0 too)
        if threading.current_thread().name.startswith("training-"):
            loops.append(1)
        return train_iter(*args, **kwargs)

    monkeypatch.setattr(train_module, "train_iter", counted)
    line, gate, texts = held_line(monkeypatch)
    link = {**TINY, "seed": "108"}
    students = [open_link(PAGE, link), open_link(PAGE, link)]
    threads = []
    for n, at in enumerate(students, 1):  # one after the other: CPython 3.11 cannot compile two pages at once
        threads.append(click_in_thread(at, "learn_train"))
        wait_for(lambda n=n: len(set().union(*(d for x, d in drawers.items() if "number 1 in" in x))) >= n)
    assert len(line._jobs) == 2  # the holder and one run of these settings, joined by the second student
    gate.set()
    for thread in threads:
        thread.join(120)
    for at in students:
        assert_clean(at)
    assert len(loops) == 1  # one training loop ran for both
    verdicts = [[x.value for x in [*at.success, *at.warning]] for at in students]  # "Trained" or "Not learned"
    assert verdicts[0] == verdicts[1] != [] and "training run" not in str(verdicts)


def test_the_scale_page_waits_in_the_same_line(monkeypatch):
    line, gate, texts = held_line(monkeypatch)
    at = open_link(SCALE, {"scale_d_k": "8", "scale_steps": "100", "seed": "109"})  # long enough to be seen
    thread = click_in_thread(at, "scale_train")
    wait_for(lambda: any("number 1 in the server's training line" in x for x in texts))
    gate.set()
    thread.join(120)
    assert_clean(at)
    assert line.pace.per_step(1.0) is not None  # its 2 x 100 steps were measured
    assert any(re.search(r"Training: step \d+ of 200\b", x) for x in texts)  # both runs of 100 steps, one bar


def test_the_line_shows_place_and_a_measured_estimate_in_both_languages(monkeypatch):
    line, gate, texts = held_line(monkeypatch)
    line.pace.add(1e6, 0.01)  # as if a run had measured 100 steps/s
    english = open_link(PAGE, {**TINY, "learn_steps": "200", "seed": "110"})  # long enough to be seen training
    chinese = open_link(PAGE, {**TINY, "seed": "111", "lang": "zh"})
    threads = [click_in_thread(english, "learn_train")]
    wait_for(lambda: any("number 1 in" in x for x in texts))
    threads.append(click_in_thread(chinese, "learn_train"))
    wait_for(lambda: any("第 2 位" in x for x in texts))
    gate.set()
    for thread in threads:
        thread.join(120)
    first = next(x for x in texts if "number 1 in" in x)
    assert "1 run(s) ahead of it, 1 of them training now" in first and "should start in about" in first
    second = next(x for x in texts if "第 2 位" in x)
    assert "前面有 2 个训练" in second and "预计约" in second and "秒后完成" in second
    assert any("training: step" in x.lower() and "s left at the pace measured" in x for x in texts)
