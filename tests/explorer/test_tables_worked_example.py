import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.tables import worked_example as w

small = st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 2))


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    """An independent reference: numpy, row by row."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_two_token_example_by_hand():
    ex = w.EXAMPLES["two_tokens"]
    steps = w.attention_steps(ex.q, ex.k, ex.v)
    np.testing.assert_array_equal(steps["scores"].to_numpy(), [[1, 2], [2, 4]])
    np.testing.assert_allclose(steps["scaled"].to_numpy(), np.array([[1, 2], [2, 4]]) / math.sqrt(3), rtol=1e-15)
    a11 = 1 / (1 + math.exp(1 / math.sqrt(3)))  # softmax([s, 2s]) at s = 1/sqrt(3): the first weight
    assert steps["weights"].iloc[0, 0] == pytest.approx(a11, rel=1e-14)
    # z_1 = a11 v_1 + a12 v_2 with v_1 = (1, 2, 3), v_2 = (4, 5, 6): every entry is 4 - 3 a11 + (j - 1)
    np.testing.assert_allclose(steps["output"].iloc[0], [4 - 3 * a11, 5 - 3 * a11, 6 - 3 * a11], rtol=1e-14)


@given(st.lists(st.lists(small, min_size=2, max_size=2), min_size=4, max_size=4), st.booleans())
def test_steps_match_a_numpy_reference(q, scaled):
    ex = w.EXAMPLES["four_tokens"]
    steps = w.attention_steps(tuple(map(tuple, q)), ex.k, ex.v, scaled)
    s = np.array(q) @ np.array(ex.k).T
    a = _softmax_rows(s / (math.sqrt(2) if scaled else 1.0))
    np.testing.assert_allclose(steps["weights"].drop(columns="row sum").to_numpy(), a, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(steps["weights"]["row sum"], 1.0, atol=1e-14)
    np.testing.assert_allclose(steps["output"].to_numpy(), a @ np.array(ex.v), atol=1e-14)
    # the values are the corners of the unit square: every output lies in it
    assert ((steps["output"].to_numpy() >= -1e-15) & (steps["output"].to_numpy() <= 1 + 1e-15)).all()


def test_token_detail_and_contributions_add_up():
    ex = w.EXAMPLES["four_tokens"]
    steps = w.attention_steps(ex.q, ex.k, ex.v)
    d = w.token_detail(ex.q, ex.k, ex.v, steps, 2)
    np.testing.assert_allclose(d["exp_shifted"] / d["denominator"], d["weights"], rtol=1e-14)
    np.testing.assert_array_equal(d["scores"], [1, 1, -1, -1])
    parts = w.contributions(steps["weights"], ex.v, 2)
    np.testing.assert_allclose(parts.groupby("dim").value.sum().to_numpy(), steps["output"].iloc[1], atol=1e-15)
    cells = w.weights_long(steps["weights"])
    assert len(cells) == 16 and cells.groupby("query").weight.sum().round(12).eq(1).all()
    with pytest.raises(ValueError, match="token"):
        w.token_detail(ex.q, ex.k, ex.v, steps, 5)


def test_parse_matrix_accepts_numbers_and_names_the_bad_cell():
    frame = pd.DataFrame([[1, "2.5"], [3, 4]])
    assert w.parse_matrix("Q", frame, (2, 2)) == ((1.0, 2.5), (3.0, 4.0))
    for bad, what in (
        ([[1, None], [3, 4]], r"row 1, column 2 .*\(it is empty\)"),
        ([[1, 2], [float("nan"), 4]], r"row 2, column 1 .*\(it is empty\)"),
        ([[1, 2], ["abc", 4]], "row 2, column 1"),
        ([[1, 2], [3, float("inf")]], "row 2, column 2"),
        ([[1, 2], [3, 1e7]], "row 2, column 2"),
    ):
        with pytest.raises(ValueError, match=what):
            w.parse_matrix("K", pd.DataFrame(bad), (2, 2))
    with pytest.raises(ValueError, match="2 rows and 3 columns"):
        w.parse_matrix("V", pd.DataFrame([[1, 2], [3, 4]]), (2, 3))


entries = st.floats(-w.MAX_ABS_ENTRY, w.MAX_ABS_ENTRY, allow_nan=False, allow_infinity=False)


@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(entries, min_size=2, max_size=2), min_size=n, max_size=n)))
def test_matrix_text_round_trips_exactly(rows):
    m = tuple(tuple(r) for r in rows)
    text = w.matrix_text(m)
    assert w.matrix_from_text(text, (len(m), 2)) == m  # shortest repr: every float comes back bit for bit
    assert all(c in "0123456789.,;-+e" for c in text)


def test_matrix_text_is_short_and_the_worst_case_fits_a_url_value():
    assert w.matrix_text(w.EXAMPLES["two_tokens"].q) == "1,0,1;0,2,1"
    assert w.matrix_text(((0.1, -2.5), (1e-05, -0.0))) == "0.1,-2.5;1e-05,0"
    worst = max((-2.2250738585072014e-308, -0.00012345678901234567, -123456.78901234567), key=lambda x: len(repr(x)))
    n, d = max((len(e.q), max(len(e.q[0]), len(e.v[0]))) for e in w.EXAMPLES.values())
    assert len(w.matrix_text(((worst,) * d,) * n)) <= 200  # explorer.ui.state.MAX_URL_VALUE


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1,0,1;0,2", "row 2 must hold 3"),
        ("1,0,1", "2 rows"),
        ("1,0,1;0,2,1;3,3,3", "2 rows"),
        ("1,0,1;0,2,nan", "plain decimal"),
        ("1,0,1;0,2,inf", "plain decimal"),
        ("1,0,1;0,2,1_0", "plain decimal"),
        ("1,0,1;0,2, 1", "plain decimal"),
        ("1,0,1;0,2,+1", "plain decimal"),
        ("1,0,1;0,2,0x10", "plain decimal"),
        ("1,0,1;0,2,", "plain decimal"),
        ("1,0,1;0,2,1e7", "between"),
        ("1,0,1;0,2,1e999", "between"),
        ("", "2 rows"),
    ],
)
def test_matrix_from_text_is_strict(text, why):
    with pytest.raises(ValueError, match=why):
        w.matrix_from_text(text, (2, 3))


def test_backward_steps_by_hand_for_the_two_token_example():
    ex = w.EXAMPLES["two_tokens"]
    b = w.backward_steps(ex.q, ex.k, ex.v, True, 1)  # L = sum of z_1
    a11 = 1 / (1 + math.exp(1 / math.sqrt(3)))  # softmax([s, 2s]) at s = 1/sqrt(3)
    # dL/dV = A^T dL/dO: value j collects alpha_1j in every dimension
    np.testing.assert_allclose(b["dv"].to_numpy(), [[a11] * 3, [1 - a11] * 3], rtol=1e-14)
    # dL/dA = dL/dO V^T: row 1 holds the sums of v_1 = (1, 2, 3) and v_2 = (4, 5, 6); row 2 is 0
    np.testing.assert_array_equal(b["dweights"].to_numpy(), [[6, 15], [0, 0]])
    # dL/dS = A * (dA - rowsum(dA * A)): a11 (6 - (6 a11 + 15 (1 - a11))) = -9 a11 (1 - a11), and its negative
    ds = 9 * a11 * (1 - a11)
    np.testing.assert_allclose(b["dscores"].to_numpy(), [[-ds, ds], [0, 0]], rtol=1e-13, atol=1e-15)
    # dL/dQ = dS K / sqrt(3): k_2 - k_1 = (-1, 0, 2); only query 1 gets a gradient, both keys do
    unit = ds / math.sqrt(3)
    np.testing.assert_allclose(b["dq"].to_numpy(), [[-unit, 0, 2 * unit], [0, 0, 0]], atol=1e-14)
    np.testing.assert_allclose(b["dk"].to_numpy(), [[-unit, 0, -unit], [unit, 0, unit]], atol=1e-14)  # q_1 = (1, 0, 1)
    assert (b["errors"].max_error < 1e-14).all() and list(b["errors"].gradient) == list(w.GRADIENTS)


@given(st.lists(st.lists(small, min_size=2, max_size=2), min_size=4, max_size=4), st.booleans(), st.integers(1, 4))
def test_backward_steps_match_autograd_for_any_queries(q, scaled, token):
    ex = w.EXAMPLES["four_tokens"]
    b = w.backward_steps(tuple(map(tuple, q)), ex.k, ex.v, scaled, token)
    assert (b["errors"].max_error < 1e-12).all()
    others = [i for i in range(4) if i != token - 1]
    assert (b["dq"].iloc[others] == 0).all().all()  # the loss of token i reaches only query i
    np.testing.assert_allclose(b["dscores"].sum(axis=1), 0, atol=1e-12)  # rows of dL/dS sum to 0
    with pytest.raises(ValueError, match="token"):
        w.backward_steps(ex.q, ex.k, ex.v, scaled, 5)
