"""The page "Watch an induction head form": the untrained view, a short training of both models, the snapshot
slider and Play, knockouts, both languages, and sentences that state what the numbers beside them show.

Training here is short (40 steps per model) and uses seeds no other test uses, so that the server-wide shelf of
finished runs (explorer.ui.training) starts empty for them.
"""

import json

import pytest
from app_helpers import assert_clean, open_link

from explorer.tables import induction as tables
from explorer.tables.learning import TooMuchWork
from explorer.ui import training

PAGE = "views/induction.py"
TINY = {"ind_steps": "40"}


def train(at):
    at.button(key="ind_train").click().run()
    assert_clean(at)
    return at


def notice_points(at) -> list[str]:
    (box,) = [m.value for m in at.markdown if m.value.startswith(("**What to notice**", "**请注意**"))]
    return box.splitlines()[1:]


def shelf_pair(steps: int, seed: int):
    pair = training.results().peek(("induction", steps, seed))
    assert pair is not None, "a finished click puts both models on the shelf"
    return pair


def test_a_plain_view_shows_both_untrained_models_and_trains_nothing():
    at = open_link(PAGE, {"seed": "201"})
    assert_clean(at)
    assert any("before any training" in i.value for i in at.info)
    assert "ind_snapshot" not in [s.key for s in at.select_slider]  # step 0 only: no slider
    assert len(at.get("vega_lite_chart")) == 3  # losses, score grid, maps (no knockouts before training)
    assert training.results().peek(("induction", tables.DEFAULT_STEPS, 201)) is None  # nothing trained by looking
    points = notice_points(at)
    assert points[0].startswith("- At step 0 no head of the 2-layer model is an induction head yet")
    # One snapshot is no run: the caption asks for training instead of saying no phase change was found.
    assert any(c.value.startswith("Train to look for a phase change") for c in at.caption)
    assert not any("no phase change" in c.value for c in at.caption)
    # The x axis counts whole steps: a lone step 0 once drew a tick "0.000000".
    (losses,) = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart") if "Next-token loss" in c.proto.spec]
    assert losses["layer"][0]["encoding"]["x"]["axis"]["format"] == "d"


def test_the_map_caption_places_the_induction_line_where_the_probe_puts_it():
    at = open_link(PAGE, {"seed": "201"})
    segment = tables.base_config(tables.DEFAULT_STEPS, 201).max_segment
    tokens = tables.probe_tokens(tables.base_config(tables.DEFAULT_STEPS, 201))
    # Query i >= segment holds the token at i - segment; the token after that earlier occurrence sits at i - lag.
    lag = segment - 1
    assert all(tokens[i] == tokens[i - segment] for i in range(segment, len(tokens)))
    assert len(set(tokens[:segment])) == segment  # distinct: the earlier occurrence is the only one
    caption = next(c.value for c in at.caption if c.value.startswith("The probe sequence"))
    assert f"a line {lag} below the main diagonal" in caption and f"reads the key just after it, i − {lag}" in caption


def test_train_move_the_slider_play_and_the_notice_follows_the_numbers():
    at = train(open_link(PAGE, {**TINY, "seed": "202"}))
    pair = shelf_pair(40, 202)
    slider = at.select_slider(key="ind_snapshot")
    steps = [int(o) for o in slider.options]
    assert steps == tables.run_steps(pair.two) and steps[0] == 0 and slider.value == 40
    for step in (40, 0):
        slider.set_value(step).run()
        assert_clean(at)
        f = tables.facts(pair, step)
        points = notice_points(at)
        formed = f["ind"] >= tables.FORMED
        assert points[0].startswith("- At step") and (" is an induction head yet" not in points[0]) == formed
        assert f"{f['ind']:.2f}" in points[0] and f"layer {f['ind_layer']}, head {f['ind_head']}" in points[0]
        assert f"{f['prev']:.2f}" in points[1] and f"{f['one_ind']:.2f}" in points[2]
        if f["prev"] < tables.FORMED:  # below the rule is not "looks nowhere back": say the rule and uniform's share
            assert f"below {tables.FORMED:.1f}; uniform rows would give {f['uniform']:.2f}" in points[1]
        assert f"{f['rep_two']:.2f} nats with 2 layers, " in points[3]
        assert ("not below" in points[3]) == (f["rep_two"] >= f["rep_one"])
        sink = f["sink"] > 2 * f["uniform"]
        assert any("attention sink" in p for p in points) == sink and (not sink or f"{f['sink']:.0%}" in points[4])
        assert any(f"Head scores at step {step}" in text for text in chart_texts(at))
    phases, falls = tables.phase_changes(pair), tables.phase_falls(pair)
    caption = next(c.value for c in at.caption if c.value.startswith("2 layers:"))
    for model, name in (("two", "2 layers"), ("one", "1 layer")):
        if phases[model] is None:
            assert f"{name}: no phase change" in caption
        else:
            before, after, first_before, first_after = falls[model]
            assert f"{name}: the phase change, where the repeated-token loss falls away" in caption
            assert (
                f"at step {phases[model]}: around it the repeated-token loss goes from {before:.2f} to {after:.2f}"
                in caption
            )
            assert f"the first-seen loss from {first_before:.2f} to {first_after:.2f}" in caption
    at.button(key="ind_play").click().run()  # from the first snapshot, one step on per tick
    assert_clean(at)
    assert at.select_slider(key="ind_snapshot").value == steps[1]
    at.button(key="ind_pause").click().run()
    assert_clean(at)


def test_knockout_text_states_the_measured_losses():
    at = train(open_link(PAGE, {**TINY, "seed": "203"}))
    pair = shelf_pair(40, 203)
    at.multiselect(key="ind_knockout").select("L0H0").select("L1H2").run()
    at.select_slider(key="ind_snapshot").set_value(0).run()  # knockouts still use the final weights: say their step
    assert_clean(at)
    table = tables.knockout_table(pair.two, ("L0H0", "L1H2"), "zero").set_index("split")
    before, after = table.loc["repeated", "intact"], table.loc["repeated", "knocked_out"]
    text = next(m.value for m in at.markdown if m.value.startswith("At step 40, removing L0H0, L1H2"))
    assert any(
        c.value.startswith("Ablation: each head removed alone from the 2-layer model as trained (step 40,")
        for c in at.caption
    )
    assert f"**{before:.2f}**" in text and f"**{after:.2f}**" in text
    assert ("does not raise" in text) == (after <= before)
    at.radio(key="ind_mode").set_value("mean").run()
    assert_clean(at)
    mean = tables.knockout_table(pair.two, ("L0H0", "L1H2"), "mean").set_index("split")
    assert any(f"**{mean.loc['repeated', 'knocked_out']:.2f}**" in m.value for m in at.markdown)


def test_both_languages_and_a_shared_result():
    first = train(open_link(PAGE, {**TINY, "seed": "204"}))
    again = open_link(PAGE, {**TINY, "seed": "204", "lang": "zh"})  # no click: the shelf has it
    assert_clean(again)
    assert again.select_slider(key="ind_snapshot").options == first.select_slider(key="ind_snapshot").options
    assert notice_points(again)[0].startswith("- 在第 40 步")
    assert any("第 40 步的头分数" in text for text in chart_texts(again))


def test_the_page_refuses_work_beyond_its_cap(monkeypatch):
    with pytest.raises(ValueError, match="steps"):
        tables.pair_config(41, 0)
    monkeypatch.setattr(tables, "PAGE_MAX_WORK_FACTOR", 0.5)
    with pytest.raises(TooMuchWork):
        tables.pair_config(max(tables.STEPS), 0)
    steps, flops, memory = tables.cost(tables.pair_config(min(tables.STEPS), 0))
    pair = tables.pair_config(min(tables.STEPS), 0)
    assert steps == min(tables.STEPS) + round(min(tables.STEPS) * tables.step_share(pair)) and flops > 0 and memory > 0
    assert 0.4 < tables.step_share(pair) < 0.7  # a 1-layer step: about half the work of a 2-layer one
    assert flops * steps == pytest.approx(tables.pair_work(pair))


def test_a_click_s_progress_ends_at_its_cost_in_two_layer_steps():
    """The training line's estimate is its pace per counted step times the steps left: counted in 2-layer steps, the
    1-layer model's cheaper steps count by their work, and the progress reaches exactly the cost's steps."""
    pair = tables.pair_config(min(tables.STEPS), 0)
    seen = []
    tables.train_pair(pair, progress=lambda done, total, loss: seen.append((done, total)))
    steps = tables.cost(pair)[0]
    assert {total for _, total in seen} == {steps}
    assert seen[-1][0] == steps and [d for d, _ in seen] == sorted(d for d, _ in seen)
    two_layer_end = max(d for d, _ in seen if d <= pair.two.steps)
    assert two_layer_end == pair.two.steps < steps < 2 * pair.two.steps


def chart_texts(at) -> list[str]:
    """Each chart's spec as text (titles may be wrapped into line lists or signals: search the whole spec)."""
    return [json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("vega_lite_chart")]
