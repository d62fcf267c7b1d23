import math
import random
import re

from app_helpers import assert_clean, metric, open_link

from attn_core.positional import frequencies

PAGE = "views/positional.py"


def block_numbers(at) -> list[float]:
    """The four numbers of the displayed 2x2 block of M_k."""
    latex = next(x.value for x in at.latex if x.value.strip("$\n").startswith("= "))
    return [float(v) for v in re.findall(r"-?\d+\.\d+", latex)]


def test_renders_at_defaults_with_formulas_and_charts(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 7
    assert any(r"\omega_i" in x.value for x in at.latex) and any("M_k" in x.value for x in at.latex)
    assert at.expander  # the predict-first answer is folded away
    # default periods 4 and 6: the first repeat is at lcm = 12, not at the product 24
    assert metric(at, "first collision") == "12" and metric(at, "product") == "24"
    # fp64 dot products of 16 cosine pairs: rounding is ~1e-14, far from any real dependence on i
    assert float(metric(at, "largest spread within one offset")) < 1e-10


def test_shift_check_is_tiny_and_the_block_is_the_rotation(open_page):
    at = open_page(PAGE)
    at.slider(key="pe_pos").set_value(150).run()
    at.slider(key="pe_k").set_value(-17).run()
    at.slider(key="pe_freq").set_value(3).run()
    assert_clean(at)
    # PE(pos + k) - M_k PE(pos) in fp64: rounding of angles up to ~150 rad, ~1e-14
    assert float(metric(at, "max error at pos")) < 1e-12
    assert float(metric(at, "all n positions")) < 1e-12
    angle = -17 * 10000 ** (-2 * 3 / 32)  # k w_3 for the default d_model = 32, base 10000
    c, s = math.cos(angle), math.sin(angle)
    expected = [c, s, -s, c]
    assert all(abs(a - b) < 1e-4 for a, b in zip(block_numbers(at), expected, strict=True))  # printed to 4 places


def test_collision_position_is_the_lcm_of_the_chosen_periods(open_page):
    at = open_page(PAGE)
    for periods in ([4, 5], [3, 5, 7], [6, 9, 12], [16]):
        at.multiselect(key="pe_periods").set_value(periods).run()
        assert_clean(at)
        assert metric(at, "first collision") == f"{math.lcm(*periods):,}"
        assert metric(at, "lcm of the periods") == f"{math.lcm(*periods):,}"
        assert metric(at, "product") == f"{math.prod(periods):,}"
        assert any("dashed line marks the first collision" in c.value for c in at.caption)  # drawn on the chart
    at.multiselect(key="pe_periods").set_value([11, 13, 15, 16]).run()  # lcm 34320, beyond the chart
    assert metric(at, "first collision") == "34,320"
    assert any("further out" in c.value for c in at.caption)
    # audit (issue 25): "The dashed line marks the first collision" stood beside "…lies further out", no line drawn
    assert not any("dashed line" in c.value for c in at.caption)


def test_no_period_gives_a_friendly_message(open_page):
    at = open_page(PAGE)
    at.multiselect(key="pe_periods").set_value([]).run()
    assert not at.exception and not at.error
    assert any("period" in w.value for w in at.warning)


def test_positions_break_equivariance(open_page):
    at = open_page(PAGE)
    assert float(metric(at, "error without PE")) < 1e-12  # fp64 attention: rounding only
    assert float(metric(at, "error with PE (a = 1)")) > 1e-3
    at.slider(key="pe_amplitude").set_value(0.0).run()
    assert float(metric(at, "error with PE (a = 0)")) < 1e-12
    at.slider(key="pe_amplitude").set_value(0.3).run()
    for kind in ("reverse", "cyclic"):
        at.selectbox(key="pe_kind").set_value(kind).run()
        assert_clean(at)
        assert float(metric(at, "error with PE (a = 0.3)")) > 1e-3
    before = metric(at, "error with PE (a = 0.3)")
    at.selectbox(key="pe_kind").set_value("random").run()
    random_before = metric(at, "error with PE (a = 0.3)")
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert metric(at, "error with PE (a = 0.3)") not in (random_before, before)


def test_size_controls_change_and_the_page_follows(open_page):
    at = open_page(PAGE)
    at.slider(key="pe_n").set_value(128).run()
    at.select_slider(key="pe_d_model").set_value(4).run()  # one frequency pair fewer than the chosen one: clamped
    at.select_slider(key="pe_base").set_value(100).run()
    assert_clean(at)
    assert at.slider(key="pe_freq").value == 1
    assert any("128² = 16,384 dot products in 255 offsets" in c.value for c in at.caption)
    assert float(metric(at, "largest spread within one offset")) < 1e-10
    assert float(metric(at, "all n positions")) < 1e-12


def test_a_frequency_whose_range_follows_d_model_round_trips_through_the_url():
    at = open_link(PAGE, {})
    at.select_slider(key="pe_d_model").set_value(64).run()
    at.slider(key="pe_freq").set_value(20).run()
    at.multiselect(key="pe_periods").set_value([3, 5, 7, 11]).run()
    at.slider(key="pe_amplitude").set_value(0.3).run()
    at.select_slider(key="pe_d_model").set_value(128).run()  # a wider range keeps the chosen frequency
    assert_clean(at)
    assert at.slider(key="pe_freq").value == 20
    url = dict(at.query_params)
    assert (url["pe_d_model"], url["pe_freq"], url["pe_periods"]) == ("128", "20", "3,5,7,11")

    again = open_link(PAGE, url)  # a student opens the copied link
    assert_clean(again)
    assert again.slider(key="pe_freq").value == 20 and again.slider(key="pe_freq").max == 63
    assert again.multiselect(key="pe_periods").value == [3, 5, 7, 11]
    assert [(m.label, m.value) for m in again.metric] == [(m.label, m.value) for m in at.metric]
    assert block_numbers(again) == block_numbers(at)

    again.select_slider(key="pe_d_model").set_value(16).run()  # 8 frequencies: pulled back to the last one
    assert again.slider(key="pe_freq").value == 7 and again.query_params["pe_freq"] == "7"


def test_a_link_with_too_many_periods_or_a_frequency_out_of_range_is_refused_with_a_notice():
    at = open_link(PAGE, {"pe_periods": "2,3,5,7,11", "pe_d_model": "16", "pe_freq": "8"})
    assert_clean(at)
    assert at.multiselect(key="pe_periods").value == [4, 6]
    assert at.slider(key="pe_freq").value == 2
    notices = [toast.value for toast in at.toast]
    assert len(notices) == 2 and all("ignored" in n for n in notices)
    assert at.query_params["pe_periods"] == "4,6" and at.query_params["pe_freq"] == "2"


def test_the_aliasing_formula_is_one_step_a_line_so_no_column_cuts_it_off(open_page):
    at = open_page(PAGE)
    latex = next(x.value for x in at.latex if "lcm" in x.value)
    lines = latex.split(r"\\")
    assert len(lines) == 3 and r"\iff" in lines[1] and r"\operatorname{lcm}" in lines[2]


def test_the_clock_line_quotes_the_periods_of_this_setting(open_page):
    """Audit (issue 25): 'the last ones barely move' was false at d_model 4, base 100: the last pair's period is
    2π·10 ≈ 63 positions, and n goes to 128. The line now quotes both periods, recomputed from attn_core."""
    rng = random.Random(25)
    settings = [(128, 4, 100)] + [
        (8 * rng.randint(1, 16), rng.choice([4, 8, 16, 32, 64, 128]), rng.choice([100, 1000, 10000])) for _ in range(2)
    ]
    at = open_page(PAGE)
    for n, d_model, base in settings:
        at.slider(key="pe_n").set_value(n)
        at.select_slider(key="pe_d_model").set_value(d_model)
        at.select_slider(key="pe_base").set_value(base).run()
        assert_clean(at)
        omega = frequencies(d_model, base=float(base))
        slow = 2 * math.pi / float(omega.min())
        text = " ".join(m.value for m in at.markdown)
        assert "barely move" not in text
        assert f"period 2π = {2 * math.pi / float(omega.max()):.1f} positions" in text
        assert f"slowest (period {slow:,.0f} positions, against the n = {n} positions shown)" in text
