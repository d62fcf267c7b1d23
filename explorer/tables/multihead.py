"""Tables for "Multi-head attention": per-head maps of a toy sentence, the shapes of every step, parameter counts.

Tokens are plain strings; each gets a toy embedding drawn from (seed, token), so a repeated word has one vector.
The weights of the module come from the seed as well: N(0, 1/d_model) entries, zero biases.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pandas as pd
import torch

from attn_core.multihead import MultiHeadAttention
from attn_core.regression import parameter_count
from explorer.ui.cache import cached

D_MODELS = (8, 12, 16, 24, 32, 48, 64)
MAX_TOKENS = 12
MAX_TOKEN_CHARS = 16
MAX_TEXT_CHARS = 200
# (name, d_model, heads) as published for BERT-base and GPT-3 175B; d_k is computed from a real module.
REFERENCES = (("BERT-base", 768, 12), ("GPT-3 175B", 12288, 96))
_TOKEN = re.compile(r"[^\W_][\w'’.,!?-]*", re.UNICODE)  # starts with a letter or digit, any script


def divisors(n: int) -> tuple[int, ...]:
    """Every h that splits n evenly: the head counts MultiHeadAttention(n, h) accepts."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return tuple(h for h in range(1, n + 1) if n % h == 0)


def parse_tokens(text: str, what: str = "sentence") -> tuple[str, ...]:
    """Split on whitespace: 1..MAX_TOKENS words, each a word of letters/digits (any script), at most MAX_TOKEN_CHARS."""
    if not isinstance(text, str):
        raise ValueError(f"the {what} must be text")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"the {what} is longer than {MAX_TEXT_CHARS} characters")
    tokens = tuple(text.split())
    if not tokens:
        raise ValueError(f"the {what} is empty: type a few words separated by spaces")
    if len(tokens) > MAX_TOKENS:
        raise ValueError(f"the {what} has {len(tokens)} words; at most {MAX_TOKENS} fit the maps")
    for i, t in enumerate(tokens, start=1):  # the message names the word's place, never echoes raw text
        if len(t) > MAX_TOKEN_CHARS:
            raise ValueError(f"word {i} of the {what} is longer than {MAX_TOKEN_CHARS} characters")
        if not _TOKEN.fullmatch(t):
            raise ValueError(
                f"word {i} of the {what} is not a plain word: use letters, digits and simple punctuation (' . , ! ? -)"
            )
    return tokens


def toy_embeddings(tokens: tuple[str, ...], d_model: int, seed: int) -> torch.Tensor:
    """(n, d_model) float64: token t's vector is N(0, 1) from a generator seeded by (seed, crc32(t))."""
    rows = []
    for t in tokens:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(t.encode()))
        rows.append(torch.randn(d_model, generator=gen, dtype=torch.float64))
    return torch.stack(rows)  # (n, d_model)


def toy_module(d_model: int, num_heads: int, seed: int) -> MultiHeadAttention:
    """A float64 MultiHeadAttention whose weights are N(0, 1/d_model) from the seed and biases zero.

    With unit-variance inputs this keeps q and k entries near unit variance, so the maps are neither flat nor
    one-hot; the same seed gives the same W_q, W_k, W_v, W_o for every h (only the split into heads changes).
    """
    # the default init draws from torch's global generator: restored after (built on "meta" instead, the first one
    # imports sympy, ~0.3 s of CPU in a page's first run)
    with torch.random.fork_rng(devices=[]):
        mha = MultiHeadAttention(d_model, num_heads, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in (mha.w_q, mha.w_k, mha.w_v, mha.w_o):
            layer.weight.copy_(torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / d_model**0.5)
            layer.bias.zero_()
    return mha


def _labels(tokens: tuple[str, ...]) -> list[str]:
    """Position-prefixed labels, so a repeated word keeps two rows: '0 the', '4 the'."""
    return [f"{i} {t}" for i, t in enumerate(tokens)]


@cached(64)
def forward_tables(
    query_tokens: tuple[str, ...], key_tokens: tuple[str, ...] | None, d_model: int, num_heads: int, seed: int
) -> dict:
    """Run MultiHeadAttention on the toy sentence(s) and lay out what every step produced.

    key_tokens None is self-attention; otherwise queries come from query_tokens and keys/values from key_tokens.
    Returns a dict: maps (head, query, key, q_label, k_label, weight), concat (query, q_label, feature, head,
    value) the concatenated head outputs that enter W_o, shapes (step, tensor, shape), d_k, and check: the largest
    |difference| between the module's output and concat @ W_o^T + b (0 up to rounding).
    """
    mha = toy_module(d_model, num_heads, seed)
    x_q = toy_embeddings(query_tokens, d_model, seed)[None]  # (1, n_q, d_model)
    x_kv = x_q if key_tokens is None else toy_embeddings(key_tokens, d_model, seed)[None]  # (1, n_k, d_model)
    seen = {}
    hooks = [
        layer.register_forward_hook(lambda _m, args, out, name=name: seen.__setitem__(name, (args[0], out)))
        for name, layer in (("q", mha.w_q), ("k", mha.w_k), ("v", mha.w_v), ("o", mha.w_o))
    ]
    with torch.no_grad():
        out, weights = mha(x_q, None if key_tokens is None else x_kv)  # (1, n_q, d_model), (1, H, n_q, n_k)
        concat = seen["o"][0][0]  # (n_q, d_model): what W_o receives
        check = float((out[0] - (concat @ mha.w_o.weight.T + mha.w_o.bias)).abs().max())
    for h in hooks:
        h.remove()
    n_q, n_k, d_k = x_q.shape[1], x_kv.shape[1], mha.d_k
    q_labels, k_labels = _labels(query_tokens), _labels(key_tokens if key_tokens is not None else query_tokens)
    return {
        "maps": _maps_frame(weights[0], q_labels, k_labels),
        "concat": _concat_frame(concat, q_labels, d_k),
        "shapes": _shapes_frame(x_q, x_kv, seen, weights, out, num_heads, d_k, key_tokens is None),
        "d_k": d_k,
        "n_q": n_q,
        "n_k": n_k,
        "check": check,
    }


def _maps_frame(weights: torch.Tensor, q_labels: list[str], k_labels: list[str]) -> pd.DataFrame:
    h, n_q, n_k = weights.shape
    head, q, k = np.meshgrid(np.arange(h), np.arange(n_q), np.arange(n_k), indexing="ij")
    return pd.DataFrame(
        {
            "head": head.ravel(),
            "query": q.ravel(),
            "key": k.ravel(),
            "q_label": np.array(q_labels)[q.ravel()],
            "k_label": np.array(k_labels)[k.ravel()],
            "weight": weights.numpy().ravel(),
        }
    )


def _concat_frame(concat: torch.Tensor, q_labels: list[str], d_k: int) -> pd.DataFrame:
    n_q, d_model = concat.shape
    q, f = np.meshgrid(np.arange(n_q), np.arange(d_model), indexing="ij")
    return pd.DataFrame(
        {
            "query": q.ravel(),
            "q_label": np.array(q_labels)[q.ravel()],
            "feature": f.ravel(),
            "head": f.ravel() // d_k,
            "value": concat.numpy().ravel(),
        }
    )


def _shapes_frame(x_q, x_kv, seen, weights, out, num_heads, d_k, self_attention) -> pd.DataFrame:
    """Each step (an identifier the page names) with the shape of the tensor it really produced (batch of 1 dropped).

    The keys' and values' input is X in self-attention and Y, the second sentence, in cross-attention.
    """

    def shape(t) -> str:
        return "(" + ", ".join(str(s) for s in tuple(t.shape)[1:]) + ")"

    n_q, n_k = x_q.shape[1], x_kv.shape[1]
    source = "X" if self_attention else "Y"
    rows = [
        ("input_q", "X", shape(x_q)),
        ("input_kv", source, shape(x_kv)),
        ("project", "Q = X W_q", shape(seen["q"][1])),
        ("project", f"K = {source} W_k", shape(seen["k"][1])),
        ("project", f"V = {source} W_v", shape(seen["v"][1])),
        ("split", "Q_i, i = 1..h", f"{num_heads} × ({n_q}, {d_k})"),
        ("split", "K_i, V_i, i = 1..h", f"{num_heads} × ({n_k}, {d_k})"),
        ("attend", "softmax(Q_i K_iᵀ/√d_k)", f"{num_heads} × {shape(weights[0])}"),
        ("attend", "head_i = weights_i V_i", f"{num_heads} × ({n_q}, {d_k})"),
        ("concat", "Concat(head_1..head_h)", shape(seen["o"][0])),
        ("mix", "output = Concat W_o", shape(out)),
    ]
    return pd.DataFrame(rows, columns=["step", "tensor", "shape"])


@cached(16)
def parameter_sweep(d_model: int) -> pd.DataFrame:
    """For every h dividing d_model: d_k, the parameter count of a real module (on "meta": no memory) and the
    multiply-adds of Q K^T per query/key pair summed over heads (macs_per_pair = h * d_k, always d_model)."""
    rows = []
    for h in divisors(d_model):
        mha = MultiHeadAttention(d_model, h, device="meta")
        rows.append({"heads": h, "d_k": mha.d_k, "parameters": parameter_count(mha), "macs_per_pair": h * mha.d_k})
    return pd.DataFrame(rows)


@cached(1)
def references() -> pd.DataFrame:
    """BERT-base and GPT-3, one row each: d_model and h as published, d_k read from a real MultiHeadAttention on
    "meta", its parameter count, and whether every divisor h of d_model gives that count (same_count, over
    n_divisors values of h)."""
    rows = []
    for name, d_model, h in REFERENCES:
        mha = MultiHeadAttention(d_model, h, device="meta")
        counts = {parameter_count(MultiHeadAttention(d_model, g, device="meta")) for g in divisors(d_model)}
        rows.append(
            {
                "model": name,
                "d_model": d_model,
                "heads": h,
                "d_k": mha.d_k,
                "parameters": parameter_count(mha),
                "same_count": len(counts) == 1,
                "n_divisors": len(divisors(d_model)),
            }
        )
    return pd.DataFrame(rows)
