import math
import random
import re

import pyarrow as pa
import pytest
from app_helpers import assert_clean, metric

from attn_core.stats import DISTRIBUTIONS, sample_scores
from explorer.tables import sqrt_dk as tables

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


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def test_every_sentence_agrees_with_the_numbers_beside_it_over_a_seeded_sweep(open_page):
    """Issue 25: no '[-3, 3] where softmax responds' at any d_k, one ±3σ share, the row's gaps quoted as computed."""
    rng = random.Random(25)
    at = open_page(PAGE)
    settings = [(1, "normal", 0.5), (1024, "uniform", 0.5)]
    settings += [
        (rng.choice(tables.D_K_SWEEP), rng.choice(DISTRIBUTIONS), rng.choice([0.0, 1.0, 2.0])) for _ in range(2)
    ]
    for d_k, distribution, mean in settings:
        at.select_slider(key="d_k").set_value(d_k)
        at.selectbox(key="distribution").set_value(distribution).run()
        if distribution == "shifted":
            at.slider(key="mean").set_value(mean).run()
        mean = at.slider(key="mean").value
        assert_clean(at)
        page = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
        assert "[-3, 3]" not in page and "responds" not in page
        row = tables.softmax_row(d_k, 8, 1.0, 0)
        span = row.groupby("series").logit.agg(lambda x: x.max() - x.min())
        (gaps,) = [m.value for m in at.markdown if "only the gaps within a row" in m.value]
        assert f"span {span['unscaled']:.2f} and the scaled ones {span['scaled']:.2f}" in gaps
        (sigma,) = [c.value for c in at.caption if "±3σ" in c.value]
        assert len(re.findall(r"\d+\.\d+%", sigma)) == 2  # the one share and a Gaussian's 99.73%
        std = next(m for m in at.metric if m.label == "σ of q·k")
        assert std.proto.direction == std.proto.NONE  # two values side by side: no arrow
        theory = float(next(m.value for m in at.metric if m.label.startswith("theory")))
        mu = mean if distribution == "shifted" else 0.0
        assert theory == pytest.approx(d_k * (1 + 2 * mu**2))
        if distribution == "shifted":
            (moved,) = [m.value for m in at.markdown if "still moves with d_k" in m.value]
            assert f"= {1 + 2 * mu**2:.2f}" in moved and f"= {math.sqrt(d_k) * mu**2:.2f}" in moved
        for note in (i.value for i in at.info if "bell curve" in i.value):
            assert ("a single product" in note) == (d_k == 1) and "only 1 products" not in note
            assert ("variance 1," in note) == (distribution != "shifted")


def test_the_shaded_band_is_the_one_the_caption_counts_in(open_page):
    """The ±3σ band is the sample mean ± 3σ of the scaled scores (off 0 when μ ≠ 0), as the caption's share is;
    and a page set to another distribution says that the softmax row stays an N(0, 1) draw."""
    at = open_page(PAGE)
    at.select_slider(key="d_k").set_value(1)
    at.selectbox(key="distribution").set_value("shifted").run()
    at.slider(key="mean").set_value(2.0).run()
    assert_clean(at)
    proto = at.get("vega_lite_chart")[0].proto
    band = pa.ipc.open_stream(proto.datasets[0].data.data).read_pandas()
    scores = sample_scores(1, 5000, distribution="shifted", mean=2.0, seed=0)
    mean, std = float(scores.mean()), float(scores.std())
    assert band.lo[0] == pytest.approx(mean - 3 * std) and band.hi[0] == pytest.approx(mean + 3 * std)
    assert any("from N(0, 1), whatever the distribution" in c.value for c in at.caption)
