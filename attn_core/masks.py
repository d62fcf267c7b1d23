"""Boolean attention masks, True = may attend (the convention of torch's SDPA `attn_mask`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn_core._checks import check_int


def causal_mask(n_q: int, n_k: int | None = None, *, device=None) -> torch.Tensor:
    """(n_q, n_k): query i sees keys 0..i (top-left aligned, like SDPA's `is_causal`)."""
    n_q = check_int("n_q", n_q, minimum=1)
    n_k = n_q if n_k is None else check_int("n_k", n_k, minimum=1)
    # an index comparison, not tril(): tril on bool tensors is slow for the small masks the pages use
    return torch.arange(n_q, device=device)[:, None] >= torch.arange(n_k, device=device)[None, :]


def padding_mask(lengths: Sequence[int] | torch.Tensor, n_k: int, *, device=None) -> torch.Tensor:
    """(B, 1, n_k): sequence b has `lengths[b]` real keys, the rest is padding; broadcasts over queries."""
    n_k = check_int("n_k", n_k, minimum=1)
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.dim() != 1 or lengths.numel() == 0 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be a non-empty 1-D sequence of integers, got {lengths!r}")
    if bool(((lengths < 0) | (lengths > n_k)).any()):
        raise ValueError(f"lengths must lie in [0, n_k={n_k}], got {lengths.tolist()}")
    keys = torch.arange(n_k, device=lengths.device)
    return (keys[None, :] < lengths[:, None])[:, None, :]  # (B, 1, n_k)


def sliding_window_mask(n: int, window: int, *, device=None) -> torch.Tensor:
    """(n, n): causal, query i sees keys i-window+1..i."""
    n = check_int("n", n, minimum=1)
    window = check_int("window", window, minimum=1)
    i = torch.arange(n, device=device)
    offset = i[:, None] - i[None, :]  # query index - key index
    return (offset >= 0) & (offset < window)


def block_causal_mask(n: int, block: int, *, device=None) -> torch.Tensor:
    """(n, n): query block b (of `block` positions) sees key blocks 0..b."""
    n = check_int("n", n, minimum=1)
    block = check_int("block", block, minimum=1)
    b = torch.arange(n, device=device) // block
    return b[:, None] >= b[None, :]


def hierarchical_causal_mask(n: int, levels: Sequence[int] = (1, 4, 16), *, device=None) -> torch.Tensor:
    """(n, n): causal at several granularities: fine steps nearby, coarse steps far back.

    Query i sees key j <= i when the distance i - j is a multiple of levels[l] and smaller than
    levels[l + 1] (the last level has no upper bound). With levels (1, 4, 16) a query sees its 3 nearest
    predecessors, then every 4th key up to 12 back, then every 16th key: causal by construction, and
    each row sees O(sum levels[l+1] / levels[l]) keys plus n / levels[-1].
    """
    n = check_int("n", n, minimum=1)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise ValueError(f"levels must be a non-empty sequence of increasing integers >= 1, got {levels!r}")
    levels = [check_int("levels[i]", level, minimum=1) for level in levels]
    if any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise ValueError(f"levels must be strictly increasing, got {levels}")
    i = torch.arange(n, device=device)
    distance = i[:, None] - i[None, :]  # query index - key index
    mask = torch.zeros(n, n, dtype=torch.bool, device=device)
    for level, upper in zip(levels, [*levels[1:], None], strict=True):
        step = distance.remainder(level) == 0
        below = distance < upper if upper is not None else torch.ones_like(step)
        mask |= (distance >= 0) & step & below
    return mask


def future_keys(mask: torch.Tensor) -> torch.Tensor:
    """(..., n_q): how many keys j > i each query i may attend; all 0 exactly when the mask is causal."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() < 2:
        raise ValueError(f"mask must be a bool tensor of shape (..., n_q, n_k), got {getattr(mask, 'shape', mask)!r}")
    n_q, n_k = mask.shape[-2:]
    future = ~causal_mask(n_q, n_k, device=mask.device)  # (n_q, n_k): j > i
    return (mask & future).sum(dim=-1)
