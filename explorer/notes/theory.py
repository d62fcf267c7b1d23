"""The theory of the other pages: kernel regression, temperature, positional codes and parity."""

from __future__ import annotations

import math

import torch

from attn_core.naive import masked_softmax, naive_attention
from attn_core.positional import shift_matrix, single_period_encoding, sinusoidal_encoding
from attn_core.regression import nadaraya_watson
from attn_core.stats import entropy
from explorer.notes.registry import Result, claim, register
from explorer.notes.rules import ROUNDING, identity, max_error
from explorer.notes.samples import qkv, randn, seeded
from explorer.tables.geometry import parity_samples
from explorer.tables.positional import first_collision


@claim("nadaraya_watson", "002")
def _nadaraya_watson(seed: int) -> Result:
    q, k, v, _ = qkv(seed)
    error = float((nadaraya_watson(q, k, v)[0] - naive_attention(q, k, v)[0]).abs().max())
    return Result(
        "attention = Nadaraya–Watson, K = exp(q·k/√d_k)", f"max error {error:.1e}", identity(error), max_error(error)
    )


COLD = (1.0, 0.1, 0.01, 0.001)  # T as a multiple of the gap between the two largest logits
HOT = (10.0, 100.0, 1000.0, 10_000.0)  # T as a multiple of the logits' range


def _toward_argmax(z: torch.Tensor, gap: float) -> list[float]:
    """1 − the argmax's weight at T = gap × COLD, summed from the other weights (no cancellation)."""
    top = int(z.argmax())
    return [math.fsum(w for j, w in enumerate(masked_softmax(z / (gap * c)).tolist()) if j != top) for c in COLD]


def _toward_uniform(z: torch.Tensor, spread: float) -> list[float]:
    """max |p − 1/n| at T = spread × HOT."""
    return [float((masked_softmax(z / (spread * h)) - 1 / len(z)).abs().max()) for h in HOT]


@claim("temperature", "002")
def _temperature(seed: int) -> Result:
    """The limits themselves, on the scale each one depends on: T falls relative to the gap between the two largest
    logits (the limit is as fast as that gap allows) and grows relative to their range; both distances must fall
    at every step, the first to 0 in float64, the second like 1/T. A fixed T = 0.01 judged a lucky draw instead."""
    z = randn(seeded(seed, 25), 8)
    top2 = z.topk(2).values
    gap, spread = float(top2[0] - top2[1]), float(z.max() - z.min())
    cold, hot = _toward_argmax(z, gap), _toward_uniform(z, spread)
    falls = all(b < a or a == b == 0 for a, b in zip(cold, cold[1:], strict=False)) and cold[-1] == 0.0
    shrinks = all(b < a / 5 for a, b in zip(hot, hot[1:], strict=False))  # ~ 1/T: ten times smaller per step
    shown = {name: ", ".join(f"{x:.1e}" if x else "0" for x in xs) for name, xs in (("cold", cold), ("hot", hot))}
    facts = {"gap": gap, **shown}
    computed = f"1 − p_max: {facts['cold']} (T = gap × 1 … 0.001); max |p − 1/8|: {facts['hot']} (T = range × 10 … 10⁴)"
    return Result("T → 0: argmax; T → ∞: uniform", computed, "right" if falls and shrinks else "wrong", facts)


@claim("entropy_increasing", "002")
def _entropy_increasing(seed: int) -> Result:
    z = randn(seeded(seed, 26), 8)
    grid = torch.logspace(-1, 3, 200, dtype=torch.float64)[:, None]  # from 0.1: colder rows are one-hot in fp64
    h = entropy(masked_softmax(z / grid))
    step = float(h.diff().min())
    return Result(
        "H(T) strictly increasing",
        f"smallest step over 200 T: {step:.2e}",
        "right" if step > 0 else "wrong",
        {"step": step},
    )


@claim("pe_dot", "002")
def _pe_dot(seed: int) -> Result:
    """p_n = A (u sin + v cos): p_i.p_j = A^2 cos(2 pi (i-j)/T) only if |u| = |v| = 1."""
    amplitude, period, n = 1.5, 7.0, 10
    angles = 2 * math.pi * torch.arange(n, dtype=torch.float64) / period
    gaps = {}
    for name, (u, v) in {"unit": ((1.0, 0.0), (0.0, 1.0)), "unequal": ((1.0, 0.0), (0.0, 2.0))}.items():
        u_, v_ = torch.tensor(u, dtype=torch.float64), torch.tensor(v, dtype=torch.float64)
        p = amplitude * (torch.sin(angles)[:, None] * u_ + torch.cos(angles)[:, None] * v_)  # (n, 2)
        offset = angles[:, None] - angles[None, :]
        gaps[name] = float((p @ p.T - amplitude**2 * torch.cos(offset)).abs().max())
    computed = f"|u| = |v| = 1: max error {gaps['unit']:.1e}; |u| = 1, |v| = 2: {gaps['unequal']:.3g}"
    return Result(
        "pᵢ·pⱼ = A² cos(2π(i−j)/T)", computed, "inexact" if gaps["unit"] < ROUNDING < gaps["unequal"] else "wrong", gaps
    )


@claim("aliasing", "002")
def _aliasing(seed: int) -> Result:
    codes = single_period_encoding(20, 7)
    gap = float((codes[3] - codes[10]).abs().max())
    return Result("code(j) = code(j + T)", f"T = 7: |code(3) − code(10)| = {gap:.1e}", identity(gap), {})


@claim("coprime", "002")
def _coprime(seed: int) -> Result:
    periods = (3, 4, 5)
    first = first_collision(periods, limit=100)
    return Result(
        "repeat only after lcm",
        f"periods 3, 4, 5: first repeat at {first} (lcm = {math.lcm(*periods)})",
        "right" if first == math.lcm(*periods) else "wrong",
        {"first": first, "lcm": math.lcm(*periods)},
    )


@claim("pe_rotation", "003")
def _pe_rotation(seed: int) -> Result:
    pe = sinusoidal_encoding(40, 16)
    error = float((pe[30] - shift_matrix(7, 16) @ pe[23]).abs().max())
    computed = f"pos 23, k = 7, d = 16: max error {error:.1e}"
    return Result("PE(pos + k) = M_k PE(pos)", computed, identity(error), {"error": error})


def _parity(score: str, residual: str):
    def check(seed: int) -> Result:
        _, stats, _ = parity_samples(8, 16, seed)  # the geometry page's check, on the same seed
        value = stats[score][residual]
        label = "s(−q, −k) = s(q, k)" if score == "dot product" else "e(−q, −k) = −e(q, k)"
        return Result(label, f"max residual {value:.1e}", identity(value), {"residual": value, "form": "max_residual"})

    return check


register("additive_odd", "002", check=_parity("additive", "odd"))
register("dot_even", "002", check=_parity("dot product", "even"))


@claim("exp_neg_inf", "003")
def _exp_neg_inf(seed: int) -> Result:
    return Result("e^(−∞) = 0", f"{math.exp(float('-inf')):g}", "right", {})
