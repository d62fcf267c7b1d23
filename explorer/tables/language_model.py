"""Tables for "Inside a small language model": the shipped character model read on one typed text, as DataFrames.

The model (attn_core.learn.charlm, checkpoint explorer/data/char_lm.pt) is loaded once per process. Every
table here is a function of the text alone, kept per text for the whole server (@cached).
"""

from __future__ import annotations

import functools
import math
import pathlib
from collections.abc import Mapping

import pandas as pd
import torch

from attn_core.learn import charlm
from explorer.ui.cache import cached

CHECKPOINT = pathlib.Path(__file__).resolve().parents[1] / "data" / "char_lm.pt"
MAX_TEXT = 80  # characters: 8 maps of up to 80 x 80 stay a few thousand cells once near-zero ones are dropped
SHOWN_WEIGHT = 0.01  # map cells below this are left out of the chart (blank = about 0)
TOP = 5  # next-character candidates shown
SCORE_COLUMNS = ("previous_token", "induction", "duplicate_token", "first_token", "local")
VISIBLE = {" ": "␣", "\n": "⏎"}
# Texts a class can start from (the model reads English characters, so they stay English in every language). With
# the probe phrases they are also what the role thresholds are derived from (thresholds()).
EXAMPLES = {
    "repeat": "the cat sat on the mat. the cat sat on the mat.",
    "code": "def area(r): return 3.14 * r * r; def area(r): return 3.14 * r * r",
    "plain": "A list is a mutable sequence, and a tuple is an immutable one.",
}


@functools.cache
def shipped():
    """(model, checkpoint entries): loaded once per process."""
    return charlm.load_checkpoint(CHECKPOINT)


@functools.cache
def calibration() -> dict[str, torch.Tensor]:
    """Every head's scores on the probe phrases and EXAMPLES (charlm.calibration_scores), once per process."""
    return charlm.calibration_scores(shipped()[0], EXAMPLES.values())


@functools.cache
def thresholds() -> dict[str, float | None]:
    """Each score's role threshold, derived from calibration() (charlm.split_threshold); None: no group of heads
    stands apart on that score, so it names no head."""
    return {name: charlm.split_threshold(values) for name, values in calibration().items()}


def calibration_sizes() -> dict[str, int]:
    """How many values each threshold comes from: heads x (probe phrases + examples)."""
    model = shipped()[0]
    heads = model.layers * model.num_heads
    return {
        "heads": heads,
        "phrases": len(charlm.PROBE_PHRASES),
        "examples": len(EXAMPLES),
        "values": heads * (len(charlm.PROBE_PHRASES) + len(EXAMPLES)),
    }


def head_range(score: str, name: str) -> tuple[float, float]:
    """(lowest, highest) of head `name` ('layer.head', 1-based) on `score` over the probe phrases and EXAMPLES."""
    model = shipped()[0]
    layer, head = (int(x) - 1 for x in name.split("."))
    values = calibration()[score].reshape(-1, model.layers, model.num_heads)[:, layer, head]
    values = values[~values.isnan()]
    return float(values.min()), float(values.max())


@functools.cache
def model_summary() -> dict:
    """The recipe and measured numbers the checkpoint carries, and its parameter count and file size (once per
    process; read-only)."""
    model, meta = shipped()
    return {
        **charlm.config_dict(charlm.config_from_dict(meta["recipe"])),
        **meta["measured"],
        "parameters": sum(p.numel() for p in model.parameters()),
        "kilobytes": CHECKPOINT.stat().st_size / 1024,
        "corpus_sha256": meta["corpus_sha256"],
    }


def text_problem(text: str) -> tuple[str, dict] | None:
    """What keeps `text` from the model, as (problem, fields) for the page to word, or None.

    Problems: "short" (fewer than 2 characters), "long" (more than MAX_TEXT), "chars" (outside the alphabet).
    """
    if len(text) < 2:
        return "short", {}
    if len(text) > MAX_TEXT:
        return "long", {"n": MAX_TEXT, "got": len(text)}
    unknown = charlm.unknown_characters(text)
    if unknown:
        return "chars", {"chars": ", ".join(_named(ch) for ch in unknown[:5])}
    return None


def _named(ch: str) -> str:
    """A character the model cannot read, by its code point (and itself when it prints as a visible glyph: a
    control or direction mark shown raw could reorder the message around it)."""
    code = f"U+{ord(ch):04X}"
    return f"{ch} {code}" if ch.isprintable() and not ch.isspace() else code


def shown(ch: str) -> str:
    """A character as an axis label can show it (space and newline visible)."""
    return VISIBLE.get(ch, ch)


@functools.lru_cache(maxsize=32)
def _read(text: str) -> charlm.Reading:
    return charlm.read(shipped()[0], text)


def labels(text: str) -> list[str]:
    return [f"{i} {shown(c)}" for i, c in enumerate(text)]


def attention_cells(text: str) -> pd.DataFrame:
    """layer, head, query, key, q_label, k_label, weight: every causal cell of every head's map with weight >=
    SHOWN_WEIGHT (rows = queries, columns = keys)."""
    w = _read(text).weights  # (L, H, n, n)
    layer, head, query, key = torch.nonzero(w >= SHOWN_WEIGHT, as_tuple=True)
    names = labels(text)
    return pd.DataFrame(
        {
            "layer": layer.numpy() + 1,
            "head": head.numpy() + 1,
            "query": query.numpy(),
            "key": key.numpy(),
            "q_label": [names[i] for i in query.tolist()],
            "k_label": [names[j] for j in key.tolist()],
            "weight": w[layer, head, query, key].double().numpy(),
        }
    )


@cached(64)
def layer_cells(text: str, layer: int) -> pd.DataFrame:
    """attention_cells of one layer (1-based)."""
    cells = attention_cells(text)
    return cells[cells["layer"] == layer].reset_index(drop=True)


def layers() -> int:
    return shipped()[0].layers


@cached(32)
def head_table(text: str) -> pd.DataFrame:
    """One row per head: layer, head (1-based), its scores on the text, entropy, the uniform entropy, its role."""
    r = _read(text)
    roles = charlm.head_roles(r.scores, thresholds())
    n_layers, n_heads = r.scores["entropy"].shape
    uniform = uniform_entropy(len(text))
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            row = {"layer": layer + 1, "head": head + 1}
            row |= {name: _value(r.scores[name][layer, head]) for name in (*SCORE_COLUMNS, "entropy")}
            rows.append(row | {"uniform_entropy": uniform, "role": roles[layer][head]})
    return pd.DataFrame(rows)


@cached(64)
def strongest(text: str, score: str) -> dict:
    """The head with the highest `score` on the text (NaN scores skipped; NaN when every head's is): its name
    ('layer.head'), layer, value, and role: whether it earns the score's role (its derived threshold exists and the
    value reaches it)."""
    heads = head_table(text)
    row = heads.loc[heads[score].fillna(-1).idxmax()]
    value, threshold = float(row[score]), thresholds()[score]
    name, layer = f"{row['layer']}.{row['head']}", int(row["layer"])
    return {"name": name, "layer": layer, "value": value, "role": threshold is not None and value >= threshold}


def _value(x) -> float:
    value = float(x)
    return value if math.isfinite(value) else float("nan")


def uniform_entropy(n: int) -> float:
    """Mean of ln(i+1) over queries i = 1..n-1: the entropy a head that spreads evenly over what it may see has."""
    return sum(math.log(i + 1) for i in range(1, n)) / max(1, n - 1)


def uniform_first_token(n: int) -> float:
    """Mean of 1/(i+1) over queries i = 1..n-1: the first-token score of evenly spread rows."""
    return sum(1 / (i + 1) for i in range(1, n)) / max(1, n - 1)


@cached(32)
def roles_shown(text: str, roles: Mapping[str, str]) -> pd.DataFrame:
    """head_table's layer, head and role, the role in the viewer's words (`roles`): the table under the grid."""
    heads = head_table(text)
    return heads.assign(role=heads["role"].map(roles))[["layer", "head", "role"]]


@cached(32)
def entropy_rows(text: str) -> pd.DataFrame:
    """head_table's layer, head, entropy and uniform_entropy: the entropy chart's CSV."""
    return head_table(text)[["layer", "head", "entropy", "uniform_entropy"]]


@cached(32)
def long_scores(text: str) -> pd.DataFrame:
    """head_table melted for the score grid: layer, head, score, value."""
    heads = head_table(text)
    return heads.melt(id_vars=["layer", "head"], value_vars=list(SCORE_COLUMNS), var_name="score")


@cached(32)
def entropy_by_layer(text: str) -> pd.DataFrame:
    """layer, entropy (mean over its heads), uniform_entropy."""
    return (
        head_table(text)
        .groupby("layer", as_index=False)
        .agg(entropy=("entropy", "mean"), uniform_entropy=("uniform_entropy", "first"))
    )


@cached(32)
def positions(text: str) -> pd.DataFrame:
    """One row per position i < n-1: the character, the next one, the model's top guess, p(next), loss (nats), and
    whether the pair (x_i, x_i+1) occurred earlier (copying could predict it)."""
    r = _read(text)
    top = r.probs[:-1].argmax(dim=-1)
    p_next = r.probs[:-1].gather(1, r.tokens[1:, None])[:, 0]
    return pd.DataFrame(
        {
            "position": range(len(text) - 1),
            "char": [shown(c) for c in text[:-1]],
            "next": [shown(c) for c in text[1:]],
            "predicted": [shown(charlm.ALPHABET[t]) for t in top.tolist()],
            "p_next": p_next.double().numpy(),
            "loss": r.losses.double().numpy(),
            "repeated": r.repeated.numpy(),
        }
    )


@cached(32)
def next_characters(text: str) -> pd.DataFrame:
    """rank, char, probability: the model's TOP likeliest characters after the whole text."""
    p, idx = _read(text).probs[-1].topk(TOP)
    return pd.DataFrame(
        {
            "rank": range(1, TOP + 1),
            "char": [shown(charlm.ALPHABET[i]) for i in idx.tolist()],
            "probability": p.double().numpy(),
        }
    )


@cached(32)
def loss_split(text: str) -> dict[str, float]:
    """Mean loss (nats) on repeated pairs and on first-seen ones, with their counts (NaN where there are none)."""
    df = positions(text)
    out = {}
    for name, part in (("repeated", df[df["repeated"]]), ("first_seen", df[~df["repeated"]])):
        out[name] = float(part["loss"].mean()) if len(part) else float("nan")
        out[f"{name}_count"] = len(part)
    return out
