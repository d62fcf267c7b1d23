import itertools
import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.charts import geometry as geometry_charts
from explorer.charts.common import to_spec
from explorer.tables import geometry as g
from explorer.ui.cache import check

# Integer coordinates on a small grid: duplicates and collinear triples are common, which is the point.
grid_points = st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=1, max_size=12)


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p, a, b):
    return (
        _cross(a, b, p) == 0
        and min(a[0], b[0]) <= p[0] <= max(a[0], b[0])
        and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])
    )


def _in_triangle(p, a, b, c):
    """p in the closed, non-degenerate triangle abc (a flat triangle is a segment: see _on_segment)."""
    d = [_cross(a, b, p), _cross(b, c, p), _cross(c, a, p)]
    return _cross(a, b, c) != 0 and not (min(d) < 0 < max(d))


def _extreme_points(points):
    """Brute force: a point is a hull vertex iff no segment or triangle of the other points contains it.

    In the plane (Caratheodory) a point in the hull of others lies in a triangle or on a segment of them.
    Exact in integers.
    """
    distinct = sorted(set(points))
    extreme = set()
    for p in distinct:
        others = [o for o in distinct if o != p]
        inside = any(_on_segment(p, a, b) for a, b in itertools.combinations(others, 2)) or any(
            _in_triangle(p, a, b, c) for a, b, c in itertools.combinations(others, 3)
        )
        if not inside:
            extreme.add(p)
    return extreme


@given(grid_points)
def test_hull_vertices_are_exactly_the_extreme_points(points):
    pts = np.array(points, dtype=float)
    hull = g.convex_hull(pts)
    vertices = [tuple(int(c) for c in pts[i]) for i in hull]
    assert len(set(vertices)) == len(vertices)  # no vertex twice
    assert set(vertices) == _extreme_points(points)
    if len(vertices) >= 3:  # counter-clockwise and strictly convex: every turn is a left turn
        for a, b, c in zip(vertices, vertices[1:] + vertices[:1], vertices[2:] + vertices[:2], strict=True):
            assert _cross(a, b, c) > 0


@given(grid_points, st.tuples(st.integers(-8, 8), st.integers(-8, 8)))
def test_in_hull_agrees_with_a_triangle_fan(points, probe):
    pts = np.array(points, dtype=float)
    vertices = [tuple(pts[i]) for i in g.convex_hull(pts)]
    if len(vertices) >= 3:
        expected = any(_in_triangle(probe, vertices[0], b, c) for b, c in itertools.pairwise(vertices[1:]))
    elif len(vertices) == 2:
        expected = _on_segment(probe, *vertices)
    else:
        expected = probe == vertices[0]
    assert g.in_hull(probe, np.array(vertices)) == expected
    assert all(g.in_hull(p, np.array(vertices)) for p in points)  # every input point is in its hull


@given(
    n=st.integers(3, 12),
    q_x=st.floats(-3, 3),
    q_y=st.floats(-3, 3),
    temperature=st.sampled_from([0.05, 0.3, 1.0, 5.0]),
    seed=st.integers(0, 50),
)
def test_output_lies_in_the_hull_and_equals_nadaraya_watson(n, q_x, q_y, temperature, seed):
    points, hull, summary = g.hull_view(n, q_x, q_y, temperature, seed)
    assert summary["inside"]
    # Both paths compute the same softmax in float64: any gap is rounding, far below 1e-12.
    assert summary["max_abs_diff_output"] < 1e-12 and summary["max_abs_diff_weights"] < 1e-12
    assert math.isclose(points.attention.sum(), 1.0, abs_tol=1e-12) and (points.attention >= 0).all()
    out = np.array(summary["output"])
    np.testing.assert_allclose(out, points[["x", "y"]].to_numpy().T @ points.attention.to_numpy(), atol=1e-12)
    assert hull.iloc[0][["x", "y"]].tolist() == hull.iloc[-1][["x", "y"]].tolist()  # drawn closed


def test_temperature_moves_the_output_between_the_argmax_vertex_and_the_centroid():
    points, _, cold = g.hull_view(6, 2.0, 1.0, 0.01, 0)
    top = points.loc[(points.x * 2.0 + points.y * 1.0).idxmax()]
    np.testing.assert_allclose(cold["output"], (top.x, top.y), atol=1e-6)  # one-hot on the largest q.v
    _, _, hot = g.hull_view(6, 2.0, 1.0, 1e6, 0)
    np.testing.assert_allclose(hot["output"], hot["centroid"], atol=1e-5)  # uniform weights


def test_hull_of_degenerate_sets_and_bad_input():
    assert g.convex_hull([[1.0, 1.0], [1.0, 1.0]]).tolist() == [0]
    assert sorted(g.convex_hull([[0, 0], [1, 1], [2, 2], [3, 3]]).tolist()) == [0, 3]
    assert not g.in_hull((0.5, 0.6), np.array([[0.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="points"):
        g.convex_hull([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="finite"):
        g.convex_hull([[0.0, float("nan")]])
    with pytest.raises(ValueError, match="n_points"):
        g.value_points(0, 0)
    with pytest.raises(ValueError, match="temperature"):
        g.hull_view(4, 1.0, 1.0, 0.0, 0)


def test_regression_gaussian_is_local_and_exponential_is_not():
    samples, curves, rmse = g.regression_1d(40, 0.3, 0.3, 0)
    assert set(curves.series) == {"truth", "gaussian", "exponential"} and len(samples) == 40
    assert rmse["gaussian"] < 0.5 * rmse["exponential"]
    _, _, clean = g.regression_1d(200, 0.0, 0.1, 0)
    assert clean["gaussian"] < 0.1  # noise-free, dense samples, narrow kernel: close to the truth
    # the exponential kernel's prediction at the right end is the rightmost samples' value, not the truth there
    _, curves, _ = g.regression_1d(40, 0.0, 0.05, 0)
    right = curves[(curves.series == "exponential")].y.iloc[-1]
    assert right == pytest.approx(float(g.target_function(samples.x.max())), abs=1e-6)
    with pytest.raises(ValueError, match="bandwidth"):
        g.regression_1d(10, 0.1, 0.0, 0)
    with pytest.raises(ValueError, match="noise"):
        g.regression_1d(10, -1.0, 0.3, 0)


@pytest.mark.parametrize(("d", "hidden"), [(2, 4), (16, 32), (64, 8)])
def test_parity_additive_odd_dot_even_and_parameter_counts(d, hidden):
    pairs, stats, params = g.parity_samples(d, hidden, seed=3)
    assert len(pairs) == 2 * g.PARITY_PAIRS
    assert stats["additive"]["odd"] < 1e-12 and stats["dot product"]["even"] < 1e-12
    # and neither has the other parity: the residuals are of the order of the scores themselves
    assert stats["additive"]["even"] > 0.1 and stats["dot product"]["odd"] > 0.1
    assert params.parameters.tolist() == [0, d * d, 2 * d * hidden + hidden]
    assert params.score.tolist() == ["dot product", "bilinear", "additive"]  # keys: the page labels them


def test_cosine_histogram_and_density_are_normalised():
    bars, curve, stats = g.cosine_histogram(64, 5000, 0)
    assert ((bars.right - bars.left) * bars.density).sum() == pytest.approx(1.0)
    t = np.linspace(-1, 1, 200_001)
    for d in (3, 8, 256):
        assert np.trapezoid(g.cosine_density(t, d), t) == pytest.approx(1.0, abs=1e-4)
    np.testing.assert_allclose(g.cosine_density(np.array([-0.5, 0.0, 0.5]), 3), 0.5)  # d = 3: uniform on [-1, 1]
    assert stats["theory"] == 1 / 64


def test_cosine_variance_is_one_over_d():
    sweep = g.cosine_variance_sweep(g.COS_SWEEP_PAIRS, 0)
    assert sweep.d.tolist() == list(g.COS_D_SWEEP)
    # 4 standard errors: with 10 dimensions a false alarm has probability ~ 6e-4 (and the seed is fixed)
    assert ((sweep.empirical - sweep.theory).abs() < 4 * sweep.stderr).all()


def test_the_hull_picture_has_equal_units_and_names_that_cover_no_dot():
    """Audit (issue 25): Streamlit's autosize "fit" squeezed title and legend into 430 px, the plot to about 430 x 300
    (y units 0.7 of x units: angles and distances wrong); each value's name sat up-right of its dot whatever was there
    (the centroid's cross, a large dot)."""
    rng = random.Random(25)
    for _ in range(20):
        n, q = rng.randint(3, 12), (rng.uniform(-3, 3), rng.uniform(-3, 3))
        points, hull, summary = g.hull_view(n, *q, rng.choice([0.05, 0.3, 1.0, 5.0]), rng.randrange(1000))
        text = {"title": "t", "x": "x", "y": "y", "output": "o", "centroid": "c", "query": "q"}
        spec = to_spec(geometry_charts.hull_picture(points, hull, summary, q, text))
        assert spec["autosize"]["type"] == "pad" and spec["width"] == spec["height"]
        marks = pd.DataFrame({"x": [summary["output"][0], summary["centroid"][0], q[0]]})
        marks["y"] = [summary["output"][1], summary["centroid"][1], q[1]]
        xd = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
        places = geometry_charts._label_places(points, marks, [], xd)
        scale = geometry_charts.SQUARE / (xd[1] - xd[0])
        sizes = np.interp(points.attention, [0, 1], geometry_charts.VALUE_SIZES)
        dots = [*zip(points.x, points.y, np.sqrt(sizes / np.pi), strict=True)]
        dots += [(x, y, geometry_charts.MARKER_RADIUS) for x, y in zip(marks.x, marks.y, strict=True)]
        for name, lx, ly in zip(places.point, places.x, places.y, strict=True):
            w, h = 0.62 * geometry_charts.LABEL_FONT * len(name), geometry_charts.LABEL_FONT  # the glyphs alone
            for x, y, r in dots:
                dx, dy = abs(lx - x) * scale, abs(ly - y) * scale
                assert dx >= w / 2 + r or dy >= h / 2 + r, (n, q, name)


def test_the_weights_and_parameter_tables_are_cut_from_the_kept_tables():
    labels = ("logit", "attention", "Nadaraya-Watson")
    with check():  # rebuilt on a hit and compared: the key holds every input, nothing is changed in place
        for _ in range(2):
            weights = g.weights_table(5, 1.0, 0.5, 1.0, 0, labels)
            shown = g.parameters_table(8, 16, 0, {"additive": "add"}, {"additive": "n"}, HEADERS)
    points, _, _ = g.hull_view(5, 1.0, 0.5, 1.0, 0)
    assert list(weights.index) == list(labels) and list(weights.columns) == list(points.point)
    assert weights.loc["attention"].tolist() == points.attention.tolist()
    assert weights.loc["Nadaraya-Watson"].tolist() == points.nw.tolist()
    _, _, params = g.parity_samples(8, 16, 0)
    assert list(shown.columns) == list(HEADERS.values())
    assert shown["count"].tolist() == params.parameters.tolist()
    assert shown["name"].tolist()[-1] == "add" and shown["name"].isna().sum() == 2  # named by the page's words
    assert g.weights_table(5, 1.0, 0.5, 1.0, 0, ("a", "b", "c")).index.tolist() == ["a", "b", "c"]


HEADERS = {"score": "name", "parameters": "count", "formula": "how"}
