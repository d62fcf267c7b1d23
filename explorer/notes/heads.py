"""Heads and parameters: the reference models' d_k and the parameter counts the notes compare."""

from __future__ import annotations

from attn_core.multihead import MultiHeadAttention
from attn_core.regression import AdditiveAttention, parameter_count
from explorer.notes.registry import Result, claim, register
from explorer.tables.geometry import parity_samples
from explorer.tables.multihead import references


def _reference(model: str):
    def check(seed: int) -> Result:
        row = references().set_index("model").loc[model]
        stated = {"BERT-base": 64, "GPT-3 175B": 128}[model]
        text = f"{row.d_model} / {row.heads} = {row.d_k}"
        return Result(f"d_k = {stated}", text, "right" if row.d_k == stated else "wrong", {})

    return check


register("bert_d_k", "000", check=_reference("BERT-base"))
register("gpt3_d_k", "000", check=_reference("GPT-3 175B"))


@claim("params_same", "000", "004")
def _params_same(seed: int) -> Result:
    counts = {h: parameter_count(MultiHeadAttention(64, h, device="meta")) for h in (1, 2, 4, 8, 16)}
    same = len(set(counts.values())) == 1
    computed = "d_model = 64, h = 1, 2, 4, 8, 16: " + ", ".join(f"{c:,}" for c in counts.values())
    return Result("same for every h", computed, "right" if same else "wrong", {"count": counts[1]})


@claim("additive_params", "000")
def _additive_params(seed: int) -> Result:
    d = 64
    count = parameter_count(AdditiveAttention(d, d, d))
    return Result(
        "O(d_k²)", f"d_k = d_hidden = {d}: {count:,} = 2·{d}² + {d}", "right" if count == 2 * d * d + d else "wrong", {}
    )


@claim("dot_params", "000")
def _dot_params(seed: int) -> Result:
    _, _, params = parity_samples(8, 8, seed, n_pairs=1)
    dot = int(params.set_index("score").loc["dot product", "parameters"])
    return Result("O(d_k)", f"q·k/√d_k: {dot} parameters", "inexact" if dot == 0 else "right", {"dot": dot})
