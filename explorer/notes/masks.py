"""Masks: hidden weights and gradients, −inf against −1e9, padding, and the notes' own mask code."""

from __future__ import annotations

import torch

from attn_core.masks import block_causal_mask, causal_mask, future_keys, padding_mask, sliding_window_mask
from attn_core.naive import masked_softmax, naive_attention, renormalise
from attn_core.notes import (
    notes_block_causal_mask,
    notes_hierarchical_mask,
    notes_masked_fill,
    notes_sliding_window_mask,
)
from explorer.notes.registry import Result, claim
from explorer.notes.rules import ROUNDING
from explorer.notes.samples import randn, seeded
from explorer.tables.flash import causal_skipped_tiles, n_tiles


@claim("masked_zero", "000", "002", "003", "004")
def _masked_zero(seed: int) -> Result:
    scores = randn(seeded(seed, 19), 5, 5)
    w = masked_softmax(scores, causal_mask(5))
    hidden = float(w[~causal_mask(5)].abs().max())
    verdict = "right" if hidden == 0 else "wrong"
    return Result("α = 0 where masked", f"max hidden weight = {hidden:g}", verdict, {"hidden": hidden})


@claim("masked_grad", "002")
def _masked_grad(seed: int) -> Result:
    z = randn(seeded(seed, 20), 5, 5).requires_grad_()
    w = masked_softmax(z, causal_mask(5))
    (w * randn(seeded(seed, 21), 5, 5)).sum().backward()
    grad = float(z.grad[~causal_mask(5)].abs().max())
    return Result(
        "∂L/∂l_ij = 0 where masked",
        f"max |gradient| at masked logits = {grad:g}",
        "right" if grad == 0 else "wrong",
        {"grad": grad},
    )


def _fully_masked_scores(seed: int, n: int = 5):
    scores = randn(seeded(seed, 22), n, n)
    mask = causal_mask(n) & padding_mask([3], n)[0]  # (n, n); keep only keys 0..2 ...
    mask[0] = False  # ... and hide every key of query 0: one fully masked row
    return scores, mask


@claim("minus_inf", "000")
def _minus_inf(seed: int) -> Result:
    scores, mask = _fully_masked_scores(seed)
    w = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    nan_rows = int(torch.isnan(w).any(-1).sum())
    others = float((w[1:] - masked_softmax(scores, mask)[1:]).abs().max())
    facts = {"nan_rows": nan_rows, "others": others}
    return Result("−inf ⇒ NaN possible", f"NaN rows: {nan_rows} (the fully masked one); others exact", "right", facts)


@claim("minus_1e9", "000", "002", "004")
def _minus_1e9(seed: int) -> Result:
    scores, mask = _fully_masked_scores(seed)
    big = torch.softmax(notes_masked_fill(scores, mask), dim=-1)
    exact = masked_softmax(scores, mask)
    partial = float((big[1:] - exact[1:]).abs().max())
    row = big[0].tolist()
    try:
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
        fp16 = "ok"
    except RuntimeError:
        fp16 = "RuntimeError"
    facts = {"partial": partial, "uniform": row[0], "n": len(row), "fp16": fp16}
    facts["form"] = "minus_1e9" if fp16 == "RuntimeError" else "minus_1e9_fp16_ok"  # notes.computed: its words
    computed = (
        f"rows with a key: max diff {partial:.1e}; fully masked row: {row[0]:.2f} each (1/{len(row)}); fp16: {fp16}"
    )
    return Result("−1e9 ≡ −∞", computed, "inexact", facts)


@claim("renormalise", "000")
def _renormalise(seed: int) -> Result:
    logits = torch.tensor([0.3, 0.2, 0.4, 0.1, 0.0], dtype=torch.float64)
    keep = torch.tensor([True, True, True, False, False])
    old, new = masked_softmax(logits), masked_softmax(logits, keep)
    error = float((new - renormalise(old, keep)).abs().max())
    ratios = float((new[:3] / old[:3]).max() - (new[:3] / old[:3]).min())
    facts = {"error": error, "ratio_spread": ratios, "factor": float(1 / old[:3].sum())}
    computed = f"new = old / Σ_real old (max error {error:.1e}); every kept weight × {facts['factor']:.4f}"
    # the kept weights do change (by a common factor, not 1); what stays is their ratios: half of the claim holds
    changed = abs(facts["factor"] - 1) > ROUNDING
    verdict = "inexact" if error < ROUNDING and ratios < ROUNDING and changed else "wrong"
    return Result("the distribution among real tokens changes", computed, verdict, facts)


@claim("padding_waste", "000")
def _padding_waste(seed: int) -> Result:
    """The share of padded positions in the notes' own batches, of tokens and of the n x n score cells."""
    shares = {}
    for name, lengths in (("three", [3, 4, 5]), ("two", [3, 4])):
        keys = padding_mask(lengths, 5)[:, 0]  # (B, n): real keys
        cells = keys[:, :, None] & keys[:, None, :]  # real query and real key
        shares[name] = (1 - float(keys.double().mean()), 1 - float(cells.double().mean()))
    facts = {
        "tokens_three": shares["three"][0],
        "cells_three": shares["three"][1],
        "tokens_two": shares["two"][0],
        "cells_two": shares["two"][1],
    }
    computed = (
        f"[3, 4, 5]: {shares['three'][0]:.0%} of tokens, {shares['three'][1]:.0%} of scores; "
        f"[3, 4]: {shares['two'][0]:.0%}, {shares['two'][1]:.0%}"
    )
    return Result("20–30%", computed, "inexact", facts)


@claim("causal_printed", "000", "003", "004")
def _causal_printed(seed: int) -> Result:
    printed = torch.tensor([[1 if j <= i else 0 for j in range(5)] for i in range(5)], dtype=torch.bool)
    same = torch.equal(printed, causal_mask(5))
    return Result(
        "5 × 5 lower triangle", "= causal_mask(5)" if same else "≠ causal_mask(5)", "right" if same else "wrong", {}
    )


@claim("sliding_window", "000")
def _sliding(seed: int, n: int = 8, w: int = 3) -> Result:
    notes, ours = notes_sliding_window_mask(n, w), sliding_window_mask(n, w)
    facts = {"n": n, "w": w, "notes": int(notes.sum(-1).max()), "ours": int(ours.sum(-1).max())}
    computed = f"n = {n}, window_size = {w}: the notes' code keeps {facts['notes']} keys per row, ours {facts['ours']}"
    return Result(f"window_size = {w} keys", computed, "inexact" if facts["notes"] == w + 1 else "wrong", facts)


@claim("block_causal", "000")
def _block(seed: int) -> Result:
    same = all(
        torch.equal(notes_block_causal_mask(n, b), block_causal_mask(n, b)) for n in range(1, 17) for b in range(1, 17)
    )
    return Result(
        "block_causal_mask",
        "= attn_core.block_causal_mask for n, block ≤ 16" if same else "differs",
        "right" if same else "wrong",
        {"form": "block_causal" if same else "block_causal_differs"},
    )


@claim("hierarchical", "000")
def _hierarchical(seed: int) -> Result:
    counts = {n: int(notes_hierarchical_mask(n).sum()) for n in range(1, 17)}
    every = all(counts[n] == n * n for n in counts)
    future16 = int(future_keys(notes_hierarchical_mask(16)).sum())
    facts = {"future": future16, "all_visible": every, "form": "hierarchical" if every else "hierarchical_partial"}
    computed = f"n ≤ 16: all n² keys visible (n = 16: {future16} future keys)" if every else "not all visible"
    return Result("hierarchical_causal_mask is causal", computed, "wrong" if future16 else "right", facts)


@claim("mha_mask", "004")
def _mha_mask(seed: int) -> Result:
    """The notes' MultiHeadAttention fills a (B, T, T) mask into (B, H, T, T) scores: B meets the head axis."""
    b = h = 2
    n = 4
    mask = torch.stack([causal_mask(n), padding_mask([2], n)[0].expand(n, n)])  # (B, T, T): causal, padding
    scores = torch.zeros(b, h, n, n, dtype=torch.float64)
    wrong = notes_masked_fill(scores, mask) != scores.masked_fill(~mask[:, None], -1e9)  # ours: (B, 1, T, T)
    try:
        notes_masked_fill(torch.zeros(3, h, n, n), torch.ones(3, n, n))
        other = "ok"
    except ValueError:
        other = "error"
    facts = {"cells": int(wrong.sum()), "total": wrong.numel(), "other": other}
    facts["form"] = "mha_mask" if other == "error" else "mha_mask_ok"  # notes.computed: its words
    computed = f"B = H = 2: {facts['cells']} of {facts['total']} cells masked wrongly; B = 3, H = 2: {other}"
    return Result(
        "mask (B, T_q, T_k) → scores (B, H, T_q, T_k)", computed, "wrong" if facts["cells"] else "right", facts
    )


@claim("sparse_saves", "000")
def _sparse_saves(seed: int) -> Result:
    n, block = 1024, 64
    _, weights = naive_attention(*(torch.zeros(n, 1) for _ in range(3)), causal_mask(n))
    skipped = causal_skipped_tiles(n, block, block) / n_tiles(n, block) ** 2
    facts = {"n": n, "cells": weights.numel(), "skipped": skipped, "block": block}
    computed = (
        f"causal, n = {n}: naive stores {weights.numel():,} weights; {block}×{block} tiles: {skipped:.0%} skipped"
    )
    return Result("mask ⇒ sparse ⇒ cheaper", computed, "inexact", facts)
