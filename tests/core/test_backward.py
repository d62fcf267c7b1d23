import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import attention_backward, attention_backward_autograd, causal_mask, naive_attention, padding_mask


def _inputs(n_q=5, n_k=6, d_k=4, d_v=3, batch=(2,), seed=0, dtype=torch.float64):
    q = rand(*batch, n_q, d_k, seed=seed, dtype=dtype)
    k = rand(*batch, n_k, d_k, seed=seed + 1, dtype=dtype)
    v = rand(*batch, n_k, d_v, seed=seed + 2, dtype=dtype)
    g = rand(*batch, n_q, d_v, seed=seed + 3, dtype=dtype)
    return q, k, v, g


@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(1, 4),
    st.sampled_from([None, 0.5, 2.0]),
    st.sampled_from([0.3, 1.0, 4.0]),
    st.integers(0, 50),
)
def test_hand_gradients_match_autograd(n_q, n_k, d_k, d_v, scale, temperature, seed):
    q, k, v, g = _inputs(n_q, n_k, d_k, d_v, seed=seed)
    hand = attention_backward(q, k, v, g, scale=scale, temperature=temperature)
    auto = attention_backward_autograd(q, k, v, g, scale=scale, temperature=temperature)
    for name, a, b in zip(hand._fields, hand, auto, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=name)


def test_hand_gradients_match_autograd_through_naive_attention():
    """An independent reference: autograd through the public forward pass, not the helper's own copy."""
    q, k, v, g = _inputs()
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out, _ = naive_attention(*leaves, causal_mask(5, 6))
    out.backward(g)
    hand = attention_backward(q, k, v, g, causal_mask(5, 6))
    for a, leaf in zip((hand.dq, hand.dk, hand.dv), leaves, strict=True):
        torch.testing.assert_close(a, leaf.grad, rtol=1e-12, atol=1e-13)


def test_the_formulas_one_by_one():
    q, k, v, g = _inputs(batch=())
    h = attention_backward(q, k, v, g)
    _, a = naive_attention(q, k, v)
    torch.testing.assert_close(h.dv, a.T @ g)  # dL/dV = A^T dL/dO
    torch.testing.assert_close(h.dweights, g @ v.T)  # dL/dA = dL/dO V^T
    torch.testing.assert_close(h.dq, h.dscores @ k / 2.0)  # the scale 1/sqrt(4) = 1/2 is in dQ
    torch.testing.assert_close(h.dk, h.dscores.T @ q / 2.0)
    # every row of dL/dS sums to 0: softmax ignores a shift of its row
    torch.testing.assert_close(h.dscores.sum(-1), torch.zeros(5, dtype=torch.float64), atol=1e-15, rtol=0)


def test_masked_and_fully_masked_rows_get_zero_gradient_and_no_nan():
    q, k, v, g = _inputs(n_q=3, n_k=4, batch=(2,))
    mask = padding_mask([2, 0], 4)  # sequence 1 has no real key: every row fully masked
    hand = attention_backward(q, k, v, g, mask)
    auto = attention_backward_autograd(q, k, v, g, mask)
    for a, b in zip(hand, auto, strict=True):
        assert not torch.isnan(a).any()
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)
    assert (hand.dscores[0, :, 2:] == 0).all() and (hand.dscores[1] == 0).all()
    assert (hand.dq[1] == 0).all() and (hand.dv[1] == 0).all()


def test_float32_and_bfloat16_inputs():
    q, k, v, g = _inputs(dtype=torch.float32)
    hand, auto = attention_backward(q, k, v, g), attention_backward_autograd(q, k, v, g)
    assert hand.dq.dtype == torch.float32
    torch.testing.assert_close(hand.dq, auto.dq, rtol=1e-5, atol=1e-6)
    half = [x.to(torch.bfloat16) for x in (q, k, v, g)]
    assert attention_backward(*half).dk.dtype == torch.bfloat16


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(g=torch.zeros(2, 5, 4, dtype=torch.float64)), "grad_out must have the output's shape"),
        (dict(g=torch.zeros(2, 5, 3, dtype=torch.float32)), "grad_out must share"),
        (dict(g=torch.full((2, 5, 3), float("nan"), dtype=torch.float64)), "grad_out must contain only finite"),
        (dict(k=torch.zeros(1, 6, 4, dtype=torch.float64)), "leading"),
        (dict(temperature=0.0), "temperature"),
        (dict(scale=-1.0), "scale"),
        (dict(mask=torch.ones(5, 6)), "bool"),
    ],
)
def test_bad_inputs_are_refused(change, match):
    q, k, v, g = _inputs()
    args = dict(q=q, k=k, v=v, g=g, mask=None) | change
    options = {name: args.pop(name) for name in ("scale", "temperature") if name in args}
    with pytest.raises(ValueError, match=match):
        attention_backward(args["q"], args["k"], args["v"], args["g"], args["mask"], **options)
