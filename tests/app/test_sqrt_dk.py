import math

from app_helpers import assert_clean, metric

PAGE = "views/sqrt_dk.py"


def test_renders_at_defaults_with_formula_and_charts(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 3  # overlaid histograms, variance sweep, softmax row
    at.toggle(key="overlay").set_value(False).run()
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 4  # the two histograms side by side
    assert any("d_k" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer is folded away


def test_unscaled_variance_follows_d_k(open_page):
    at = open_page(PAGE)
    at.select_slider(key="d_k").set_value(256).run()
    assert_clean(at)
    var = float(metric(at, "Var(q·k)"))
    # 5000 pairs: the standard error of the sample variance is sqrt((2 d^2 + 6 d) / N) ~ 5.1.
    assert abs(var - 256) < 5 * math.sqrt((2 * 256**2 + 6 * 256) / 5000)
    assert abs(float(metric(at, "Var(q·k/√d_k)")) - 1) < 5 * math.sqrt(2 / 5000) * 1.05


def test_every_control_changes_and_the_page_follows(open_page):
    at = open_page(PAGE)
    at.select_slider(key="n_pairs").set_value(1000).run()
    at.selectbox(key="distribution").set_value("shifted").run()
    at.slider(key="mean").set_value(1.0).run()
    assert_clean(at)
    # the shifted distribution: Var = d_k (1 + 2 mu^2) = 192 at d_k = 64, far from the i.i.d. theory of 64
    assert float(metric(at, "Var(q·k)")) > 128
    before = at.markdown[-1].value
    at.slider(key="temperature").set_value(5.0).run()
    assert_clean(at)
    assert "T = 5" in at.markdown[-1].value and at.markdown[-1].value != before
    at.selectbox(key="distribution").set_value("uniform").run()
    var_before = metric(at, "Var(q·k)")
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert metric(at, "Var(q·k)") != var_before


def test_at_small_d_k_the_page_says_why_the_histogram_is_not_normal(open_page):
    at = open_page(PAGE)
    assert not [i for i in at.info if "bell curve" in i.value]  # d_k = 64: the bars follow N(0, 1)
    at.select_slider(key="d_k").set_value(1).run()
    assert_clean(at)
    (note,) = [i.value for i in at.info if "bell curve" in i.value]
    assert "3 + 6/d_k = 9.00" in note  # the kurtosis of one product of two normals
    measured = float(note.split("measured here, is ")[1].split(";")[0])
    assert 6 < measured < 12  # computed from the draw, not written in
    at.select_slider(key="d_k").set_value(16).run()
    assert not [i for i in at.info if "bell curve" in i.value]


def test_the_temperature_slider_sits_beside_the_softmax_chart_it_drives(open_page):
    at = open_page(PAGE)
    boxed = [b for b in at.main.children.values() if getattr(b, "type", "") == "flex_container"]
    in_box = [w.key for w in boxed[0].slider] + [w.key for w in boxed[0].select_slider]
    assert "d_k" in in_box and "temperature" not in in_box
    at.slider(key="temperature").set_value(0.1).run()
    assert_clean(at)
    assert any("T = 0.1" in m.value for m in at.markdown)
