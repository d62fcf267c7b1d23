"""Code from the lecture notes, reproduced as printed (bugs included), so the app can show what it does.

Each function follows the notes' loop line by line; only the return type changes, to our bool
convention (True = may attend) in place of the notes' float 1/0. The library's own, correct
versions are in attn_core.masks; the docstrings say where the two differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn_core._checks import broadcast_shape, check_int, check_tensor

MAX_N = 4096  # the notes' Python loops are O(n) row writes; beyond this size nobody should call them


def notes_sliding_window_mask(seq_len: int, window_size: int) -> torch.Tensor:
    """The notes' `sliding_window_causal_mask`: tril, then row i >= w clears keys 0..i-w-1.

    Query i keeps keys i-w..i: window_size + 1 keys, one more than the name says
    (attn_core.masks.sliding_window_mask(n, w) keeps i-w+1..i, w keys).
    """
    seq_len = check_int("seq_len", seq_len, minimum=1, maximum=MAX_N)
    window_size = check_int("window_size", window_size, minimum=1)
    mask = torch.tril(torch.ones(seq_len, seq_len))
    for i in range(seq_len):
        if i >= window_size:
            mask[i, : i - window_size] = 0
    return mask.bool()


def notes_block_causal_mask(seq_len: int, block_size: int) -> torch.Tensor:
    """The notes' `block_causal_mask`: query block b sees key blocks 0..b (equal to attn_core's)."""
    seq_len = check_int("seq_len", seq_len, minimum=1, maximum=MAX_N)
    block_size = check_int("block_size", block_size, minimum=1)
    mask = torch.zeros(seq_len, seq_len)
    for i in range(0, seq_len, block_size):
        end_i = min(i + block_size, seq_len)
        for j in range(0, end_i, block_size):
            end_j = min(j + block_size, seq_len)
            if j <= i:
                mask[i:end_i, j:end_j] = 1
    return mask.bool()


def notes_hierarchical_mask(seq_len: int, levels: Sequence[int] = (1, 4, 16)) -> torch.Tensor:
    """The notes' `hierarchical_causal_mask`: tril, then every diagonal block of each level set to 1.

    Setting a whole level x level block to 1 lets a query see the later keys of its block: the mask is
    not causal for any level >= 2, and with the default levels every key is visible when seq_len <= 16.
    """
    seq_len = check_int("seq_len", seq_len, minimum=1, maximum=MAX_N)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise ValueError(f"levels must be a non-empty sequence of integers >= 1, got {levels!r}")
    levels = [check_int("levels[i]", level, minimum=1) for level in levels]
    mask = torch.tril(torch.ones(seq_len, seq_len))
    for level in levels:
        for i in range(0, seq_len, level):
            mask[i : i + level, i : i + level] = 1
    return mask.bool()


def notes_masked_fill(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The notes' masking recipe: scores.masked_fill(mask == 0, -1e9), with the mask broadcast as given.

    A (B, T_q, T_k) mask against (B, H, T_q, T_k) scores lines B up with the head axis H: PyTorch's
    broadcasting aligns trailing dimensions. attn_core's MultiHeadAttention inserts the head axis first.
    """
    check_tensor("scores", scores, min_dim=2)
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a tensor, got {type(mask).__name__}")
    try:
        broadcast_shape(mask.shape, scores.shape)
    except RuntimeError:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast against scores {tuple(scores.shape)}"
        ) from None
    return scores.masked_fill(mask == 0, -1e9)
