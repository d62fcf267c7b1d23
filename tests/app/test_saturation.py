import json
import math
import random

from app_helpers import assert_clean, open_link

from attn_core.naive import masked_softmax
from attn_core.stats import jacobian_norm, random_logits, saturation_summary
from explorer.tables import saturation as tables

PAGE = "views/saturation.py"


def metrics(at, label: str) -> list[float]:
    """Every metric with this label, as numbers, in page order (sections 1, 2, 3)."""
    return [float(m.value) for m in at.metric if m.label == label]


def test_renders_at_defaults_with_formulas_charts_and_tables(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert not at.warning, [w.value for w in at.warning]
    assert len(at.get("vega_lite_chart")) == 5
    assert len(at.dataframe) == 4  # 3 weight tables, the comparison with the notes
    jacobians = [h.proto.body for h in at.get("html") if "∂p_i/∂z_j" in h.proto.body]
    assert len(jacobians) == 3 and all("background-color: rgba(" in h for h in jacobians)  # tinted tables
    latex = " ".join(x.value for x in at.latex)
    assert r"\delta_{ij}" in latex and "e^{z_i/T}" in latex
    assert at.expander  # the predict-first answer is folded away
    # the answer quotes the computed gradient of the saturated example, e^-20 / (1 + ...) = 2.061e-09
    answer = " ".join(m.value for m in at.expander[0].markdown)
    assert "2.061e-09" in answer
    # the saturated example's Frobenius norm: four entries of size ~e^-20
    assert metrics(at, "‖J‖_F")[1] == float(f"{2 * math.exp(-20):.2e}")


def test_high_temperature_reaches_log_n_and_low_temperature_the_argmax(open_page):
    at = open_page(PAGE)
    at.select_slider(key="sat_n_keys").set_value(8).run()
    at.select_slider(key="sat_temperature").set_value(1000.0).run()
    assert_clean(at)
    n, t = 8, 1000.0
    entropy_chart = json.loads(at.get("vega_lite_chart")[4].proto.spec)
    assert {"name": "t_now", "value": t} in entropy_chart["params"]  # the marker and points follow T
    (ceiling,) = metrics(at, "ceiling log n")
    assert ceiling == round(math.log(n), 4)
    z = random_logits(64, 1, n, scaled=True, seed=0)[0]
    # log n - H = KL(p || uniform) <= (max z - min z) / T; the metrics print 4 decimals (+-5e-5 each)
    (entropy,) = metrics(at, "entropy H(p)")
    assert 0 <= ceiling - entropy + 1e-4 <= float(z.max() - z.min()) / t + 1e-4

    # at n = 16 the top two unscaled logits of this seed are 3.5 apart (at n = 8 they nearly tie)
    n, t = 16, 0.01
    at.select_slider(key="sat_n_keys").set_value(n).run()
    at.radio(key="sat_scale").set_value("unscaled").run()
    at.select_slider(key="sat_temperature").set_value(t).run()
    assert_clean(at)
    z = random_logits(64, 1, n, scaled=False, seed=0)[0].sort(descending=True).values
    # 1 - max p = sum_{j>0} e^{(z_j - z_0)/T} / (...) <= eps := (n - 1) e^{-(z_0 - z_1)/T}, and then
    # H <= h(eps) + eps log(n - 1), h the binary entropy (grouping the n - 1 small weights)
    eps = (n - 1) * math.exp(-float(z[0] - z[1]) / t)
    assert eps < 0.01  # the bound says something: this row is near-argmax at T = 0.01
    h = -eps * math.log(eps) - (1 - eps) * math.log1p(-eps) if eps > 0 else 0.0
    assert metrics(at, "largest weight")[0] >= 1 - eps - 5e-5
    assert metrics(at, "entropy H(p)")[0] <= h + eps * math.log(n - 1) + 5e-5


def test_large_d_k_saturates_the_unscaled_softmax_only(open_page):
    at = open_page(PAGE)
    at_64 = metrics(at, "largest weight, q·k")[0]
    at.select_slider(key="sat_d_k").set_value(1024).run()
    assert_clean(at)
    (unscaled,) = metrics(at, "largest weight, q·k")
    (scaled,) = metrics(at, "largest weight, q·k/√d_k")
    # the displayed value is the library's own summary of the same rows, printed to 3 decimals
    logits = random_logits(1024, tables.SWEEP_ROWS, 16, scaled=False, seed=0)
    assert abs(unscaled - saturation_summary(logits)["max_weight"]) <= 5e-4
    assert unscaled > 0.9 and unscaled > at_64 and scaled < 0.5
    assert any(c.value.startswith("At d_k = 1024") for c in at.caption)
    for chart in at.get("vega_lite_chart")[:3]:  # section 1's charts mark the chosen d_k
        assert {"name": "d_k_now", "value": 1024} in json.loads(chart.proto.spec)["params"]
    assert metrics(at, "median ‖J‖, q·k")[0] < metrics(at, "median ‖J‖, q·k/√d_k")[0] / 100


def test_every_control_changes_and_the_page_follows(open_page):
    at = open_page(PAGE)
    before = metrics(at, "entropy H(p)")[0]
    at.radio(key="sat_scale").set_value("unscaled").run()
    assert_clean(at)
    assert metrics(at, "entropy H(p)")[0] < before  # q·k at d_k = 64 is 8 times wider than q·k/√d_k

    at.select_slider(key="sat_n_keys").set_value(4).run()
    assert metrics(at, "ceiling log n") == [round(math.log(4), 4)]

    at.text_input(key="sat_logits").set_value("3, -3").run()
    assert_clean(at)
    assert any(m.value == "**softmax([3, -3])**" for m in at.markdown)
    own = [d.value for d in at.dataframe if "weight" in d.value.columns][2]  # the third example's weights
    assert own.weight.iloc[0] == 1 / (1 + math.exp(-6))  # 0.9975, where the notes print 0.95
    for bad in ("3, x", "1", ",".join(["1"] * 17), "1e999, 2"):
        at.text_input(key="sat_logits").set_value(bad).run()
        assert_clean(at)  # a friendly warning, never an exception
        assert len(at.warning) == 1 and at.warning[0].value.startswith("Your logits: ")
        assert len(at.get("vega_lite_chart")) == 5  # the rest of the page still draws

    median_before = metrics(at, "median ‖J‖, q·k")
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert metrics(at, "median ‖J‖, q·k") != median_before


def test_typed_logits_travel_in_the_url(open_page):
    """The text input the generic URL test cannot drive: set it, copy the URL, open it afresh."""
    at = open_page(PAGE)
    at.text_input(key="sat_logits").set_value("6, -1.5, 0").run()
    at.radio(key="sat_scale").set_value("unscaled").run()
    assert_clean(at)
    assert at.query_params["sat_logits"] == "6, -1.5, 0"
    again = open_link(PAGE, dict(at.query_params))
    assert_clean(again)
    assert again.text_input(key="sat_logits").value == "6, -1.5, 0"
    assert again.radio(key="sat_scale").value == "unscaled"
    assert any(m.value == "**softmax([6, -1.5, 0])**" for m in again.markdown)
    assert [m.value for m in again.metric] == [m.value for m in at.metric]


def test_every_chart_leaves_room_above_its_title(open_page):
    at = open_link(PAGE, {"lang": "zh"})  # Chinese glyphs reach above the title's box: the top was clipped
    for spec in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart")):
        assert spec["padding"]["top"] >= 10


def _flat(node) -> list:
    """Every element of the page in drawing order."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [node] + [e for child in children.values() for e in _flat(child)]


def test_temperature_and_logits_choice_sit_in_the_section_they_drive(open_page):
    at = open_page(PAGE)
    order = _flat(at.main)
    where = {id(e): i for i, e in enumerate(order)}
    section_2 = next(h for h in at.subheader if h.value.startswith("2 ·"))
    section_3 = next(h for h in at.subheader if h.value.startswith("3 ·"))
    for widget in (at.select_slider(key="sat_temperature"), at.radio(key="sat_scale")):
        assert where[id(section_2)] < where[id(widget)] < where[id(section_3)]
    assert where[id(at.select_slider(key="sat_d_k"))] < where[id(next(h for h in at.subheader))]


def test_a_box_whose_controls_are_all_hidden_leaves_no_empty_frame():
    shown = open_link(PAGE, {})
    hidden = open_link(PAGE, {"hide": "sat_temperature,sat_scale"})
    assert_clean(hidden)

    def frames(at) -> int:
        return sum(b.proto.flex_container.border for b in _flat(at.main) if getattr(b, "type", "") == "flex_container")

    assert frames(hidden) == frames(shown) - 1


def test_the_notices_say_what_the_sweep_shows_at_every_n_and_d_k(open_page):
    """Issue 25: at n 16, d_k 16 the unscaled mean ‖J‖ (0.287) is below its median (0.346), and at n 64 the median
    first rises; the notices, recomputed here from attn_core's logits, must say so instead of 'collapses' and 'far
    above'."""
    rng = random.Random(25)
    settings = [(16, 16), (64, 4)] + [(rng.choice([2, 4, 8, 16, 32, 64]), 2 ** rng.randrange(11)) for _ in range(2)]
    at = open_page(PAGE)
    for n, d_k in settings:
        at.select_slider(key="sat_n_keys").set_value(n)
        at.select_slider(key="sat_d_k").set_value(d_k).run()
        assert_clean(at)
        median, mean = {}, {}
        for d in tables.D_K_SWEEP:
            for series in ("unscaled", "scaled"):
                z = random_logits(d, tables.SWEEP_ROWS, n, scaled=series == "scaled", seed=0)
                per_row = jacobian_norm(masked_softmax(z))
                median[d, series], mean[d, series] = float(per_row.quantile(0.5)), float(per_row.mean())
        text = " ".join(m.value for m in at.markdown)
        assert "collapses" not in text and "The mean stays far above" not in text
        assert "smaller gradient" not in " ".join(h.value for h in at.subheader)  # it rises first at large n
        unscaled = [median[d, "unscaled"] for d in tables.D_K_SWEEP]
        peak = max(unscaled)
        if peak > unscaled[0]:
            assert f"{peak:.3g} at d_k = {tables.D_K_SWEEP[unscaled.index(peak)]}, then falls" in text
        else:
            assert f"falls from {unscaled[0]:.3g} at d_k = 1" in text
        u_mean, u_median = mean[d_k, "unscaled"], median[d_k, "unscaled"]
        quoted = f"mean ‖J‖ ({u_mean:.3g})"
        assert quoted in text
        if u_mean < 2 * u_median:
            assert f"{quoted} and median ({u_median:.3g}) are within a factor of 2" in text
        else:
            assert f"{quoted} is {u_mean / u_median:.3g} times the median" in text
        below = [
            d
            for d in tables.D_K_SWEEP[1:]
            if all(median[e, "unscaled"] < median[e, "scaled"] for e in tables.D_K_SWEEP if e >= d)
        ]
        assert f"below the scaled one from d_k = {below[0]} on" in text


def test_weights_read_as_numbers_not_exponents(open_page):
    at = open_page(PAGE)
    # softmax([2.5, 0, -2.5]): 1 - max p = 0.08158, H = 0.3045 nats (not 8.158e-02, 3.045e-01)
    assert any("1 − max p = 0.08158 · entropy H(p) = 0.3045 nats" in c.value for c in at.caption)
    (notes,) = [d for d in at.dataframe if "largest gap" in d.proto.columns]
    assert '"%.3g"' in notes.proto.columns and "%.2e" not in notes.proto.columns
    weights = at.dataframe[1]  # softmax([2.5, 0, -2.5])
    assert weights.proto.columns and "%.4g" in weights.proto.columns and "%.4e" not in weights.proto.columns


def test_moving_d_k_or_t_moves_the_markers_without_building_a_chart(open_page, monkeypatch):
    """The current d_k and T are the charts' Vega-Lite parameters, set on the kept specs when drawn: passed to the
    builders instead, each d_k x n x language built three new charts (~20 ms each) and each T one more."""
    from explorer.ui import draw
    from explorer.ui.cache import check

    built, real = [], draw._build
    monkeypatch.setattr(draw, "_build", lambda builder, *rest: built.append(builder.__name__) or real(builder, *rest))
    with check(False):  # check mode rebuilds every spec it finds kept: here only misses may build
        at = open_page(PAGE)
        built.clear()
        at.select_slider(key="sat_d_k").set_value(512).run()  # a d_k not drawn before
        assert "jacobian_vs_d_k" not in built and "measure_vs_d_k" not in built  # the temperature charts follow d_k
        built.clear()
        at.select_slider(key="sat_temperature").set_value(0.2).run()
        assert_clean(at)
        assert "entropy_vs_temperature" not in built  # the bars show the weights at T: they are built for it
        specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
        for spec in specs[:3]:
            assert {"name": "d_k_now", "value": 512} in spec["params"]
        assert {"name": "t_now", "value": 0.2} in specs[4]["params"]
