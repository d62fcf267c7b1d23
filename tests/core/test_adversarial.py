"""Adversarial inputs: every call gives a defined result or a clear error, never a silent wrong answer."""

import math

import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import masked_softmax, naive_attention, tiled_attention

PATHS = {
    "naive": lambda q, k, v, **kw: naive_attention(q, k, v, **kw)[0],
    "tiled": lambda q, k, v, **kw: tiled_attention(q, k, v, block_q=4, block_k=4, **kw),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", ["q", "k", "v"])
def test_non_finite_inputs_are_refused_by_name(path, bad, where):
    args = {"q": rand(5, 3), "k": rand(6, 3, seed=1), "v": rand(6, 2, seed=2)}
    args[where][2, 1] = bad
    with pytest.raises(ValueError, match=f"^{where} must contain only finite numbers"):
        PATHS[path](**args)


@pytest.mark.parametrize("path", PATHS)
def test_logits_that_would_overflow_float32_are_refused(path):
    q = torch.full((4, 8), 1e20)  # q.k = 8e40 > 3.4e38
    with pytest.raises(ValueError, match="overflow"):
        PATHS[path](q, q, q)
    with pytest.raises(ValueError, match="overflow"):  # a tiny temperature overflows the logits too
        x = rand(4, 8, dtype=torch.float32)
        PATHS[path](x, x, x, temperature=1e-38)


@pytest.mark.parametrize("path", PATHS)
def test_half_precision_at_its_largest_values_stays_exact(path):
    # fp16 holds up to 65504; q.k reaches 4e9 * d, fine in the fp32 softmax the library uses.
    q = (rand(6, 4, dtype=torch.float32) * 6e4).clamp(-65000, 65000)
    k = (rand(7, 4, seed=1, dtype=torch.float32) * 6e4).clamp(-65000, 65000)
    v = rand(7, 3, seed=2, dtype=torch.float32)
    out = PATHS[path](q.half(), k.half(), v.half())
    ref, _ = naive_attention(q.half().double(), k.half().double(), v.half().double())
    assert out.dtype == torch.float16 and torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), ref, atol=2e-3 * float(v.abs().max()), rtol=0)


@pytest.mark.parametrize("path", PATHS)
def test_zero_variance_inputs_give_uniform_weights(path):
    q, k = torch.zeros(3, 4, dtype=torch.float64), torch.zeros(5, 4, dtype=torch.float64)
    v = rand(5, 2)
    torch.testing.assert_close(PATHS[path](q, k, v), v.mean(0).expand(3, 2))


@pytest.mark.parametrize("path", PATHS)
def test_empty_sequences_are_refused(path):
    with pytest.raises(ValueError, match="at least one position"):
        PATHS[path](rand(0, 3), rand(4, 3), rand(4, 3))
    with pytest.raises(ValueError, match="at least one position"):
        PATHS[path](rand(2, 3), rand(0, 3), rand(0, 3))


def test_masked_softmax_refuses_nan_and_plus_infinity_but_takes_minus_infinity():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="logits must not contain NaN"):
            masked_softmax(torch.tensor([0.0, bad]))
    torch.testing.assert_close(masked_softmax(torch.tensor([0.0, -float("inf")])), torch.tensor([1.0, 0.0]))


@given(
    exponent=st.integers(-30, 30),
    n=st.integers(1, 9),
    d=st.integers(1, 6),
    temperature=st.sampled_from([1e-3, 1.0, 1e3]),
    seed=st.integers(0, 1000),
)
def test_fp32_at_any_magnitude_is_right_or_refused(exponent, n, d, temperature, seed):
    """Scaled by 10^e, fp32 attention either raises a clear error or agrees with an fp64 reference."""
    scale = 10.0**exponent
    q = (rand(n, d, seed=seed) * scale).float()
    k = (rand(n + 1, d, seed=seed + 1) * scale).float()
    v = rand(n + 1, 2, seed=seed + 2).float()
    for path in PATHS.values():
        try:
            out = path(q, k, v, temperature=temperature)
        except ValueError as err:
            assert "overflow" in str(err)
            norms = float(q.double().norm(dim=-1).max()) * float(k.double().norm(dim=-1).max())
            assert norms * max(1.0, 1 / math.sqrt(d) / temperature) > 3e38  # refused only near the limit
            continue
        ref = path(q.double(), k.double(), v.double(), temperature=temperature)
        assert torch.isfinite(out).all()
        # fp32 logits carry a relative error ~ d * eps32 * |logit|; through softmax the weights move by
        # about that much times the logit range, so compare with a tolerance that grows with it.
        logit_range = float((q.double() @ k.double().T).abs().max()) / math.sqrt(d) / temperature
        tol = 1e-5 + 8 * d * 1.2e-7 * logit_range * float(v.abs().max())
        assert float((out.double() - ref).abs().max()) <= tol


def test_finite_inputs_whose_sum_overflows_are_still_accepted():
    from attn_core._checks import check_finite

    big = torch.full((4, 8), 3e38)  # every entry finite, their sum is not: the exact scan decides
    assert check_finite("q", big) is big
    big[1, 2] = float("nan")
    with pytest.raises(ValueError, match="^q must contain only finite numbers"):
        check_finite("q", big)


@pytest.mark.parametrize("transposed", [False, True])
def test_the_overflow_check_reads_large_inputs_a_slice_at_a_time(transposed):
    """The float64 bound is exact (the largest row norm, any layout) and never holds a float64 copy of q or k:
    the bench's heaviest live run (n 8192, d 128, 8 heads) held 128 MiB of such copies, more than tiled's
    working memory."""
    from attn_core._checks import _NORM_CHUNK_ELEMENTS, _largest_row_norm, check_logit_range
    from attn_core.bench import LiveTensorBytes

    q, k = (rand(2, 4, 8192, 64, seed=s, dtype=torch.float32) for s in (0, 1))  # 16 MiB each
    if transposed:
        q, k = (x.transpose(-1, -2).contiguous().transpose(-1, -2) for x in (q, k))
    q[1, 2, 8000] *= 7  # one long row far from the first slice
    assert _largest_row_norm(q) == float(q.double().norm(dim=-1).amax())
    with LiveTensorBytes() as counter:
        check_logit_range(q, k, 1 / 8, torch.float32)
    slice_bytes = 8 * _NORM_CHUNK_ELEMENTS
    assert counter.peak <= slice_bytes + 2 * 2**20 < q.nbytes  # one slice (+ its norms), not a copy of q
