"""Tables for the "Masks lab": mask parts and their AND, scores and weights, fill values, gradients at hidden logits.

Every function takes plain parameters (sizes, tuples, strings, seed) or a `MaskSpec`; those a page calls keep
their results for the whole server (@cached), shared and read-only. A `MaskSpec` names the mask and the sequence
shown: n, the chosen parts, the padding lengths of the batch, the window, the block size, the custom grid and the
sequence; `build_masks` turns a mask into bool tensors (True = may attend).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from attn_core.masks import (
    block_causal_mask,
    causal_mask,
    future_keys,
    hierarchical_causal_mask,
    padding_mask,
    sliding_window_mask,
)
from attn_core.naive import attention_logits, masked_softmax, renormalise
from attn_core.notes import notes_hierarchical_mask, notes_sliding_window_mask
from explorer.ui.cache import cached

MAX_N = 12  # a 12 x 12 grid is the largest that stays readable with a number in every cell
MAX_BATCH = 4
MAX_LENGTHS_CHARS = 40
D_K = 8  # width of the random queries and keys behind the scores
PARTS = ("padding", "causal", "sliding window", "block causal", "custom")
FILLS = ("-inf", "-1e9", "finfo.min")
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
LIBRARY = "masked_softmax (library)"

Grid = tuple[tuple[bool, ...], ...]


@dataclasses.dataclass(frozen=True)
class MaskSpec:
    """One mask of the page and the sequence of the batch it shows. Frozen, its sequences stored as tuples: equal
    specs are equal cache keys."""

    n: int
    parts: tuple[str, ...]
    lengths: tuple[int, ...]
    window: int
    block: int
    custom: Grid | None = None
    sequence: int = 0

    def __post_init__(self):
        # a list handed in (the editor's rows, a parsed text) becomes a tuple: the spec stays immutable and hashable
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "lengths", tuple(self.lengths))
        if self.custom is not None:
            object.__setattr__(self, "custom", tuple(tuple(row) for row in self.custom))

    def masks(self) -> dict[str, torch.Tensor]:
        """build_masks of this spec's mask."""
        return build_masks(self.n, self.parts, self.lengths, self.window, self.block, self.custom)


def parse_lengths(text: str, n: int) -> tuple[int, ...]:
    """'6, 2' -> (6, 2): one real length per sequence of the batch, each in [0, n], at most MAX_BATCH of them."""
    text = text.strip()
    if not text:
        raise ValueError("enter one length per sequence, e.g. 6, 2")
    if len(text) > MAX_LENGTHS_CHARS:
        raise ValueError(f"keep the lengths under {MAX_LENGTHS_CHARS} characters")
    items = [t for t in re.split(r"[,\s]+", text) if t]
    if len(items) > MAX_BATCH:
        raise ValueError(f"at most {MAX_BATCH} sequences, got {len(items)}")
    bad = [i for i, t in enumerate(items, start=1) if not re.fullmatch(r"\d{1,3}", t)]
    if bad:  # name the place, never echo the raw text
        raise ValueError(f"lengths must be whole numbers separated by commas; item {bad[0]} is not")
    lengths = tuple(int(t) for t in items)
    too_long = [x for x in lengths if x > n]
    if too_long:
        raise ValueError(f"a length cannot exceed the sequence length n = {n}, got {too_long[0]}")
    return lengths


def parse_grid(rows: Sequence[Sequence[object]], n: int) -> Grid:
    """The custom mask from the editor: exactly n rows of n booleans (True = may attend)."""
    if len(rows) != n or any(len(r) != n for r in rows):
        raise ValueError(f"the custom grid must have {n} rows of {n} cells")
    grid = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            if not isinstance(cell, (bool, np.bool_)):
                raise ValueError(f"cell (query {i}, key {j}) of the custom grid must be ticked or not, got {cell!r}")
            cells.append(bool(cell))
        grid.append(tuple(cells))
    return tuple(grid)


def build_masks(
    n: int, parts: Sequence[str], lengths: Sequence[int], window: int, block: int, custom: Grid | None = None
) -> dict[str, torch.Tensor]:
    """Each chosen part as a (B, n, n) bool mask, then "combined": their AND (all True when no part is chosen)."""
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"parts must be among {PARTS}, got {unknown[0]!r}")
    b = len(lengths)
    makers = {
        "padding": lambda: padding_mask(list(lengths), n),  # (B, 1, n): hides the same keys from every query
        "causal": lambda: causal_mask(n),
        "sliding window": lambda: sliding_window_mask(n, window),
        "block causal": lambda: block_causal_mask(n, block),
        "custom": lambda: _custom_tensor(custom, n),
    }
    masks = {p: makers[p]().expand(b, n, n) for p in PARTS if p in parts}  # (B, n, n) each
    combined = torch.ones(b, n, n, dtype=torch.bool)
    for m in masks.values():
        combined = combined & m
    return masks | {"combined": combined}


def _custom_tensor(custom: Grid | None, n: int) -> torch.Tensor:
    if custom is None or len(custom) != n or any(len(r) != n for r in custom):
        raise ValueError(f"custom needs an {n} x {n} grid of ticks")
    return torch.tensor(custom, dtype=torch.bool)


def random_scores(b: int, n: int, seed: int) -> torch.Tensor:
    """(B, n, n) scores q k^T / sqrt(d_k) of random N(0, 1) queries and keys, d_k = D_K, in float64."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, n, D_K, generator=gen, dtype=torch.float64)
    k = torch.randn(b, n, D_K, generator=gen, dtype=torch.float64)
    return attention_logits(q, k, 1 / math.sqrt(D_K), 1.0)  # (B, n, n)


def _grid_frame(**columns: torch.Tensor) -> pd.DataFrame:
    """(n_q, n_k) tensors -> one row per cell with columns query, key and one per tensor."""
    n_q, n_k = next(iter(columns.values())).shape
    q, k = np.meshgrid(np.arange(n_q), np.arange(n_k), indexing="ij")
    data = {"query": q.ravel(), "key": k.ravel()}
    for name, t in columns.items():
        data[name] = t.detach().to(torch.float64 if t.is_floating_point() else t.dtype).numpy().ravel()
    return pd.DataFrame(data)


def _check_sequence(sequence: int, b: int) -> None:
    if not 0 <= sequence < b:
        raise ValueError(f"sequence must lie in [0, {b - 1}], got {sequence}")


@cached(64)
def mask_parts(spec: MaskSpec) -> tuple[pd.DataFrame, dict]:
    """The chosen parts and their AND for the spec's sequence, and how much of the whole batch they hide.

    Returns (cells, stats): cells has part, query, key, allowed; stats holds hidden_share (of all B n^2
    score cells), padding_share (the keys that are padding), fully_masked (rows of the spec's sequence) and
    fully_masked_by_sequence (those rows for each sequence of the batch).
    """
    masks, n, lengths, sequence = spec.masks(), spec.n, spec.lengths, spec.sequence
    _check_sequence(sequence, len(lengths))
    frames = [_grid_frame(allowed=m[sequence]).assign(part=name) for name, m in masks.items()]
    combined = masks["combined"]
    stats = {
        "hidden_share": float((~combined).double().mean()),
        "padding_share": 1 - sum(lengths) / (n * len(lengths)),
        "fully_masked": [int(i) for i in torch.nonzero(~combined[sequence].any(-1)).flatten()],
        # every sequence's, so a page can point to the one that has such rows when the shown one has none
        "fully_masked_by_sequence": [[int(i) for i in torch.nonzero(~m.any(-1)).flatten()] for m in combined],
    }
    return pd.concat(frames, ignore_index=True), stats


@cached(64)
def scores_and_weights(spec: MaskSpec, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Raw scores and the library's masked weights for the spec's sequence, and each query row's sum.

    Returns (cells, rows): cells has query, key, score, weight, hidden; rows has query, visible_keys, row_sum.
    """
    n, sequence = spec.n, spec.sequence
    mask = spec.masks()["combined"]
    _check_sequence(sequence, len(spec.lengths))
    scores = random_scores(len(spec.lengths), n, seed)[sequence]  # (n, n)
    m = mask[sequence]
    weights = masked_softmax(scores, m)  # (n, n); hidden keys and fully masked rows get 0
    rows = pd.DataFrame({"query": range(n), "visible_keys": m.sum(-1).numpy(), "row_sum": weights.sum(-1).numpy()})
    return _grid_frame(score=scores, weight=weights, hidden=~m), rows


def fill_value(fill: str, dtype: torch.dtype) -> float:
    """The number masked_fill writes: -inf, -1e9 or the most negative finite number of `dtype`."""
    if fill not in FILLS:
        raise ValueError(f"fill must be one of {FILLS}, got {fill!r}")
    return {"-inf": float("-inf"), "-1e9": -1e9, "finfo.min": torch.finfo(dtype).min}[fill]


def _plain_softmax(scores: torch.Tensor, mask: torch.Tensor, fill: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The textbook recipe: fill hidden logits with a constant, then torch.softmax. Returns (z, weights), z a leaf."""
    z = scores.masked_fill(~mask, fill).detach().requires_grad_()  # raises in float16 for -1e9
    return z, torch.softmax(z, dim=-1)


def _library_softmax(scores: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    z = scores.detach().clone().requires_grad_()
    return z, masked_softmax(z, mask)


def _summarise(z, weights, mask, upstream) -> dict:
    """Forward and backward facts of one softmax recipe: weights on fully masked rows, NaNs, masked gradients."""
    loss = (weights * upstream).sum()  # L = sum_ij W_ij U_ij: U plays dL/dW of whatever comes after
    loss.backward()
    grad, weights = z.grad, weights.detach()  # (n, n) each
    full = ~mask.any(-1)  # (n,) rows with no visible key
    hidden_partial = ~mask & ~full[:, None]
    hidden_full = ~mask & full[:, None]

    def max_abs(t: torch.Tensor, where: torch.Tensor) -> float:
        return float(t[where].double().abs().max()) if bool(where.any()) else float("nan")

    return {
        "fully masked rows": int(full.sum()),
        "hidden keys in other rows": int(hidden_partial.sum()),
        "fully masked row weight": float(weights[full].double().mean()) if bool(full.any()) else float("nan"),
        "fully masked row sum": float(weights[full].double().sum(-1).mean()) if bool(full.any()) else float("nan"),
        "max weight on hidden keys (other rows)": max_abs(weights, hidden_partial),
        "NaN in weights": int(torch.isnan(weights).sum()),
        "loss": float(loss.detach()),
        "max |grad| hidden logits": max_abs(grad, ~mask),
        "max |grad| visible logits": max_abs(grad, mask),
        "max |grad| hidden logits (other rows)": max_abs(grad, hidden_partial),
        "max |grad| hidden logits (fully masked rows)": max_abs(grad, hidden_full),
        "NaN in grad": int(torch.isnan(grad).sum()),
        "grad": grad,
    }


def plain_method(fill: str) -> str:
    """The fill comparison's name of the recipe torch.softmax after filling the hidden logits with `fill`."""
    return f"torch.softmax, fill {fill}"


@cached(64)
def fill_comparison(spec: MaskSpec, dtype: str, seed: int):
    """torch.softmax after masked_fill with -inf, -1e9 and finfo.min, against the library's masked_softmax.

    All four run live in `dtype` on the spec's sequence's scores; the loss sum(W * U) with a seeded U gives gradients.
    Returns (cells, rows, summary): cells has method, query, key, weight, grad, hidden; rows has method, query,
    visible_keys, row_sum (NaN if any weight of the row is NaN); summary one row per method with the fill value
    as stored, an error if masked_fill refused it, and the facts of `_summarise`.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    torch_dtype, n, sequence = DTYPES[dtype], spec.n, spec.sequence
    mask = spec.masks()["combined"]
    _check_sequence(sequence, len(spec.lengths))
    scores = random_scores(len(spec.lengths), n, seed)[sequence].to(torch_dtype)  # (n, n)
    m = mask[sequence]
    gen = torch.Generator().manual_seed(seed + 1)
    upstream = torch.randn(n, n, generator=gen, dtype=torch.float64).to(torch_dtype)  # (n, n)
    recipes = {plain_method(f): f for f in FILLS} | {LIBRARY: None}
    cells, rows, summary = [], [], []
    for method, fill in recipes.items():
        row = {"method": method, "fill value": _written(fill, torch_dtype), "error": ""}
        try:
            if fill is None:
                z, weights = _library_softmax(scores, m)
            else:
                z, weights = _plain_softmax(scores, m, fill_value(fill, torch_dtype))
        except RuntimeError as err:  # float16 cannot hold -1e9: masked_fill refuses it
            summary.append(row | {"error": str(err).split("\n")[0]})
            continue
        facts = _summarise(z, weights, m, upstream)
        cells.append(_grid_frame(weight=weights, grad=facts.pop("grad"), hidden=~m).assign(method=method))
        sums = weights.detach().double().sum(-1)  # a NaN anywhere makes its row's sum NaN
        rows.append(pd.DataFrame({"method": method, "query": range(n), "visible_keys": m.sum(-1), "row_sum": sums}))
        summary.append(row | facts)
    return pd.concat(cells, ignore_index=True), pd.concat(rows, ignore_index=True), pd.DataFrame(summary)


@cached(64)
def score_columns(spec: MaskSpec, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scores' and the weights' cells with only the columns their charts' CSV files hold."""
    cells, _ = scores_and_weights(spec, seed)
    return cells[["query", "key", "score", "hidden"]], cells[["query", "key", "weight", "hidden"]]


@cached(64)
def fill_by_method(spec: MaskSpec, dtype: str, seed: int) -> pd.DataFrame:
    """fill_comparison's summary indexed by recipe: what the page's metrics read, one row per recipe."""
    return fill_comparison(spec, dtype, seed)[2].set_index("method")


@cached(128)
def fill_of_method(spec: MaskSpec, dtype: str, seed: int, method: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One recipe's part of fill_comparison: its cells and its rows' sums (empty when masked_fill refused it)."""
    cells, rows, _ = fill_comparison(spec, dtype, seed)
    return cells[cells.method == method], rows[rows.method == method]


@cached(64)
def summary_table(spec: MaskSpec, dtype: str, seed: int, words: Mapping[str, object], names: Mapping[str, str]):
    """The recipes' summary as a page's table shows it: summary_text without the loss and the gradients (the
    gradient section states those), the library's fill and the facts in `words`, the recipes under `names`.

    words: none (a fact about no cells), library_fill, facts (fact -> its words), fact (the index's name).
    """
    _, _, summary = fill_comparison(spec, dtype, seed)
    shown = summary_text(
        summary.drop(columns=["loss", "max |grad| hidden logits", "max |grad| visible logits"]), none=words["none"]
    )
    shown.loc[shown["fact"] == "fill value", LIBRARY] = words["library_fill"]
    facts = words["facts"]
    shown = shown.assign(fact=shown["fact"].map(lambda f: facts.get(f, f))).set_index("fact").rename(columns=names)
    return shown.rename_axis(words["fact"])


def _stored(fill: str, dtype: torch.dtype) -> float:
    return torch.tensor(fill_value(fill, dtype), dtype=torch.float64).to(dtype).item()


def _written(fill: str | None, dtype: torch.dtype) -> str:
    """The fill as `dtype` stores it (bfloat16 rounds -1e9); one that overflows is written "-1e9 → -inf", so the
    table does not show -inf under -1e9 without a word; the library's recipe in words."""
    if fill is None:
        return "-inf inside; a row summing to 0 is divided by 1"
    stored = _stored(fill, dtype)
    return f"{fill} → {stored:g}" if fill in overflowing_fills(dtype) else f"{stored:.6g}"


def fill_overflow(dtype: str) -> tuple[list[str], float]:
    """For a dtype by name: the fills it cannot hold, and its largest finite magnitude (what they exceed)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    return overflowing_fills(DTYPES[dtype]), torch.finfo(DTYPES[dtype]).max


def overflowing_fills(dtype: torch.dtype) -> list[str]:
    """The finite fills that `dtype` cannot hold (-1e9 in float16, whose largest magnitude is 65504)."""
    return [f for f in FILLS if math.isfinite(fill_value(f, dtype)) and not math.isfinite(_stored(f, dtype))]


# A fact about some cells, and the count of those cells: with none of them the fact has no value (not NaN).
_CELLS_OF = {
    "fully masked row weight": "fully masked rows",
    "fully masked row sum": "fully masked rows",
    "max |grad| hidden logits (fully masked rows)": "fully masked rows",
    "max weight on hidden keys (other rows)": "hidden keys in other rows",
    "max |grad| hidden logits (other rows)": "hidden keys in other rows",
}


def summary_text(summary: pd.DataFrame, none: str = "none") -> pd.DataFrame:
    """The summary turned for a table: one row per fact, one column per recipe, every cell text. NaN is written
    "NaN", numbers get 4 significant digits, "—" marks a recipe whose fill masked_fill refused, and `none` a fact
    about cells that do not exist (no fully masked row, say)."""
    refused = summary["error"].astype(bool).to_numpy()

    def cell(i: int, fact: str) -> str:
        value = summary.iloc[i][fact]
        if isinstance(value, str):
            return value or "—"
        if refused[i]:
            return "—"
        counted = _CELLS_OF.get(fact)
        if counted in summary.columns and summary.iloc[i][counted] == 0:
            return none
        return "NaN" if pd.isna(value) else f"{value:.4g}"

    columns = {method: [cell(i, c) for c in summary.columns[1:]] for i, method in enumerate(summary["method"])}
    return pd.DataFrame(columns, index=pd.Index(summary.columns[1:], name="fact")).reset_index()


# The notes' padding example, and the notes' mask code beside the library's.

NOTES_LOGITS = (0.3, 0.2, 0.4, 0.1, 0.0)  # the notes' padding example: 3 real tokens, then 2 of padding
NOTES_PRINTED = (0.33, 0.22, 0.44)  # what the notes print for the real tokens after masking
NOTES_LEVELS = (1, 4, 16)  # the notes' default levels of hierarchical_causal_mask
MAX_NOTES_N = 32
NOTES_MASKS = ("notes hierarchical", "hierarchical", "notes sliding window", "sliding window")


@cached(8)
def padding_renormalisation(real: int) -> tuple[pd.DataFrame, dict]:
    """The weights of the notes' logits before and after hiding all but the first `real` tokens.

    Returns (rows, stats): rows has token, logit, real, before (softmax of all), after (masked_softmax),
    rescaled (renormalise: before / its sum over the real tokens), by_sum (logit / sum of the real logits,
    what the notes print); stats holds kept (the real tokens' share before masking), factor (1 / kept)
    and gap (max |after - rescaled|, 0 up to rounding).
    """
    n = len(NOTES_LOGITS)
    if isinstance(real, bool) or not isinstance(real, int) or not 1 <= real <= n:
        raise ValueError(f"real must be an integer between 1 and {n}, got {real!r}")
    logits = torch.tensor(NOTES_LOGITS, dtype=torch.float64)
    keep = padding_mask([real], n)[0, 0]  # (n,)
    before, after = masked_softmax(logits), masked_softmax(logits, keep)
    rescaled = renormalise(before, keep)
    real_logits = logits[:real]
    by_sum = torch.where(keep, logits / real_logits.sum(), torch.zeros_like(logits))
    rows = pd.DataFrame(
        {
            "token": range(1, n + 1),
            "logit": logits.numpy(),
            "real": keep.numpy(),
            "before": before.numpy(),
            "after": after.numpy(),
            "rescaled": rescaled.numpy(),
            "by_sum": by_sum.numpy(),
        }
    )
    kept = float(before[keep].sum())
    return rows, {"kept": kept, "factor": 1 / kept, "gap": float((after - rescaled).abs().max())}


@cached(64)
def notes_masks(n: int, window: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notes' hierarchical and sliding-window masks beside attn_core's, as grids and counts.

    Returns (cells, stats): cells has part (NOTES_MASKS), query, key, allowed; stats one row per part with
    future (keys after their query that some query sees, in all), widest (most keys one query sees) and causal.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_NOTES_N:
        raise ValueError(f"n must be an integer between 2 and {MAX_NOTES_N}, got {n!r}")
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= n:
        raise ValueError(f"window must be an integer between 1 and n = {n}, got {window!r}")
    masks = {
        "notes hierarchical": notes_hierarchical_mask(n, NOTES_LEVELS),
        "hierarchical": hierarchical_causal_mask(n, NOTES_LEVELS),
        "notes sliding window": notes_sliding_window_mask(n, window),
        "sliding window": sliding_window_mask(n, window),
    }
    cells = pd.concat([_grid_frame(allowed=m).assign(part=name) for name, m in masks.items()], ignore_index=True)
    stats = pd.DataFrame(
        {
            "part": name,
            "future": int(future_keys(m).sum()),
            "widest": int(m.sum(-1).max()),
            "causal": bool(future_keys(m).sum() == 0),
        }
        for name, m in masks.items()
    )
    return cells, stats


@cached(16)
def renormalised_rows(real: int, yes: str, no: str) -> pd.DataFrame:
    """padding_renormalisation's rows as a table shows them: "real" written as `yes` or `no`."""
    rows, _ = padding_renormalisation(real)
    return rows.assign(real=rows.real.map({True: yes, False: no}))


@cached(64)
def notes_counts(n: int, window: int, names: Mapping[str, str], yes: str, no: str) -> pd.DataFrame:
    """notes_masks' counts as a table shows them: the parts under `names`, "causal" written as `yes` or `no`."""
    _, counts = notes_masks(n, window)
    return counts.assign(part=counts.part.map(names), causal=counts.causal.map({True: yes, False: no}))
