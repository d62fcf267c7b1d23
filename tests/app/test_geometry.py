import math

from app_helpers import assert_clean, metric

from explorer.tables import geometry as tables

PAGE = "views/geometry.py"


def test_renders_at_defaults_with_formulas_and_charts(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 5  # hull, regression, parity, cos histogram, Var cos sweep
    assert any(r"\alpha_i" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer is folded away
    assert metric(at, "o inside the hull") == "yes"
    assert float(metric(at, "max |difference|")) < 1e-12


def test_the_output_stays_in_the_hull_for_any_query(open_page):
    at = open_page(PAGE)
    for q_x, q_y, t in ((3.0, 3.0, 0.05), (-3.0, 0.2, 0.05), (0.0, -3.0, 5.0), (-2.2, -2.7, 0.3)):
        at.slider(key="geo_q_x").set_value(q_x)
        at.slider(key="geo_q_y").set_value(q_y)
        at.slider(key="geo_temperature").set_value(t).run()
        assert_clean(at)
        assert metric(at, "o inside the hull") == "yes", (q_x, q_y, t)
        # attention and Nadaraya-Watson are one computation: any gap is float64 rounding
        assert float(metric(at, "max |difference|")) < 1e-12


def test_temperature_sharpens_and_flattens_the_weights(open_page):
    at = open_page(PAGE)
    at.slider(key="geo_n_points").set_value(9).run()
    assert_clean(at)
    assert any("of the 9 values" in c.value for c in at.caption)
    at.slider(key="geo_q_x").set_value(2.0)
    at.slider(key="geo_q_y").set_value(2.0).run()
    base = float(metric(at, "largest weight"))
    at.slider(key="geo_temperature").set_value(0.05).run()
    cold = float(metric(at, "largest weight"))
    at.slider(key="geo_temperature").set_value(5.0).run()
    hot = float(metric(at, "largest weight"))
    assert cold > base > hot
    assert hot < 0.3  # 9 values at T = 5: close to uniform (1/9 = 0.11)


def test_regression_controls_move_the_errors(open_page):
    at = open_page(PAGE)
    before = (metric(at, "RMSE, gaussian kernel"), metric(at, "RMSE, exponential kernel"))
    at.slider(key="geo_bandwidth").set_value(1.5).run()
    wide = float(metric(at, "RMSE, gaussian kernel"))
    assert wide > float(before[0])  # h = 1.5 flattens sin(2x): a worse fit than h = 0.3
    at.slider(key="geo_n_samples").set_value(200)
    at.slider(key="geo_noise").set_value(0.0)
    at.slider(key="geo_bandwidth").set_value(0.1).run()
    assert_clean(at)
    assert float(metric(at, "RMSE, gaussian kernel")) < 0.1  # dense, clean samples, narrow kernel


def test_parity_and_parameter_counts_follow_d_and_h(open_page):
    at = open_page(PAGE)
    at.select_slider(key="geo_parity_d").set_value(8)
    at.select_slider(key="geo_hidden").set_value(64).run()
    assert_clean(at)
    assert float(metric(at, "additive: odd residual")) < 1e-12
    assert float(metric(at, "dot product: even residual")) < 1e-12
    params = next(df.value for df in at.dataframe if "score function" in df.value.columns)
    assert params.parameters.tolist() == [0, 8 * 8, 2 * 8 * 64 + 64]


def test_cosine_variance_follows_d_and_the_seed(open_page):
    at = open_page(PAGE)
    at.select_slider(key="geo_cos_d").set_value(512).run()
    assert_clean(at)
    assert float(metric(at, "theory 1/d")) == round(1 / 512, 5)
    # SE of Var cos θ is about sqrt(2 / n) / d for large d (cos θ nearly normal): allow 5 of them
    se = math.sqrt(2 / tables.COS_PAIRS) / 512
    assert abs(float(metric(at, "measured Var cos θ")) - 1 / 512) < 5 * se
    before = (metric(at, "measured Var cos θ"), metric(at, "largest weight"))
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    after = (metric(at, "measured Var cos θ"), metric(at, "largest weight"))
    assert after[0] != before[0] and after[1] != before[1]


def test_an_exact_zero_residual_reads_as_0(open_page):
    """Audit (issue 25): exact zeros printed as 0.0e+00, which reads like a rounded small number."""
    at = open_page(PAGE)
    assert_clean(at)
    for label in ("max |difference|", "additive: odd residual", "dot product: even residual"):
        value = metric(at, label)
        assert "e+00" not in value and (value == "0") == (float(value) == 0)
