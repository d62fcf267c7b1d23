import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import frequencies, sinusoidal_encoding
from explorer.tables import positional as tables

PERIODS = st.lists(st.integers(2, 16), min_size=1, max_size=4, unique=True).map(tuple)


def test_encoding_table_holds_the_encoding_and_thins_big_matrices():
    small = tables.encoding_table(20, 8, 10000)
    pe = sinusoidal_encoding(20, 8)
    assert len(small) == 160
    np.testing.assert_array_equal(small.value, pe.reshape(-1).numpy())
    big = tables.encoding_table(128, 128, 10000)
    assert len(big) <= tables.MAX_CELLS
    rows = big[big.position == 126]  # stride 2 keeps the even positions
    np.testing.assert_array_equal(rows.value, sinusoidal_encoding(128, 128)[126].numpy())


@given(n=st.integers(2, 96), half=st.integers(1, 32), base=st.sampled_from([100.0, 1000.0, 10000.0]))
def test_dot_products_collapse_onto_the_cosine_sum(n, half, base):
    _, by_offset, spread = tables.gram_by_offset(n, 2 * half, base)
    # each dot product sums d/2 <= 32 cosines of angles up to n w_0 = 96 rad: rounding stays below 1e-12
    assert spread < 1e-12
    np.testing.assert_allclose(by_offset["mean"], by_offset.theory, atol=1e-12)
    assert (by_offset.pairs == n - by_offset.offset.abs()).all()
    assert by_offset.offset.tolist() == list(range(-(n - 1), n))


def test_gram_cells_are_thinned_but_keep_their_true_positions():
    cells, _, _ = tables.gram_by_offset(128, 16, 10000)
    assert len(cells) <= tables.MAX_CELLS and cells.i.max() == 126 and cells.j.max() == 126
    pe = sinusoidal_encoding(128, 16)
    row = cells[(cells.i == 6) & (cells.j == 40)]["dot"].item()
    assert row == pytest.approx(float(pe[6] @ pe[40]), abs=1e-12)


@given(pos=st.integers(0, 200), k=st.integers(-32, 32), half=st.integers(1, 16), data=st.data())
def test_shift_is_one_rotation_per_frequency(pos, k, half, data):
    d = 2 * half
    freq = data.draw(st.integers(0, half - 1))
    check = tables.shift_check(pos, k, d, 10000, 64, freq)
    # angles up to (200 + 32) rad: sin/cos of the rounded argument differ by ~232 * 2.2e-16 ~ 5e-14
    assert check["error_at_pos"] < 1e-12 and check["error_all"] < 1e-12
    angle = k * float(frequencies(d)[freq])
    assert check["angle"] == pytest.approx(angle, abs=1e-15)
    c, s = math.cos(angle), math.sin(angle)
    np.testing.assert_allclose(check["block"], [[c, s], [-s, c]], atol=1e-15)


def test_shift_matrix_table_keeps_only_the_block_diagonal():
    m_k = tables.shift_check(3, 5, 16, 10000, 32, 0)["m_k"]
    assert len(m_k) == 2 * 16  # cos and sin of 5 w_i are never exactly 0
    assert ((m_k.row // 2) == (m_k.col // 2)).all()


def test_rotation_circle_turns_pos_by_k_w():
    df = tables.rotation_circle(16, 8, 10000, 1, 10, 7).set_index("role")
    w = float(frequencies(8)[1])
    turn = math.atan2(df.loc["pos + k", "sin"], df.loc["pos + k", "cos"]) - math.atan2(
        df.loc["pos", "sin"], df.loc["pos", "cos"]
    )
    assert math.remainder(turn - 7 * w, 2 * math.pi) == pytest.approx(0, abs=1e-12)
    assert df.loc["position"].position.tolist() == list(range(16))


@given(periods=PERIODS)
def test_first_collision_found_by_comparing_codes_is_the_lcm(periods):
    assert tables.first_collision(periods) == tables.collision_period(periods) == math.lcm(*periods)
    assert tables.pairwise_coprime(periods) == (math.lcm(*periods) == math.prod(periods))


def test_collision_examples_and_the_search_limit():
    assert tables.first_collision((8,)) == 8
    assert tables.first_collision((4, 6)) == 12  # not 24: the periods share the factor 2
    assert tables.first_collision((4, 5)) == 20
    assert tables.first_collision((5, 7), limit=34) is None
    largest = max(math.lcm(*c) for r in range(1, 5) for c in itertools.combinations(range(2, 17), r))
    assert largest <= tables.SEARCH_LIMIT  # every choice the page offers is found by the search


def test_aliasing_zeros_fall_on_multiples_of_the_periods():
    df = tables.aliasing_table((4, 6), 40)
    one = df[df.code.str.startswith("one period")]
    both = df[df.code == "all periods"]
    assert one[one.distance < 1e-9].position.tolist() == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36]
    assert both[both.distance < 1e-9].position.tolist() == [0, 12, 24, 36]
    # the nearest miss of one period T is 2 sin(pi / T): far above the collision tolerance
    assert one[one.distance > 1e-9].distance.min() == pytest.approx(2 * math.sin(math.pi / 4))


def test_positions_break_equivariance_and_nothing_else_does():
    sweep = tables.equivariance_sweep(16, 8, 10000, "random", (0.0, 0.5, 1.0), seed=3)
    errors = dict(zip(sweep.amplitude, sweep.error, strict=True))
    assert errors[0.0] < 1e-13  # fp64 attention of 16 tokens: the permuted run differs only by rounding
    assert errors[0.5] > 1e-3 and errors[1.0] > 1e-3
    same = tables.equivariance_sweep(16, 8, 10000, "identity", (1.0,), seed=3)
    assert same.error.item() == 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tables.first_collision(()), "periods"),
        (lambda: tables.aliasing_table((), 10), "periods"),
        (lambda: tables.collision_period((4, 0)), "period"),
        (lambda: tables.shift_check(-1, 2, 8, 10000, 8, 0), "pos"),
        (lambda: tables.shift_check(1, 2, 8, 10000, 8, 4), "freq"),
        (lambda: tables.rotation_circle(8, 8, 10000, 9, 0, 1), "freq"),
        (lambda: tables.encoding_table(8, 7, 10000), "even"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_encoding_values_are_float64():
    assert tables.encoding_table(4, 4, 100).value.dtype == np.float64
    assert torch.equal(
        torch.tensor(tables.encoding_table(4, 4, 100).value.to_numpy()), sinusoidal_encoding(4, 4, base=100).reshape(-1)
    )


@pytest.mark.parametrize("periods", [(4, 6), (11, 13, 15, 16), (2,)])
def test_the_aliasing_window_shows_the_collision_twice_within_its_cap(periods):
    window, lcm = tables.aliasing_window(periods), tables.collision_period(periods)
    assert window == tables.ALIAS_WINDOW or window > 2 * lcm  # the dashed line and its repeat on the chart
    assert 25 <= window <= tables.ALIAS_WINDOW and window > 3 * periods[0]


def test_the_sweeps_errors_by_amplitude_are_the_sweeps_rows():
    from explorer.ui.cache import check

    amplitudes = (0.0, 0.5, 1.0)
    with check():  # rebuilt on a hit and compared
        for _ in range(2):
            errors = tables.sweep_errors(16, 8, 10000, "random", amplitudes, 0)
    sweep = tables.equivariance_sweep(16, 8, 10000, "random", amplitudes, 0)
    assert list(errors) == list(amplitudes) and list(errors.values()) == sweep.error.tolist()
