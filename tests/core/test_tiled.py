import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

from attn_core import causal_mask, naive_attention, padding_mask, tiled_attention, tiled_attention_trace


@given(
    n_q=st.integers(1, 40),
    n_k=st.integers(1, 40),
    d=st.integers(1, 6),
    block_q=st.integers(1, 17),
    block_k=st.integers(1, 17),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_naive_for_any_lengths_and_blocks(n_q, n_k, d, block_q, block_k, causal, seed):
    q, k, v = rand(2, n_q, d, seed=seed), rand(2, n_k, d, seed=seed + 1), rand(2, n_k, d + 1, seed=seed + 2)
    mask = causal_mask(n_q, n_k) if causal else None
    ref, _ = naive_attention(q, k, v, mask)
    out = tiled_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)


def test_padding_mask_cross_attention_and_temperature():
    q, k, v = rand(3, 2, 21, 8), rand(3, 2, 50, 8, seed=1), rand(3, 2, 50, 5, seed=2)
    mask = padding_mask([50, 17, 0], 50)[:, None]  # (B, 1, 1, n_k); batch 2 has no key at all
    ref, _ = naive_attention(q, k, v, mask, temperature=0.5, scale=0.3)
    out = tiled_attention(q, k, v, mask, temperature=0.5, scale=0.3, block_q=8, block_k=16)
    torch.testing.assert_close(out, ref)
    assert torch.all(out[2] == 0)


def test_mask_and_causal_combine():
    q, k, v = rand(1, 30, 4), rand(1, 30, 4, seed=1), rand(1, 30, 4, seed=2)
    pad = padding_mask([20], 30)
    ref, _ = naive_attention(q, k, v, pad & causal_mask(30))
    torch.testing.assert_close(tiled_attention(q, k, v, pad, causal=True, block_q=7, block_k=9), ref)


def test_float32_and_half_inputs_keep_their_dtype():
    q, k, v = (rand(2, 70, 16, seed=s, dtype=torch.float32) for s in range(3))
    ref, _ = naive_attention(q, k, v)
    torch.testing.assert_close(tiled_attention(q, k, v, block_q=32, block_k=16), ref, rtol=1e-5, atol=1e-6)
    half = tiled_attention(q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), ref, rtol=2e-2, atol=2e-2)


def test_gradcheck_through_the_tiles():
    q = rand(1, 7, 3, requires_grad=True)
    k, v = rand(1, 9, 3, seed=1, requires_grad=True), rand(1, 9, 2, seed=2, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, c: tiled_attention(a, b, c, causal=True, block_q=3, block_k=4), (q, k, v)
    )


def test_fully_masked_rows_have_zero_output_and_finite_gradients():
    q, k, v = (rand(2, 6, 3, seed=s, requires_grad=True) for s in range(3))
    mask = torch.ones(2, 6, 6, dtype=torch.bool)
    mask[1, :3] = False
    out = tiled_attention(q, k, v, mask, block_q=4, block_k=4)
    assert torch.all(out[1, :3] == 0)
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_trace_records_online_softmax_state():
    q, k, v = rand(1, 20, 4), rand(1, 20, 4, seed=1), rand(1, 20, 3, seed=2)
    trace = tiled_attention_trace(q, k, v, causal=True, block_q=8, block_k=6, query_block=1)
    assert (trace.query_start, trace.query_end) == (8, 16)
    assert [(s.key_start, s.key_end, s.skipped) for s in trace.steps] == [
        (0, 6, False),
        (6, 12, False),
        (12, 18, False),
        (18, 20, True),
    ]
    ref, weights = naive_attention(q, k, v, causal_mask(20))
    torch.testing.assert_close(trace.output, ref[:, 8:16])
    logits = (q @ k.transpose(-2, -1) / 2)[:, 8:16].masked_fill(~causal_mask(20)[8:16], float("-inf"))
    for step in trace.steps:
        seen = logits[..., : step.key_end]
        torch.testing.assert_close(step.row_max, seen.amax(-1))  # running max = max over keys seen
        torch.testing.assert_close(step.row_sum, torch.exp(seen - step.row_max[..., None]).sum(-1))
    # the skipped tile changes nothing
    assert torch.equal(trace.steps[-1].accumulator, trace.steps[-2].accumulator)
    assert trace.computed_tiles == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(block_q=0), "block_q"),
        (dict(block_k=2.0), "block_k"),
        (dict(temperature=0.0), "temperature"),
        (dict(mask=torch.ones(5, 5)), "bool"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tiled_attention(rand(5, 4), rand(5, 4), rand(5, 4), **kwargs)


def test_trace_rejects_missing_query_block():
    with pytest.raises(ValueError, match="query_block"):
        tiled_attention_trace(rand(5, 4), rand(5, 4), rand(5, 4), block_q=4, query_block=2)


@given(
    n_q=st.integers(1, 30),
    n_k=st.integers(1, 30),
    block_q=st.integers(1, 12),
    block_k=st.integers(1, 12),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_in_place_path_matches_the_readable_path_with_masks_and_broadcasting(n_q, n_k, block_q, block_k, causal, seed):
    """Without a gradient tiled_attention runs in buffers (_forward_in_place); with one, the readable steps.
    Masks hide whole rows and batches here, and q, k, v and the mask broadcast over different leading dims."""
    q, k, v = rand(2, 1, n_q, 3, seed=seed), rand(1, 3, n_k, 3, seed=seed + 1), rand(2, 3, n_k, 2, seed=seed + 2)
    mask = torch.rand(2, 1, n_q, n_k, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[0, :, : n_q // 2] = False  # rows with no key at all
    kwargs = dict(causal=causal, block_q=block_q, block_k=block_k, temperature=0.7)
    fast = tiled_attention(q, k, v, mask, **kwargs)
    readable = tiled_attention(q.requires_grad_(), k, v, mask, **kwargs).detach()
    ref, _ = naive_attention(q.detach(), k, v, mask & causal_mask(n_q, n_k) if causal else mask, temperature=0.7)
    torch.testing.assert_close(fast, readable, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(fast, ref, rtol=1e-10, atol=1e-12)
    assert torch.all(fast[0, :, : n_q // 2] == 0)


def test_default_blocks_are_used_and_overridable(monkeypatch):
    import attn_core.tiled as tiled

    assert tiled.default_blocks(4096, 4096) == tiled._DEFAULT_BLOCKS["cpu", False]
    assert tiled.default_blocks(4096, 4096, causal=True) == tiled._DEFAULT_BLOCKS["cpu", True]
    assert tiled.default_blocks(3, 5) == (3, 5)  # never larger than the lengths
    seen = []
    real = tiled._forward_in_place
    monkeypatch.setattr(tiled, "_forward_in_place", lambda *a: seen.append(a[-2:]) or real(*a))
    q = rand(1, 700, 8)
    tiled_attention(q, q, q)
    tiled_attention(q, q, q, block_q=32)
    tiled_attention(q, q, q, block_q=32, block_k=48)
    tiled_attention(q, q, q, causal=True)
    bq, bk = tiled.default_blocks(700, 700)
    assert seen == [(bq, bk), (32, bk), (32, 48), tiled.default_blocks(700, 700, causal=True)]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_default_blocks_rejects_bad_lengths(bad):
    from attn_core.tiled import default_blocks

    with pytest.raises(ValueError, match="n_q"):
        default_blocks(bad, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("blocks", [(None, None), (16, 48), (64, 8)])
def test_peak_memory_stays_within_tiled_working_bytes_and_grows_linearly(dtype, blocks):
    from attn_core.bench import LiveTensorBytes
    from attn_core.tiled import default_blocks, tiled_working_bytes

    peaks = {}
    for n in (256, 512):
        q, k, v = (rand(2, 3, n, 16, seed=s, dtype=dtype) for s in range(3))
        bq, bk = default_blocks(n, n, causal=True) if blocks == (None, None) else blocks
        with LiveTensorBytes() as counter:
            tiled_attention(q, k, v, causal=True, block_q=blocks[0], block_k=blocks[1])
        peaks[n] = counter.peak
        assert counter.peak <= tiled_working_bytes(6, n, n, 16, 16, dtype, bq, bk)
    assert peaks[512] <= 2.2 * peaks[256]  # O(n): 4x for an n x n matrix


def test_the_byte_count_and_its_parts_take_one_signature():
    import inspect

    from attn_core.tiled import tiled_working_bytes, tiled_working_parts

    parts, total = (inspect.signature(f) for f in (tiled_working_parts, tiled_working_bytes))
    assert parts.parameters == total.parameters  # written once, on tiled_working_parts
    args = (6, 300, 200, 16, 8, torch.float16, 64, 128)
    p = tiled_working_parts(*args, masked=False)
    assert tiled_working_bytes(*args, masked=False) == max(p["check"], p["arrays"] + p["tiles"]) + p["diagonal"]
    with pytest.raises(TypeError, match="mask"):
        tiled_working_bytes(*args, mask=False)
