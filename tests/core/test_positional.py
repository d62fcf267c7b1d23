import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import frequencies, shift_matrix, single_period_encoding, sinusoidal_encoding


def test_values_follow_the_formula():
    pe = sinusoidal_encoding(50, 16)
    w = 10000 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    assert torch.allclose(pe[7, 0::2], torch.sin(7 * w)) and torch.allclose(pe[7, 1::2], torch.cos(7 * w))
    assert pe.shape == (50, 16) and torch.equal(frequencies(16), w)


@given(pos=st.integers(0, 500), k=st.integers(-50, 50), d=st.sampled_from([2, 8, 64]))
def test_shift_is_a_rotation_independent_of_position(pos, k, d):
    m = shift_matrix(k, d)
    pe = sinusoidal_encoding(1, d, start=pos)[0]
    target = sinusoidal_encoding(1, d, start=pos + k)[0]
    torch.testing.assert_close(m @ pe, target)
    torch.testing.assert_close(m @ m.T, torch.eye(d, dtype=torch.float64))  # orthogonal


def test_dot_product_depends_on_offset_only():
    pe = sinusoidal_encoding(64, 32)
    gram = pe @ pe.T
    for offset in (0, 3, 17):
        diag = torch.diagonal(gram, offset)
        torch.testing.assert_close(diag, diag[0].expand_as(diag))


def test_single_period_aliases():
    enc = single_period_encoding(20, 8)
    torch.testing.assert_close(enc[3], enc[11])
    assert not torch.allclose(enc[3], enc[4])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sinusoidal_encoding(4, 7), "even"),
        (lambda: sinusoidal_encoding(0, 4), "n_positions"),
        (lambda: shift_matrix(1.5, 4), "k must be an integer"),
        (lambda: frequencies(8, base=0), "base"),
        (lambda: single_period_encoding(4, -1), "period"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
