import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import asymmetry, masked_softmax, projected_scores


@given(st.integers(2, 8), st.integers(1, 6), st.integers(1, 6), st.integers(0, 100))
def test_a_shared_projection_gives_symmetric_scores_and_separate_ones_do_not(n, d_model, d_k, seed):
    x, w_q, w_k = rand(n, d_model, seed=seed), rand(d_model, d_k, seed=seed + 1), rand(d_model, d_k, seed=seed + 2)
    shared = projected_scores(x, w_q)
    assert asymmetry(shared) == 0.0  # (XW)(XW)^T: entry ij and ji are the same sum, term for term
    separate = projected_scores(x, w_q, w_k)
    # X (W_q W_k^T) X^T: the same matrix as the two projections multiplied out
    torch.testing.assert_close(separate, x @ (w_q @ w_k.T) @ x.T / d_k**0.5)
    torch.testing.assert_close(separate.T, projected_scores(x, w_k, w_q))  # K Q^T is S^T


def test_separate_projections_make_attention_one_sided():
    x, w_q, w_k = rand(6, 8, seed=1), rand(8, 4, seed=2), rand(8, 4, seed=3)
    s = projected_scores(x, w_q, w_k)
    assert asymmetry(s) > 0.1
    a, a_t = masked_softmax(s), masked_softmax(s.T)  # softmax(QK^T) against softmax(KQ^T)
    assert (a - a.T).abs().max() > 0.01 and (a - a_t).abs().max() > 0.01


def test_bad_projections_are_refused():
    x = rand(4, 3)
    with pytest.raises(ValueError, match="w_q must have shape"):
        projected_scores(x, rand(2, 3))
    with pytest.raises(ValueError, match="w_k must have"):
        projected_scores(x, rand(3, 2), rand(3, 4))
    with pytest.raises(ValueError, match="dtype"):
        projected_scores(x, rand(3, 2, dtype=torch.float32))
    with pytest.raises(ValueError, match="square"):
        asymmetry(rand(3, 4))
