"""The notes' softmax numbers and printed weight rows: the true weights beside the printed digits."""

from __future__ import annotations

import math

import numpy as np
import torch

from attn_core.naive import masked_softmax, naive_attention
from explorer.notes.registry import Result, claim, register
from explorer.notes.rules import identity, printed_verdict, softmax64, upper, vec
from explorer.notes.samples import qkv


def _softmax_claim(logits, stated, decimals):
    def check(seed: int) -> Result:
        true = softmax64(logits)
        tails = [math.fsum(true[:i] + true[i + 1 :]) for i in range(len(true))]  # 1 - p_i, from the others
        verdict, error = printed_verdict(stated, true, decimals, tails)
        printed = np.array(stated) > 0
        ratio = np.array(stated)[printed] / np.array(true)[printed]
        facts = {"error": error, "factor": float(np.maximum(ratio, 1 / ratio).max()), "smallest": min(true)}
        facts["error_bound"] = upper(error)
        shown = [f"1 − {tail:.2g}" if tail < 1e-4 else f"{p:.4g}" for p, tail in zip(true, tails, strict=True)]
        return Result(vec(stated, f".{decimals}f"), "[" + ", ".join(shown) + "]", verdict, facts)

    return check


register("softmax_8_2_1", "000", check=_softmax_claim((8, 2, 1), (0.87, 0.09, 0.04), 2))
register("softmax_20", "000", check=_softmax_claim((20, -20), (0.9999, 0.0), 4))
register("softmax_3", "000", check=_softmax_claim((3, -3), (0.95, 0.05), 2))


@claim("scaled_row", "000")
def _scaled_row(seed: int) -> Result:
    true = (torch.tensor([20.0, 0.0, -20.0], dtype=torch.float64) / math.sqrt(64)).tolist()
    verdict = identity(max(abs(a - b) for a, b in zip(true, (2.5, 0.0, -2.5), strict=True)))
    return Result("[20, 0, −20] / √64 = [2.5, 0, −2.5]", vec(true), verdict, {})


register("softmax_20_0", "000", check=_softmax_claim((20, 0, -20), (0.9999, 0.0001, 0.0), 4))
register("softmax_2_5", "000", check=_softmax_claim((2.5, 0, -2.5), (0.92, 0.08, 0.0), 2))


@claim("softmax_padding", "000")
def _padding_example(seed: int) -> Result:
    """The padding section: softmax of [0.3, 0.2, 0.4] printed as each logit over their sum."""
    logits, stated = (0.3, 0.2, 0.4), (0.33, 0.22, 0.44)
    true = softmax64(logits)
    verdict, error = printed_verdict(stated, true, 2)
    by_sum = [x / sum(logits) for x in logits]
    return Result(vec(stated, ".2f"), vec(true, ".3f"), verdict, {"error": error, "by_sum": vec(by_sum, ".3f")})


@claim("row_sum", "000", "003", "004")
def _row_sum(seed: int) -> Result:
    _, a = naive_attention(*qkv(seed)[:3])
    error = float((a.sum(-1) - 1).abs().max())
    return Result("Σⱼ Aᵢⱼ = 1", f"max |row sum − 1| = {error:.1e}", identity(error), {"error": error})


EXAMPLE_ROWS = (
    (0.05, 0.85, 0.05, 0.02, 0.02, 0.01),  # 000 §1: generating "猫"
    (0.05, 0.85, 0.10),  # 000 §3.1: The / cat / sits
    (0.1, 0.2, 0.4, 0.2, 0.1),  # 000 §6.3: soft routing
    (0.05, 0.05, 0.85, 0.03, 0.02),  # 000 §6.3: concentrated
    (0.18, 0.22, 0.24, 0.19, 0.17),  # 000 §6.3: spread
    (0.45, 0.05, 0.05, 0.05, 0.40),  # 000 §6.3: two peaks
    (0.1, 0.7, 0.2, 0.0, 0.0),  # 000 §6.4: cooperating heads
    (0.0, 0.8, 0.1, 0.1, 0.0),
    (0.8, 0.1, 0.1, 0.0, 0.0),  # 000 §6.4: complementary heads
    (0.0, 0.1, 0.1, 0.8, 0.0),
    (0.9, 0.1, 0.0, 0.0, 0.0),  # 000 §6.4: competing heads, head 1
)


COMPETING_ROW = (0.0, 0.0, 0.0, 0.0, 0.9)  # 000 §6.4: competing heads, head 2


@claim("example_rows", "000")
def _example_rows(seed: int) -> Result:
    sums = [math.fsum(r) for r in EXAMPLE_ROWS]
    ok = all(abs(s - 1) < 1e-9 for s in sums)
    return Result(
        f"{len(EXAMPLE_ROWS)} rows, Σ = 1",
        "sums: " + ", ".join(f"{s:.2f}" for s in sums),
        "right" if ok else "wrong",
        {"sums": ", ".join(f"{s:.2f}" for s in sums)},
    )


@claim("competing_row", "000")
def _competing_row(seed: int) -> Result:
    total = math.fsum(COMPETING_ROW)
    return Result(
        vec(COMPETING_ROW, ".1f"), f"Σ = {total:.2f}", "right" if abs(total - 1) < 1e-9 else "wrong", {"sum": total}
    )


@claim("orthogonal_key", "001")
def _orthogonal_key(seed: int) -> Result:
    weights = softmax64((2.0, 0.0, -1.0))  # the second key is orthogonal to the query: q.k = 0
    return Result(
        "q·k = 0 ⇒ no influence",
        f"softmax([2, 0, −1])₂ = {weights[1]:.3f}",
        "wrong" if weights[1] > 0 else "right",
        {"weight": weights[1]},
    )


@claim("overflow", "001")
def _overflow(seed: int) -> Result:
    z = torch.tensor([100.0, 0.0])  # float32: e^100 overflows
    textbook = torch.exp(z) / torch.exp(z).sum()
    stable = masked_softmax(z)
    shifted = float((masked_softmax(z + 1000.0) - stable).abs().max())
    facts = {"textbook": vec(textbook.tolist(), ".3g"), "stable": vec(stable.tolist(), ".3g"), "shifted": shifted}
    computed = f"float32 [100, 0]: eᶻ/Σeᶻ = {facts['textbook']}, stable {facts['stable']}; shift by 1000: {shifted:g}"
    return Result("large zᵢ ⇒ overflow", computed, "inexact", facts)
