import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import (
    causal_mask,
    equivariance_error,
    make_permutation,
    naive_attention,
    parse_permutation,
    permutation_matrix,
    sinusoidal_encoding,
    tiled_attention,
)


@given(n=st.integers(2, 12), seed=st.integers(0, 1000))
def test_attention_is_permutation_equivariant(n, seed):
    q, k, v = rand(2, n, 4, seed=seed), rand(2, n, 4, seed=seed + 1), rand(2, n, 3, seed=seed + 2)
    perm = make_permutation("random", n, seed=seed)
    assert equivariance_error(naive_attention, q, k, v, perm) < 1e-12
    tiled = lambda a, b, c: tiled_attention(a, b, c, block_q=3, block_k=5)  # noqa: E731
    assert equivariance_error(tiled, q, k, v, perm) < 1e-12


def test_weights_permute_as_p_a_p_transpose():
    x = rand(6, 4)
    perm = make_permutation("reverse", 6)
    p = permutation_matrix(perm)
    _, a = naive_attention(x, x, x)
    _, a_perm = naive_attention(p @ x, p @ x, p @ x)
    torch.testing.assert_close(a_perm, p @ a @ p.T)


def test_causal_mask_and_positions_break_equivariance():
    n = 8
    x = rand(n, 8)
    perm = make_permutation("reverse", n)
    causal = lambda a, b, c: naive_attention(a, b, c, causal_mask(n))  # noqa: E731
    assert equivariance_error(causal, x, x, x, perm) > 1e-2
    pe = sinusoidal_encoding(n, 8)
    with_pe = lambda a, b, c: naive_attention(a + pe, b + pe, c + pe)  # noqa: E731
    assert equivariance_error(with_pe, x, x, x, perm) > 1e-2
    assert equivariance_error(causal, x, x, x, make_permutation("identity", n)) == 0


def test_permutation_kinds_and_matrix():
    assert make_permutation("reverse", 4).tolist() == [3, 2, 1, 0]
    assert make_permutation("cyclic", 5, shift=2).tolist() == [2, 3, 4, 0, 1]
    assert sorted(make_permutation("random", 9, seed=3).tolist()) == list(range(9))
    p = permutation_matrix([2, 0, 1])
    assert torch.equal(
        p @ torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64), torch.tensor([30.0, 10.0, 20.0], dtype=torch.float64)
    )


def test_parse_permutation_is_strict():
    assert parse_permutation(" 2, 0,3 ,1 ", 4).tolist() == [2, 0, 3, 1]
    for bad in ["2,0,3", "1,1,0,2", "2;0;3;1", "__import__('os')", "-1,0,1,2", "", "0,1,2,4"]:
        with pytest.raises(ValueError, match="perm"):
            parse_permutation(bad, 4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind"):
        make_permutation("shuffle", 3)
    with pytest.raises(ValueError, match="share the sequence length"):
        equivariance_error(naive_attention, rand(3, 2), rand(4, 2), rand(4, 2), [0, 1, 2])
