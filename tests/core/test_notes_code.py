"""The notes' code, reproduced: it must do what the notes print, errors included."""

import pytest
import torch

from attn_core import block_causal_mask, causal_mask, future_keys, hierarchical_causal_mask, sliding_window_mask
from attn_core.notes import (
    notes_block_causal_mask,
    notes_hierarchical_mask,
    notes_masked_fill,
    notes_sliding_window_mask,
)


@pytest.mark.parametrize("n", range(1, 17))
def test_the_notes_hierarchical_mask_shows_every_key_up_to_16(n):
    m = notes_hierarchical_mask(n)
    assert m.all()  # every key visible: not causal at all
    assert int(future_keys(m).sum()) == n * (n - 1) // 2


def test_the_notes_hierarchical_mask_beyond_16_opens_each_block_of_16():
    m = notes_hierarchical_mask(40)
    assert m[3, 15] and not m[3, 16]  # query 3 sees key 15 (in its 16-block), not key 16
    assert int(future_keys(m).sum()) == 2 * 120 + 28  # two full 16-blocks and one block of 8
    assert not notes_hierarchical_mask(8, (1,)).logical_xor(causal_mask(8)).any()  # level 1 alone stays causal
    assert future_keys(notes_hierarchical_mask(8, (2,))).sum() == 4  # any level >= 2 breaks causality
    assert future_keys(hierarchical_causal_mask(40)).sum() == 0  # the library's version does not


@pytest.mark.parametrize(("n", "w"), [(8, 1), (8, 3), (12, 5), (5, 9)])
def test_the_notes_sliding_window_keeps_one_key_more_than_ours(n, w):
    notes, ours = notes_sliding_window_mask(n, w), sliding_window_mask(n, w)
    assert notes.sum(-1).max() == min(w + 1, n) and ours.sum(-1).max() == min(w, n)
    assert torch.equal(notes, sliding_window_mask(n, w + 1))  # the notes' w is our w + 1
    assert future_keys(notes).sum() == 0


def test_the_notes_block_causal_mask_equals_ours():
    for n in range(1, 13):
        for b in range(1, 13):
            assert torch.equal(notes_block_causal_mask(n, b), block_causal_mask(n, b))


def test_the_notes_masked_fill_lines_the_batch_up_with_the_heads():
    b = h = 2
    scores = torch.zeros(b, h, 3, 3)
    mask = torch.stack([causal_mask(3), torch.ones(3, 3, dtype=torch.bool)])  # (B, T, T): sequence 0 causal
    filled = notes_masked_fill(scores, mask)  # (B, H, T, T)
    assert (filled[1, 0] == -1e9).any()  # sequence 1 got sequence 0's causal mask, on head 0
    assert not (filled[0, 1] == -1e9).any()  # and sequence 0's head 1 is not masked at all
    with pytest.raises(ValueError, match="broadcast"):
        notes_masked_fill(torch.zeros(3, 2, 3, 3), torch.ones(3, 3, 3, dtype=torch.bool))  # B = 3, H = 2


@pytest.mark.parametrize(
    "call",
    [
        lambda: notes_sliding_window_mask(0, 2),
        lambda: notes_sliding_window_mask(4, 0),
        lambda: notes_block_causal_mask(4, 0),
        lambda: notes_hierarchical_mask(4, (0,)),
        lambda: notes_hierarchical_mask(4, "16"),
        lambda: notes_hierarchical_mask(10_000),
    ],
)
def test_bad_sizes_are_refused(call):
    with pytest.raises(ValueError):
        call()
