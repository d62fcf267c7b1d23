import math
import random

import pytest
import torch
from app_helpers import assert_clean, metric, open_link

from attn_core.stats import cosine_similarity_samples
from explorer.tables import geometry as tables
from explorer.ui.page import DEFAULT_SEED

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


def cosine_notice(at) -> str:
    return next(m.value for m in at.markdown if "3/√d" in m.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cosine_notice_states_what_its_own_pairs_show_at_every_d_and_seed(lang):
    """Audit (issue 25): "within about 5° of 90°" was fixed text, shown at every d (at d = 2 no angle is bounded)."""
    at = open_link(PAGE, {"lang": lang})
    rng = random.Random(25)
    settings = [(d, DEFAULT_SEED) for d in tables.COS_D_SWEEP] + [
        (rng.choice(tables.COS_D_SWEEP), rng.randrange(1, 10_000)) for _ in range(3)
    ]
    for d, seed in settings:
        at.select_slider(key="geo_cos_d").set_value(d)
        at.session_state["seed"] = seed
        at.run()
        assert_clean(at)
        text = cosine_notice(at)
        cos = cosine_similarity_samples(d, tables.COS_PAIRS, seed=seed).double()
        band = 3 / math.sqrt(d)
        if band >= 1:  # every angle is allowed: no claim of bunching
            assert "°" not in text.replace("90°", ""), (d, text)
            assert f"= {band:.2f}" in text and f"d = {tables.COS_NARROW_FROM}" in text
            continue
        off_90 = (90 - torch.rad2deg(torch.arccos(cos.clamp(-1, 1)))).abs()
        degrees = math.degrees(math.asin(band))
        share = float((off_90 <= degrees + 1e-9).double().mean())
        assert f"{tables.COS_PAIRS} " in text and f"{share:.1%}" in text, (d, seed, text)
        assert f"{degrees:.1f}°" in text and f"3/√d = {band:.3f}" in text, (d, seed, text)
        assert share > 0.99  # "almost every pair": the text's second sentence
