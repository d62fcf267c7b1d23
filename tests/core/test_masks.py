import pytest
import torch

from attn_core import (
    block_causal_mask,
    causal_mask,
    future_keys,
    hierarchical_causal_mask,
    padding_mask,
    sliding_window_mask,
)


def test_causal_mask_is_lower_triangular_and_matches_sdpa_convention():
    m = causal_mask(3, 4)
    assert m.dtype == torch.bool
    assert m.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    assert torch.equal(causal_mask(5), torch.ones(5, 5, dtype=torch.bool).tril())


def test_padding_mask_shape_and_content():
    m = padding_mask([2, 0, 3], 3)
    assert m.shape == (3, 1, 3)
    assert m[:, 0].tolist() == [[1, 1, 0], [0, 0, 0], [1, 1, 1]]


def test_sliding_window_sees_last_window_keys():
    m = sliding_window_mask(5, 2)
    for i in range(5):
        assert [j for j in range(5) if m[i, j]] == [j for j in range(max(0, i - 1), i + 1)]
    assert torch.equal(sliding_window_mask(6, 6), causal_mask(6))


def test_block_causal_sees_its_own_and_earlier_blocks():
    m = block_causal_mask(5, 2)
    assert m.tolist() == [
        [1, 1, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0],
        [1, 1, 1, 1, 0],
        [1, 1, 1, 1, 1],
    ]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sliding_window_mask(4, 0), "window"),
        (lambda: block_causal_mask(4, 0), "block"),
        (lambda: causal_mask(0), "n_q"),
        (lambda: causal_mask(2, -1), "n_k"),
        (lambda: causal_mask(2.5), "n_q"),
        (lambda: padding_mask([1, 5], 4), "lengths"),
        (lambda: padding_mask([[1]], 4), "lengths"),
        (lambda: padding_mask([1.5], 4), "lengths"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_hierarchical_causal_mask_is_causal_and_multi_scale():
    m = hierarchical_causal_mask(40)
    assert future_keys(m).sum() == 0 and m.diagonal().all()
    seen = sorted(39 - j for j in range(40) if m[39, j])  # distances back from the last query
    assert seen == [0, 1, 2, 3, 4, 8, 12, 16, 32]
    assert torch.equal(hierarchical_causal_mask(9, (1,)), causal_mask(9))  # one level of step 1: plain causal
    union = sliding_window_mask(9, 3) | hierarchical_causal_mask(9, (3,))  # steps of 1 below 3, then of 3
    assert torch.equal(hierarchical_causal_mask(9, (1, 3)), union)


@pytest.mark.parametrize("levels", [(), (4, 4), (4, 1), (0, 2), "14", (1.5, 4)])
def test_hierarchical_causal_mask_refuses_bad_levels(levels):
    from attn_core import hierarchical_causal_mask

    with pytest.raises(ValueError, match="levels"):
        hierarchical_causal_mask(8, levels)


def test_future_keys_counts_the_keys_after_each_query():
    assert future_keys(causal_mask(4)).tolist() == [0, 0, 0, 0]
    assert future_keys(torch.ones(4, 4, dtype=torch.bool)).tolist() == [3, 2, 1, 0]
    assert future_keys(torch.ones(2, 3, 5, dtype=torch.bool)).shape == (2, 3)
    with pytest.raises(ValueError, match="bool"):
        future_keys(torch.ones(4, 4))
