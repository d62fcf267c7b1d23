import math

import pytest
import torch
import torch.nn.functional as F
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import causal_mask, masked_softmax, naive_attention

F64 = torch.float64


@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    n_q=st.integers(1, 9),
    n_k=st.integers(1, 9),
    d_k=st.integers(1, 8),
    d_v=st.integers(1, 8),
    scale=st.one_of(st.none(), st.floats(0.05, 4.0)),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_torch_sdpa(batch, n_q, n_k, d_k, d_v, scale, masked, seed):
    q, k, v = (
        rand(*batch, n_q, d_k, seed=seed),
        rand(*batch, n_k, d_k, seed=seed + 1),
        rand(*batch, n_k, d_v, seed=seed + 2),
    )
    mask = None
    if masked:  # every row keeps key 0 so SDPA (which gives NaN for empty rows) is comparable
        mask = torch.rand(*batch, n_q, n_k, generator=torch.Generator().manual_seed(seed)) > 0.5
        mask[..., 0] = True
    out, weights = naive_attention(q, k, v, mask, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    assert out.shape == (*batch, n_q, d_v) and weights.shape == (*batch, n_q, n_k)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*batch, n_q, dtype=F64))


def test_temperature_divides_logits():
    q, k, v = rand(2, 5, 4), rand(2, 7, 4, seed=1), rand(2, 7, 3, seed=2)
    out, _ = naive_attention(q, k, v, temperature=2.5)
    ref = F.scaled_dot_product_attention(q, k, v, scale=1 / (2.5 * math.sqrt(4)))
    torch.testing.assert_close(out, ref)


def test_mask_broadcasts_over_heads_and_causal_matches_is_causal():
    q, k, v = rand(2, 3, 6, 4), rand(2, 3, 6, 4, seed=1), rand(2, 3, 6, 5, seed=2)
    out, w = naive_attention(q, k, v, causal_mask(6))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.all(w.triu(1) == 0)


def test_masked_logits_get_exactly_zero_weight_and_gradient():
    q, k = rand(1, 4, 8), rand(1, 6, 8, seed=1)
    allowed = torch.tensor([1, 1, 0, 1, 0, 0], dtype=torch.bool)
    logits = (q @ k.transpose(-2, -1)).requires_grad_(True)
    w = masked_softmax(logits, allowed.expand(4, 6))
    (w * rand(1, 4, 6, seed=3)).sum().backward()
    assert torch.all(w[..., ~allowed] == 0)
    assert torch.all(logits.grad[..., ~allowed] == 0)
    assert torch.all(logits.grad[..., allowed] != 0)
    # Through the whole function: a key hidden from every query receives exactly zero gradient.
    k.requires_grad_(True)
    v = rand(1, 6, 3, seed=2, requires_grad=True)
    out, _ = naive_attention(q, k, v, allowed)
    (out * rand(1, 4, 3, seed=4)).sum().backward()
    assert torch.all(k.grad[:, ~allowed] == 0) and torch.all(v.grad[:, ~allowed] == 0)
    assert torch.all(k.grad[:, allowed].abs().sum(-1) > 0)


def test_fully_masked_rows_are_zero_without_nan_forward_or_backward():
    q = rand(2, 3, 4, requires_grad=True)
    k, v = rand(2, 5, 4, seed=1, requires_grad=True), rand(2, 5, 2, seed=2, requires_grad=True)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[0, 1] = False
    mask[1] = False
    out, w = naive_attention(q, k, v, mask)
    assert torch.all(out[0, 1] == 0) and torch.all(out[1] == 0) and torch.all(w[1] == 0)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[1] == 0) and torch.all(q.grad[0, 1] == 0)


def test_gradcheck():
    q, k, v = (
        rand(2, 3, 4, requires_grad=True),
        rand(2, 5, 4, seed=1, requires_grad=True),
        rand(2, 5, 3, seed=2, requires_grad=True),
    )
    mask = torch.rand(2, 3, 5, generator=torch.Generator().manual_seed(0)) > 0.4
    mask[0, 0] = False  # one fully masked row
    assert torch.autograd.gradcheck(lambda a, b, c: naive_attention(a, b, c, mask, temperature=0.7)[0], (q, k, v))


def test_half_precision_runs_softmax_in_fp32():
    q, k, v = (
        rand(2, 9, 16, dtype=torch.float32),
        rand(2, 9, 16, seed=1, dtype=torch.float32),
        rand(2, 9, 16, seed=2, dtype=torch.float32),
    )
    ref, _ = naive_attention(q, k, v)
    out, w = naive_attention(q.half(), k.half(), v.half())
    assert out.dtype == torch.float16 and w.dtype == torch.float16
    torch.testing.assert_close(out.float(), ref, atol=5e-3, rtol=5e-3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(q=rand(4)), "q must have at least 2"),
        (dict(k=rand(5, 3)), "k must have the same last dimension"),
        (dict(v=rand(4, 2)), "v must have n_k=5"),
        (dict(q=rand(3, 0), k=rand(5, 0)), "d_k >= 1"),
        (dict(q=rand(0, 4)), "n_q, n_k >= 1"),
        (dict(q=torch.ones(3, 4, dtype=torch.long)), "floating-point"),
        (dict(q=rand(3, 4).float()), "one dtype"),
        (dict(q=rand(2, 3, 4), k=rand(3, 5, 4), v=rand(3, 5, 2)), "must broadcast"),
        (dict(temperature=0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(scale=0.0), "scale"),
        (dict(scale=float("nan")), "scale"),
        (dict(mask=torch.ones(3, 5)), "bool tensor"),
        (dict(mask=torch.ones(4, 5, dtype=torch.bool)), "must broadcast to the logits"),
        (dict(mask=[[True]]), "bool tensor"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = dict(q=rand(3, 4), k=rand(5, 4, seed=1), v=rand(5, 2, seed=2))
    args.update(kwargs)
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
    with pytest.raises(ValueError, match=match):
        naive_attention(q, k, v, **args)


def test_masking_renormalises_the_unmasked_weights():
    """softmax with padding hidden = the old weights of the real keys divided by their sum."""
    from attn_core import renormalise

    logits = torch.tensor([[0.3, 0.2, 0.4, 0.1, 0.0]], dtype=torch.float64)
    keep = torch.tensor([True, True, True, False, False])
    masked = masked_softmax(logits, keep)
    old = masked_softmax(logits)
    torch.testing.assert_close(masked, renormalise(old, keep), rtol=1e-15, atol=1e-16)
    torch.testing.assert_close(masked[0, :3], old[0, :3] / old[0, :3].sum())
    true = torch.tensor([0.3322, 0.3006, 0.3672], dtype=torch.float64)  # not the notes' [0.33, 0.22, 0.44]
    torch.testing.assert_close(masked[0, :3], true, atol=1e-4, rtol=0)
    assert (renormalise(old, torch.zeros(5, dtype=torch.bool)) == 0).all()  # nothing kept: zeros, no NaN
    with pytest.raises(ValueError, match=">= 0"):
        renormalise(-old, keep)
    with pytest.raises(ValueError, match="bool"):
        renormalise(old, keep.float())
