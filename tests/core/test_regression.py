import pytest
import torch
from helpers import rand

from attn_core import AdditiveAttention, kernel_weights, nadaraya_watson, naive_attention, padding_mask, parameter_count


def test_exponential_kernel_regression_is_softmax_attention():
    q, k, v = rand(2, 5, 6), rand(2, 9, 6, seed=1), rand(2, 9, 3, seed=2)
    pred, w = nadaraya_watson(q, k, v)
    ref, ref_w = naive_attention(q, k, v)
    torch.testing.assert_close(pred, ref)
    torch.testing.assert_close(w, ref_w)


def test_gaussian_kernel_weights_by_distance():
    keys = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    w = kernel_weights(torch.tensor([[0.9]], dtype=torch.float64), keys, kernel="gaussian", bandwidth=0.5)
    raw = torch.exp(-((0.9 - keys[:, 0]) ** 2) / (2 * 0.25))
    torch.testing.assert_close(w[0], raw / raw.sum())


def test_additive_attention_shapes_mask_and_parameters():
    torch.manual_seed(0)
    att = AdditiveAttention(4, 6, 8).double()
    q, k, v = rand(2, 3, 4), rand(2, 5, 6, seed=1), rand(2, 5, 2, seed=2)
    out, w = att(q, k, v, padding_mask([5, 2], 5))
    assert out.shape == (2, 3, 2) and torch.all(w[1, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, dtype=torch.float64))
    assert parameter_count(att) == 4 * 8 + 6 * 8 + 8
    # tanh is odd: flipping both q and k flips the score; a dot product is even in (q, k).
    torch.testing.assert_close(att.scores(-q, -k), -att.scores(q, k))


def test_bad_arguments():
    with pytest.raises(ValueError, match="kernel"):
        kernel_weights(rand(2, 3), rand(2, 3), kernel="box")
    with pytest.raises(ValueError, match="bandwidth"):
        kernel_weights(rand(2, 3), rand(2, 3), kernel="gaussian", bandwidth=0)
    with pytest.raises(ValueError, match="q must have shape"):
        AdditiveAttention(4, 4, 4)(rand(2, 3), rand(2, 4), rand(2, 1))
