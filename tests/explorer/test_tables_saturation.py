"""Tables (and the chart specs built on them) for "Softmax saturation and temperature".

Each value is checked against a formula computed here independently of attn_core.stats: NumPy log-sum-exp
softmax, the closed-form Frobenius norm of diag(p) - p p^T, torch.autograd's Jacobian of torch.softmax.
"""

import math
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core.naive import masked_softmax
from attn_core.stats import jacobian_norm, random_logits, saturation_summary
from explorer.charts import saturation as charts
from explorer.tables import saturation as tables
from explorer.ui.draw import with_params
from explorer.ui.i18n import catalog, fill

SEED = 3
EPS = np.finfo(np.float64).eps


def np_softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_entropy(p: np.ndarray) -> np.ndarray:
    return -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=-1)


def jacobian_fro(p: np.ndarray) -> np.ndarray:
    """||diag(p) - p p^T||_F from sum_i p_i^2 (1 - p_i)^2 + sum_{i != j} p_i^2 p_j^2 = S2 - 2 S3 + S2^2."""
    s2, s3 = (p**2).sum(axis=-1), (p**3).sum(axis=-1)
    return np.sqrt(np.maximum(s2 - 2 * s3 + s2**2, 0.0))


@pytest.fixture(scope="module")
def sweep():
    return tables.saturation_sweep(8, SEED, n_rows=64)


def test_sweep_has_one_row_per_d_k_and_series(sweep):
    assert len(sweep) == 2 * len(tables.D_K_SWEEP)
    assert set(sweep.columns) == {"d_k", "series", "entropy", "max_weight", "jacobian_norm", "jacobian_median"}
    assert sorted(set(sweep.d_k)) == list(tables.D_K_SWEEP) and set(sweep.series) == {"unscaled", "scaled"}
    assert sweep[["entropy", "max_weight", "jacobian_norm", "jacobian_median"]].notna().all().all()


@pytest.mark.parametrize("d_k", [1, 16, 1024])
@pytest.mark.parametrize("series", ["unscaled", "scaled"])
def test_sweep_values_match_independent_formulas(sweep, d_k, series):
    z = random_logits(d_k, 64, 8, scaled=series == "scaled", seed=SEED).numpy()
    p = np_softmax(z)
    got = sweep.set_index(["d_k", "series"]).loc[(d_k, series)]
    # float64 sums of 64 rows of 8 terms: a few hundred ulps at most.
    assert got.entropy == pytest.approx(np_entropy(p).mean(), rel=1e-12, abs=1e-12)
    assert got.max_weight == pytest.approx(p.max(axis=-1).mean(), rel=1e-12)
    norms = jacobian_fro(p)
    # the closed form cancels terms of size ~S2 ~ 1: its absolute error is ~1e-16 / ||J||, i.e. ~1e-8 at worst here
    assert got.jacobian_norm == pytest.approx(norms.mean(), rel=1e-6, abs=1e-9)
    assert got.jacobian_median == pytest.approx(np.median(norms), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("n_keys", [2, 32, 64])
def test_the_sweep_made_in_blocks_equals_the_library_summary_exactly(n_keys):
    """The sweep draws each d_k's logits once and makes its Jacobians 64 rows at a time (3-10x faster at n >= 32):
    every number must stay bit for bit what random_logits, saturation_summary and jacobian_norm give on all rows."""
    rows = []
    for d_k in tables.D_K_SWEEP:
        for series in tables.SERIES:
            logits = random_logits(d_k, 200, n_keys, scaled=series == "scaled", seed=SEED)  # 200: a ragged last block
            median = float(jacobian_norm(masked_softmax(logits)).quantile(0.5))
            rows.append({"d_k": d_k, "series": series, **saturation_summary(logits), "jacobian_median": median})
    got = tables.saturation_sweep(n_keys, SEED, n_rows=200)
    pd.testing.assert_frame_equal(got, pd.DataFrame(rows), check_exact=True)


def test_scaling_keeps_the_gradient_alive_where_unscaled_softmax_saturates(sweep):
    by = sweep.set_index(["d_k", "series"])
    # at d_k = 1 dividing by sqrt(1) changes nothing
    assert by.loc[(1, "unscaled")].to_dict() == pytest.approx(by.loc[(1, "scaled")].to_dict())
    big = 1024
    assert by.loc[(big, "unscaled"), "max_weight"] > by.loc[(1, "unscaled"), "max_weight"]
    assert by.loc[(big, "unscaled"), "jacobian_median"] < by.loc[(big, "scaled"), "jacobian_median"] / 100
    assert by.loc[(big, "unscaled"), "entropy"] < by.loc[(big, "scaled"), "entropy"]


def test_temperature_row_weights_and_measures():
    d_k, n, t = 64, 6, 2.0
    row, now = tables.temperature_row(d_k, n, t, SEED)
    assert len(row) == 2 * n and list(now.series) == ["unscaled", "scaled"] and (now.temperature == t).all()
    for series in ("unscaled", "scaled"):
        r = row[row.series == series]
        z = random_logits(d_k, 1, n, scaled=series == "scaled", seed=SEED)[0].numpy()
        np.testing.assert_allclose(r.logit, np.sort(z)[::-1], rtol=0, atol=0)  # rank 0 = the largest logit
        p = np_softmax(np.sort(z)[::-1] / t)
        np.testing.assert_allclose(r.weight, p, rtol=1e-12, atol=1e-300)
        got = now.set_index("series").loc[series]
        assert got.entropy == pytest.approx(np_entropy(p), rel=1e-12)
        assert got.max_weight == pytest.approx(p.max(), rel=1e-12)
        assert got.jacobian_norm == pytest.approx(jacobian_fro(p), rel=1e-6)


def test_the_curve_passes_through_the_row_at_every_offered_temperature():
    assert set(tables.TEMPERATURES) <= set(tables.T_GRID)  # the page's marker points sit on the curve
    assert list(tables.T_GRID) == sorted(tables.T_GRID) and tables.T_GRID[0] == 0.01 and tables.T_GRID[-1] == 1e4
    curve = tables.temperature_curve(64, 8, SEED).set_index(["series", "temperature"])
    assert len(curve) == 2 * len(tables.T_GRID)
    for t in (0.02, 1.0, 500.0):
        now = tables.temperature_row(64, 8, t, SEED)[1].set_index("series")
        for series in ("unscaled", "scaled"):
            assert curve.loc[(series, t), "entropy"] == pytest.approx(now.loc[series, "entropy"], rel=1e-12, abs=0)


def test_entropy_rises_with_temperature_to_log_n():
    n = 16
    curve = tables.temperature_curve(64, n, SEED)
    for series, c in curve.groupby("series"):
        h = c.sort_values("temperature").entropy.to_numpy()
        # strictly increasing in exact arithmetic (distinct logits); allow rounding of ~n eps per value
        assert np.all(np.diff(h) > -n * EPS), series
        z = random_logits(64, 1, n, scaled=series == "scaled", seed=SEED)[0].numpy()
        # log n - H = KL(p || uniform) <= log(n max p) <= (max z - min z) / T
        assert 0 <= math.log(n) - h[-1] <= (z.max() - z.min()) / tables.T_GRID[-1] + n * EPS


def test_a_temperature_of_sqrt_d_k_undoes_the_missing_scaling():
    d_k, n = 64, 16
    unscaled = tables.temperature_row(d_k, n, math.sqrt(d_k), SEED)[1].set_index("series").loc["unscaled"]
    scaled = tables.temperature_row(d_k, n, 1.0, SEED)[1].set_index("series").loc["scaled"]
    assert unscaled.entropy == pytest.approx(scaled.entropy, rel=1e-12)
    assert unscaled.jacobian_norm == pytest.approx(scaled.jacobian_norm, rel=1e-12)


def test_the_notes_saturated_example_against_closed_forms():
    weights, cells, stats = tables.softmax_example(tables.NOTES_UNSCALED)
    a, b = math.exp(-20), math.exp(-40)
    total = 1 + a + b
    expected = np.array([1 / total, a / total, b / total])
    np.testing.assert_allclose(weights.weight, expected, rtol=1e-14)
    assert stats["one_minus_max"] == pytest.approx((a + b) / total, rel=1e-14)
    # dp_1/dz_1 = p_1 (1 - p_1) ~ e^-20 ~ 2.06e-9; diag(p) - p p^T loses ~eps / 2e-9 ~ 1e-7 of it to cancellation
    assert stats["top_gradient"] == pytest.approx(expected[0] * (a + b) / total, rel=1e-6)
    assert 1e-9 < stats["top_gradient"] < 1e-8
    assert stats["jacobian_norm"] == pytest.approx(2 * a, rel=1e-6)  # four entries of size ~e^-20


def test_example_jacobian_matches_autograd():
    for logits in (tables.NOTES_UNSCALED, tables.NOTES_SCALED, (4.0, 1.0, 0.0, -1.0, 0.5)):
        weights, cells, stats = tables.softmax_example(logits)
        n = len(logits)
        auto = torch.autograd.functional.jacobian(
            lambda z: torch.softmax(z, dim=-1), torch.tensor(logits, dtype=torch.float64)
        )
        got = torch.tensor(cells.sort_values(["i", "j"]).value.to_numpy()).reshape(n, n)
        torch.testing.assert_close(got, auto, rtol=1e-7, atol=1e-15)
        np.testing.assert_allclose(weights.self_gradient, auto.diagonal().numpy(), rtol=1e-7, atol=1e-15)
        assert stats["jacobian_norm"] == pytest.approx(float(auto.norm()), rel=1e-7)
        assert stats["entropy"] == pytest.approx(float(np_entropy(np_softmax(np.array(logits)))), rel=1e-12)


def test_scaled_example_passes_ten_million_times_more_gradient():
    saturated = tables.softmax_example(tables.NOTES_UNSCALED)[2]["jacobian_norm"]
    healthy = tables.softmax_example(tables.NOTES_SCALED)[2]["jacobian_norm"]
    assert 0.1 < healthy < 0.2 and saturated < 1e-8
    assert healthy / saturated > 1e7
    # the notes' scaled row is the unscaled one divided by sqrt(64)
    assert tuple(z / 8 for z in tables.NOTES_UNSCALED) == tables.NOTES_SCALED


def test_every_jacobian_entry_fits_the_shared_colour_limit():
    for logits in ((0.0, 0.0), (1.0, 0.0), (3.0, 3.0, -1.0), tables.NOTES_SCALED):
        _, cells, _ = tables.softmax_example(logits)
        assert cells.value.abs().max() <= tables.JACOBIAN_LIMIT + EPS
    # two equal logits reach the bound: p = (1/2, 1/2), dp_1/dz_1 = 1/4
    assert tables.softmax_example((0.0, 0.0))[1].value.abs().max() == pytest.approx(tables.JACOBIAN_LIMIT)


def test_notes_check_shows_how_far_off_the_rounded_weights_are():
    df = tables.notes_check()
    assert list(df.logits) == ["[20, 0, -20]", "[2.5, 0, -2.5]", "[3, -3]"]
    first = df.iloc[0]
    assert first.computed.startswith("[1 − 2.06e-09, 2.061e-09")
    p2 = math.exp(-20) / (1 + math.exp(-20) + math.exp(-40))
    assert first.worst_factor == pytest.approx(1e-4 / p2, rel=1e-12)
    # softmax([3, -3]) = 1 / (1 + e^-6) = 0.9975, not 0.95
    assert df.iloc[2].largest_gap == pytest.approx(1 / (1 + math.exp(-6)) - 0.95, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4, 1, 0, -1", (4.0, 1.0, 0.0, -1.0)),
        ("20,0,-20", (20.0, 0.0, -20.0)),
        (" \u221220 , .5, 2., 1e1, -2.5E-1 ", (-20.0, 0.5, 2.0, 10.0, -0.25)),
        (",".join(["1"] * 16), (1.0,) * 16),
    ],
)
def test_parse_logits_accepts_plain_decimals(text, expected):
    assert tables.parse_logits(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at least 2"),
        ("   ", "at least 2"),
        ("3", "at least 2"),
        ("1,,2", "entry 2"),
        ("1; 2", "entry 1"),
        ("1 2", "entry 1"),
        ("nan, 1", "entry 1"),
        ("1, inf", "entry 2"),
        ("1_0, 2", "entry 1"),
        ("0x10, 2", "entry 1"),
        ("1e400, 1", "must lie in"),
        ("2000, 1", "must lie in"),
        (",".join(["1"] * 17), "at most 16"),
    ],
)
def test_parse_logits_rejects_anything_else_with_a_message(text, message):
    with pytest.raises(ValueError, match=message):
        tables.parse_logits(text)


@given(st.lists(st.floats(-1000, 1000, allow_nan=False, allow_infinity=False), min_size=2, max_size=16))
def test_parse_logits_round_trips_printed_floats(values):
    assert tables.parse_logits(", ".join(repr(v) for v in values)) == tuple(values)


def chart_text(table: str, **values) -> dict[str, str]:
    """The page's English strings for one chart (the builders take them as they are, in any language)."""
    start = f"saturation.charts.{table}."
    return {k[len(start) :]: fill(v, values) for k, v in catalog("en").items() if k.startswith(start)}


NAMES = {"unscaled": "raw", "scaled": "divided"}  # legend labels that differ from the series keys


def test_chart_specs_validate_against_vega_lite():
    """The page skips Altair's schema check for speed; it runs here, on every chart the page draws."""
    df = tables.saturation_sweep(4, SEED, n_rows=8)
    row, _ = tables.temperature_row(16, 4, 0.5, SEED)
    curve = tables.temperature_curve(16, 4, SEED)
    _, cells, _ = tables.softmax_example(tables.NOTES_SCALED)
    entropy_text = chart_text("entropy", value=math.log(4))
    built = [
        charts.jacobian_vs_d_k(df, chart_text("jacobian"), NAMES, d_k=16),
        charts.measure_vs_d_k(df, column="entropy", text=entropy_text, names=NAMES, ceiling=math.log(4), d_k=16),
        charts.measure_vs_d_k(df, column="max_weight", text=chart_text("max_weight"), names=NAMES, d_k=16),
        charts.row_bars(row, "unscaled", chart_text("bars", t=0.5, value=0.25)),
        charts.entropy_vs_temperature(curve, math.log(4), chart_text("temperature"), NAMES, temperature=0.5),
    ]
    for chart in built:
        spec = chart.to_dict()  # validate=True: raises on any schema error
        main = spec["layer"][0]["encoding"]  # the data layer; the others are markers and reference lines
        assert spec["title"] and main["x"]["title"] and main["y"]["title"] and main["tooltip"]
        if "color" in main:  # the legend shows the page's names, the data keeps the series keys
            assert '"divided"' in main["color"]["legend"]["labelExpr"]
            assert main["color"]["scale"]["domain"] == ["unscaled", "scaled"]
    assert built[1].to_dict()["title"] == "Entropy of the weights, mean over rows"
    assert "log n = 1.386 (uniform)" in str(built[1].to_dict())  # the ceiling's label, filled by the page
    assert built[3].to_dict()["title"] == "One query's weights at T = 0.5"
    # the current d_k and T are parameters: moving them (draw.with_params, what chart(params=) draws) changes only
    # their value, and the spec stays valid
    for chart, param in ((built[0], charts.D_K_PARAM), (built[1], charts.D_K_PARAM), (built[4], charts.T_PARAM)):
        built_spec = chart.to_dict()
        before = repr(built_spec)
        spec = with_params(built_spec, {param: 256.0})
        assert [p for p in spec["params"] if p["name"] == param] == [{"name": param, "value": 256.0}]
        assert repr(built_spec) == before  # the shared spec is left as it was
        alt.Chart.from_dict(spec)  # validates
    with pytest.raises(ValueError, match="d_k_now"):
        with_params(built[3].to_dict(), {charts.D_K_PARAM: 256})
    styler = charts.jacobian_table(cells, tables.JACOBIAN_LIMIT)
    html = styler.to_html()
    assert "background-color: rgba(202, 0, 32" in html
    assert "e-02" not in html and "0.0749" in html  # softmax([2.5, 0, -2.5])'s dp_0/dz_0 reads as a number


def test_the_tinted_jacobian_is_the_same_html_each_time_and_named_apart_per_row():
    """Its CSS was named by a random id: the kept HTML differed from a rebuilt one (check mode failed the page), and
    two tables must still not share rules (each would take the other's tints)."""
    make = tables.jacobian_html.__wrapped__  # not the kept result: built twice
    assert make(tables.NOTES_SCALED) == make(tables.NOTES_SCALED)
    ids = {re.search(r"#T_(\w+?)_row0_col0", make(z)).group(1) for z in (tables.NOTES_SCALED, tables.NOTES_UNSCALED)}
    assert len(ids) == 2


def test_a_one_hot_row_has_entropy_plus_zero():
    """-(1 log 1) is -0.0 in floating point; the page would print it as -0.0000."""
    _, now = tables.temperature_row(1024, 64, 0.01, 0)  # the unscaled row is exactly one-hot here
    unscaled = now.set_index("series").loc["unscaled"]
    assert unscaled.max_weight == 1.0 and math.copysign(1.0, unscaled.entropy) == 1.0


def test_the_saturation_page_and_the_claims_table_judge_the_notes_rows_alike():
    """One source of truth: the verdict the saturation page prints is the claims table's, row for row."""
    from explorer import notes

    df = tables.notes_check().set_index("key")
    claims = notes.check_claims(0, keys=list(df.index)).set_index("key")
    assert df.verdict.to_dict() == claims.verdict.to_dict()
    assert df.verdict.to_dict() == {"softmax_20_0": "inexact", "softmax_2_5": "right", "softmax_3": "wrong"}
