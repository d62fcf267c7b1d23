"""Name attention heads by what their maps do, and split a language model's loss by what copying can predict.

Every score reads one (B, H, n, n) causal map per layer (rows = queries i, columns = keys j) and averages, over
the batch and over the queries where it is defined, the weight a head puts on one set of keys:

    previous_token   key i-1                                                   queries i >= 1
    induction        keys j+1 for every j < i with x_j = x_i (what followed    queries with an earlier x_i
                     an earlier occurrence of the current token)
    duplicate_token  keys j < i with x_j = x_i (earlier copies of the token)   queries with an earlier x_i
    first_token      key 0 (an "attention sink")                               queries i >= 1
    entropy          -sum_j w_ij ln w_ij, nats (uniform over i+1 keys: ln(i+1)) queries i >= 1

A head that only ever attends where a score looks scores 1; a uniform head scores about 1/(i+1) on a one-key set.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

SCORES = ("previous_token", "induction", "duplicate_token", "first_token", "entropy")
LOSS_SPLITS = ("first_seen", "repeated", "all")


def head_scores(weights: Sequence[torch.Tensor], tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """weights: one (B, H, n, n) map per layer, tokens (B, n) -> {score: (L, H) float32}.

    A score is NaN where no query qualifies (induction on a sequence without a repeated token)."""
    w = _stack_maps(weights, tokens)  # (L, B, H, n, n)
    n = w.shape[-1]
    earlier = torch.ones(n, n, dtype=torch.bool, device=w.device).tril(-1)
    same = (tokens[:, :, None] == tokens[:, None, :]) & earlier  # (B, n, n): j < i, x_j = x_i
    after = F.pad(same, (1, 0))[..., :n]  # (B, n, n): key j+1 for each such j
    seen = same.any(dim=-1)  # (B, n): queries with an earlier copy of their token
    # One-key sets and the entropy read slices of the maps instead of multiplying them by masks: a snapshot of
    # the training run scores 64 sequences every few steps, and each full pass over the maps costs about a ms.
    later = w[..., 1:, :]  # (L, B, H, n - 1, n): queries i >= 1
    return {
        "previous_token": torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).mean(dim=(1, 3)),  # w[i, i - 1]
        "induction": _mean_over(_mass(w, after), seen),
        "duplicate_token": _mean_over(_mass(w, same), seen),
        "first_token": later[..., 0].mean(dim=(1, 3)),
        "entropy": torch.special.entr(later).sum(dim=-1).mean(dim=(1, 3)),  # entr(x) = -x ln x, 0 at 0
    }


def _mass(w: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """w (L, B, H, n, n), keys (n, n) or (B, n, n) bool -> (L, B, H, n): weight on the chosen keys per query."""
    keys = keys[:, None] if keys.dim() == 3 else keys  # (B, 1, n, n) broadcasts over heads
    return (w * keys).sum(dim=-1)


def _mean_over(values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """values (L, B, H, n), queries (n,) or (B, n) bool -> (L, H) mean over (batch, query) pairs it marks."""
    mark = (queries if queries.dim() == 2 else queries.expand(values.shape[1], -1))[:, None]  # (B, 1, n)
    count = mark.sum()
    total = (values * mark).sum(dim=(1, 3))  # (L, H)
    return total / count if count > 0 else torch.full_like(total, float("nan"))


def _stack_maps(weights, tokens) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(f"tokens must be a (B, n) integer tensor, got {_describe(tokens)}")
    if isinstance(weights, torch.Tensor) or not isinstance(weights, Sequence) or len(weights) == 0:
        raise ValueError(
            f"weights must be a non-empty sequence of (B, H, n, n) maps, one per layer, got {_describe(weights)}"
        )
    b, n = tokens.shape
    for i, w in enumerate(weights):
        if not isinstance(w, torch.Tensor) or not w.is_floating_point():
            raise ValueError(f"weights[{i}] must be a floating-point tensor, got {_describe(w)}")
        if w.dim() != 4 or w.shape[0] != b or w.shape[2:] != (n, n) or w.shape[1] != weights[0].shape[1]:
            raise ValueError(
                f"weights[{i}] must have shape (B={b}, H, n={n}, n={n}) like tokens (and the same H in every "
                f"layer), got {tuple(w.shape)}"
            )
    return torch.stack([w.detach().float() for w in weights])


def split_losses(logits: torch.Tensor, tokens: torch.Tensor) -> dict[str, float]:
    """Next-token loss in nats (position i predicts x_{i+1}), averaged over three sets of positions:

    "repeated": the pair (x_i, x_{i+1}) already occurred earlier in the sequence, so copying what followed an
    earlier x_i can predict x_{i+1} (in a repeated random segment: every prediction inside the copies);
    "first_seen": every other position (a new pair: copying cannot predict it); "all": every position.
    NaN for a set that holds no position.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point() or tokens.shape[1] < 2:
        raise ValueError(f"tokens must be a (B, n >= 2) integer tensor, got {_describe(tokens)}")
    b, n = tokens.shape
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != (b, n):
        raise ValueError(f"logits must have shape (B={b}, n={n}, vocab) like tokens, got {_describe(logits)}")
    loss = F.cross_entropy(logits[:, :-1].detach().float().transpose(1, 2), tokens[:, 1:], reduction="none")
    repeated = repeated_pairs(tokens)  # (B, n - 1)
    return {
        "first_seen": _masked_mean(loss, ~repeated),
        "repeated": _masked_mean(loss, repeated),
        "all": float(loss.mean()),
    }


def repeated_pairs(tokens: torch.Tensor) -> torch.Tensor:
    """(B, n) tokens -> (B, n - 1) bool: whether (x_i, x_{i+1}) equals some earlier pair (x_j, x_{j+1}), j < i."""
    cur, nxt = tokens[:, :-1], tokens[:, 1:]  # (B, n - 1)
    pair = (cur[:, :, None] == cur[:, None, :]) & (nxt[:, :, None] == nxt[:, None, :])  # (B, i, j)
    earlier = torch.tril(torch.ones(pair.shape[-1], pair.shape[-1], dtype=torch.bool, device=tokens.device), -1)
    return (pair & earlier).any(dim=-1)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    count = int(mask.sum())
    return float((values * mask).sum() / count) if count else float("nan")


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"{x.dtype} of shape {tuple(x.shape)}"
    return type(x).__name__
