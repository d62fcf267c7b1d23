import pytest
import torch
from helpers import rand
from torch import nn

from attn_core import MultiHeadAttention, causal_mask, padding_mask


def torch_twin(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """torch.nn.MultiheadAttention carrying the same weights."""
    ref = nn.MultiheadAttention(mha.d_model, mha.num_heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
        ref.out_proj.weight.copy_(mha.w_o.weight)
        ref.out_proj.bias.copy_(mha.w_o.bias)
    return ref


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_self_attention_matches_torch(num_heads):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, num_heads).double()
    x = rand(3, 7, 16)
    out, w = mha(x)
    ref_out, ref_w = torch_twin(mha)(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)
    assert w.shape == (3, num_heads, 7, 7)


def test_cross_attention_with_padding_and_causal_masks_matches_torch():
    torch.manual_seed(1)
    mha = MultiHeadAttention(12, 3).double()
    query, memory = rand(2, 5, 12), rand(2, 9, 12, seed=1)
    pad = padding_mask([9, 4], 9)  # (B, 1, n_k), True = may attend
    out, _ = mha(query, memory, mask=pad)
    ref, _ = torch_twin(mha)(query, memory, memory, key_padding_mask=~pad[:, 0])  # torch: True = ignore
    torch.testing.assert_close(out, ref)
    x = rand(2, 6, 12, seed=2)
    out, _ = mha(x, mask=causal_mask(6))
    ref, _ = torch_twin(mha)(x, x, x, attn_mask=~causal_mask(6))
    torch.testing.assert_close(out, ref)


def test_head_width_and_constant_parameter_count():
    def count(d, h):
        return sum(p.numel() for p in MultiHeadAttention(d, h, device="meta").parameters())

    assert count(768, 1) == count(768, 12) == count(768, 48) == 4 * (768 * 768 + 768)
    assert MultiHeadAttention(768, 12, device="meta").d_k == 64
    assert MultiHeadAttention(12288, 96, device="meta").d_k == 128


def test_bad_arguments():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="num_heads"):
        MultiHeadAttention(10, 0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="query must have shape"):
        mha(torch.randn(2, 3, 7))
    with pytest.raises(ValueError, match="key and value"):
        mha(torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 5, 8))


def test_scale_reaches_the_logits_and_queries_keys_are_the_ones_used():
    torch.manual_seed(2)
    x = rand(2, 5, 8)
    scaled, unscaled = MultiHeadAttention(8, 2).double(), MultiHeadAttention(8, 2, scale=1.0).double()
    unscaled.load_state_dict(scaled.state_dict())
    q, k = scaled.queries_keys(x)
    assert q.shape == k.shape == (2, 2, 5, 4)
    logits = q @ k.transpose(-2, -1)  # (B, H, n, n), unscaled
    torch.testing.assert_close(scaled(x)[1], torch.softmax(logits / 2.0, dim=-1))  # 1/sqrt(d_k = 4)
    torch.testing.assert_close(unscaled(x)[1], torch.softmax(logits, dim=-1))
    with pytest.raises(ValueError, match="scale"):
        MultiHeadAttention(8, 2, scale=0.0)
    with pytest.raises(ValueError, match="key must have shape"):
        scaled.queries_keys(x, torch.randn(2, 3, 7))
