"""Every checkable claim of the five lecture notes, recomputed live: the one source of truth for every page.

A claim is a key (its text, place and one-line explanation are strings in locales/<lang>/notes.toml),
the notes file it comes from, and a check that recomputes it with attn_core. A check returns what the
notes print, the true value, a verdict and the numbers its explanation quotes:

    right    the statement holds: every printed digit is the true value rounded or cut, or an identity
             holds to floating-point rounding, or a measured value lies within 4 standard errors
    inexact  the idea holds but a printed number or a condition is off (close, or true only in a case)
    wrong    the statement is false as printed

Pages that judge one of these claims (saturation, masks, equivariance, worked example) read it here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

import numpy as np
import pandas as pd
import torch

from attn_core.backward import attention_backward, attention_backward_autograd
from attn_core.bilinear import asymmetry, gram, projected_scores
from attn_core.masks import block_causal_mask, causal_mask, future_keys, padding_mask, sliding_window_mask
from attn_core.multihead import MultiHeadAttention
from attn_core.naive import masked_softmax, naive_attention, renormalise
from attn_core.notes import (
    notes_block_causal_mask,
    notes_hierarchical_mask,
    notes_masked_fill,
    notes_sliding_window_mask,
)
from attn_core.positional import shift_matrix, single_period_encoding, sinusoidal_encoding
from attn_core.regression import AdditiveAttention, nadaraya_watson, parameter_count
from attn_core.stats import (
    cosine_similarity_samples,
    entropy,
    jacobian_norm,
    normal_mass,
    sample_scores,
    score_mass,
    score_statistics,
    share_within,
    softmax_jacobian,
    theoretical_score_kurtosis,
)
from attn_core.symmetry import equivariance_error, permutation_matrix
from attn_core.tiled import tiled_attention
from explorer.tables.flash import causal_skipped_tiles, n_tiles
from explorer.tables.geometry import parity_samples
from explorer.tables.multihead import references
from explorer.tables.positional import first_collision

FILES = ("000", "001", "002", "003", "004")  # seeds/000_... to 004_...: their titles are in notes.files
VERDICTS = ("right", "inexact", "wrong")
SAMPLES = 20_000  # pairs per measured claim: a share near 99.7% to +-0.04%, a variance to about 1%
SAMPLES_HIGH_D = 4_000  # at d_k = 512 each pair costs 8 times more; the claims there need less precision
SIGMAS = 4  # a measured value passes within 4 standard errors (two-sided p ~ 6e-5)
ROUNDING = 1e-12  # what float64 may add to an identity that holds exactly


@dataclass(frozen=True)
class Result:
    notes: str  # what the notes print: numbers or a formula, language-neutral
    computed: str  # the true value, computed now
    verdict: str  # one of VERDICTS
    facts: dict  # the numbers the one-line explanation quotes (notes.why.<key>)


@dataclass(frozen=True)
class Claim:
    key: str
    files: tuple[str, ...]  # the notes that state it (the first is where the locator points)
    check: Callable[[int], Result]  # seed -> Result


# 1. Small helpers: printed digits, formatting, seeded draws.


def _vec(values, spec: str = ".4g") -> str:
    return "[" + ", ".join(f"{float(x):{spec}}" for x in values) + "]"


def _upper(x: float, digits: int = 2) -> str:
    """x >= 0 rounded *up* to `digits` significant digits, as text: a bound a sentence may state ("within 2e-04").

    Rounding to nearest would print 1e-04 for 1.4e-04, a false bound.
    """
    if x <= 0:
        return "0"
    d = Decimal(x)  # the float's exact value: no rounding before the ceiling
    q = d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=ROUND_CEILING)
    return format(q, "f") if Decimal("0.001") <= q < 10_000 else format(q, f".{digits - 1}e")


def _fits_digits(printed: float, true: float, decimals: int, below_one: float | None = None) -> bool:
    """True when `printed` is `true` rounded to `decimals`, or cut there (0.99999 printed as 0.9999...).

    below_one: 1 - true computed without cancellation (a softmax weight's complement is the sum of the
    others); a weight of 1 - 4e-18 is 1.0 in float64, but cut to 4 decimals it is 0.9999.
    """
    unit = 10.0**-decimals
    rounded = abs(printed - true) <= unit / 2 * (1 + 1e-9)
    cut_value = 1 - unit if below_one is not None and 0 < below_one < unit else math.trunc(true / unit) * unit
    return rounded or abs(printed - cut_value) <= unit * 1e-6


def _printed(stated: Sequence[float], true: Sequence[float], decimals: int, tails=None) -> tuple[str, float]:
    """Verdict for numbers printed to `decimals`: right if every one fits, inexact within 2 units, else wrong."""
    error = max(abs(s - t) for s, t in zip(stated, true, strict=True))
    tails = tails or [None] * len(true)
    if all(_fits_digits(s, t, decimals, b) for s, t, b in zip(stated, true, tails, strict=True)):
        return "right", error
    return ("inexact" if error <= 2 * 10.0**-decimals * (1 + 1e-9) else "wrong"), error


def _max_error(error: float) -> dict:
    """The facts of a result said as "max error …" (its words in notes.computed.max_error)."""
    return {"error": error, "form": "max_error"}


def _identity(error: float, scale: float = 1.0) -> str:
    return "right" if error <= ROUNDING * max(1.0, scale) else "wrong"


def _measured(value: float, claimed: float, stderr: float, rounding: float = 0.0) -> str:
    return "right" if abs(value - claimed) <= rounding + SIGMAS * stderr else "wrong"


@functools.lru_cache(maxsize=8)
def _scores(d_k: int, seed: int) -> torch.Tensor:
    """q.k for one seeded draw of pairs, shared by every claim at this d_k (drawing is the slow part)."""
    return sample_scores(d_k, SAMPLES if d_k < 512 else SAMPLES_HIGH_D, seed=seed)


def _gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1009 + salt)


def _randn(gen: torch.Generator, *shape) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _softmax(values) -> list[float]:
    return masked_softmax(torch.tensor(values, dtype=torch.float64)).tolist()


# 2. Softmax of the notes' rows.


def _softmax_claim(logits, stated, decimals):
    def check(seed: int) -> Result:
        true = _softmax(logits)
        tails = [math.fsum(true[:i] + true[i + 1 :]) for i in range(len(true))]  # 1 - p_i, from the others
        verdict, error = _printed(stated, true, decimals, tails)
        printed = np.array(stated) > 0
        ratio = np.array(stated)[printed] / np.array(true)[printed]
        facts = {"error": error, "factor": float(np.maximum(ratio, 1 / ratio).max()), "smallest": min(true)}
        facts["error_bound"] = _upper(error)
        shown = [f"1 − {tail:.2g}" if tail < 1e-4 else f"{p:.4g}" for p, tail in zip(true, tails, strict=True)]
        return Result(_vec(stated, f".{decimals}f"), "[" + ", ".join(shown) + "]", verdict, facts)

    return check


def _padding_example(seed: int) -> Result:
    """The padding section: softmax of [0.3, 0.2, 0.4] printed as each logit over their sum."""
    logits, stated = (0.3, 0.2, 0.4), (0.33, 0.22, 0.44)
    true = _softmax(logits)
    verdict, error = _printed(stated, true, 2)
    by_sum = [x / sum(logits) for x in logits]
    return Result(_vec(stated, ".2f"), _vec(true, ".3f"), verdict, {"error": error, "by_sum": _vec(by_sum, ".3f")})


def _scaled_row(seed: int) -> Result:
    true = (torch.tensor([20.0, 0.0, -20.0], dtype=torch.float64) / math.sqrt(64)).tolist()
    verdict = _identity(max(abs(a - b) for a, b in zip(true, (2.5, 0.0, -2.5), strict=True)))
    return Result("[20, 0, −20] / √64 = [2.5, 0, −2.5]", _vec(true), verdict, {})


def _jacobian_of(logits) -> float:
    """‖J‖_F of softmax at `logits`, its diagonal p_i(1 − p_i) with 1 − p_i summed from the other weights.

    diag(p) − p pᵀ in float64 loses it: p₁ of softmax([20, −20]) rounds to 1, so p₁ − p₁² is 0, not p₁p₂.
    """
    p = _softmax(logits)
    tails = [math.fsum(p[:i] + p[i + 1 :]) for i in range(len(p))]  # 1 - p_i, from the others
    entries = [p[i] * tails[i] if i == j else p[i] * p[j] for i in range(len(p)) for j in range(len(p))]
    return math.sqrt(math.fsum(e * e for e in entries))


def _saturated_gradient(seed: int) -> Result:
    norm = _jacobian_of((20.0, -20.0))
    return Result("‖J‖ ≈ 0", f"‖J‖_F = {norm:.2g}", "right" if norm < 1e-6 else "wrong", {"norm": norm})


def _healthy_gradient(seed: int) -> Result:
    """[3, -3] is said to let gradients flow: true, but its Jacobian is 100x below the flat maximum."""
    norm, flat = _jacobian_of((3.0, -3.0)), _jacobian_of((0.0, 0.0))
    as_printed = float(jacobian_norm(torch.tensor([0.95, 0.05], dtype=torch.float64)))
    facts = {"norm": norm, "flat": flat, "ratio": flat / norm, "printed": as_printed}
    return Result("softmax([3, −3]): ‖J‖ healthy", f"‖J‖_F = {norm:.3g}", "inexact", facts)


def _saturated_jacobian(seed: int) -> Result:
    norm = _jacobian_of((20.0, 0.0, -20.0))
    return Result("σᵢ ≈ 1 or 0 ⇒ ∂σᵢ/∂zⱼ ≈ 0", f"‖J‖_F = {norm:.2g}", "right" if norm < 1e-6 else "wrong", {})


# 3. Gradients: the notes' formulas against autograd.


def _qkv(seed: int, n: int = 5, d_k: int = 4, d_v: int = 3):
    gen = _gen(seed, 11)
    return _randn(gen, n, d_k), _randn(gen, n, d_k), _randn(gen, n, d_v), _randn(gen, n, d_v)


def _softmax_derivative(seed: int) -> Result:
    z = _randn(_gen(seed, 12), 5).requires_grad_()
    p = torch.softmax(z, dim=-1)
    auto = torch.stack([torch.autograd.grad(p[j], z, retain_graph=True)[0] for j in range(5)])  # row j: dp_j/dz
    error = float((softmax_jacobian(p.detach()) - auto).abs().max())
    facts = {"error": error, "form": "formula_autograd"}
    return Result("∂αⱼ/∂eᵢ = αᵢ(δᵢⱼ − αⱼ)", f"max |formula − autograd| = {error:.1e}", _identity(error), facts)


def _dl_de(seed: int) -> Result:
    q, k, v, g = _qkv(seed)
    hand, auto = attention_backward(q, k, v, g), attention_backward_autograd(q, k, v, g)
    error = float((hand.dscores - auto.dscores).abs().max())
    facts = {"error": error, "form": "formula_autograd"}
    return Result(
        "∂L/∂eᵢ = αᵢ(∂L/∂αᵢ − Σⱼ αⱼ ∂L/∂αⱼ)", f"max |formula − autograd| = {error:.1e}", _identity(error), facts
    )


def _dl_dv_section1(seed: int) -> Result:
    q, k, v, g = _qkv(seed)
    _, a = naive_attention(q, k, v)
    error = float((a.T @ g - attention_backward_autograd(q, k, v, g).dv).abs().max())
    return Result("∂L/∂Vⱼ = Σᵢ αᵢⱼ ∂L/∂oᵢ", f"max |Aᵀ·∂L/∂O − autograd| = {error:.1e}", _identity(error), {})


def _dl_dqk(which: str):
    """The notes' dL/dQ = (1/sqrt d_k) sum_ij dL/de_ij K: a scalar times K, and that scalar is 0."""

    def check(seed: int) -> Result:
        q, k, v, g = _qkv(seed)
        auto = attention_backward_autograd(q, k, v, g)
        total = float(auto.dscores.sum())  # each row of dL/dS sums to 0
        true = auto.dq if which == "q" else auto.dk
        other = k if which == "q" else q
        as_written = total * other / math.sqrt(q.shape[-1])
        facts = {"total": total, "true": float(true.abs().max()), "written": float(as_written.abs().max())}
        computed = f"Σᵢⱼ ∂L/∂eᵢⱼ = {total:.1e}; max |∂L/∂{which.upper()}| = {facts['true']:.3g}"
        name = "K" if which == "q" else "Q"
        return Result(f"∂L/∂{which.upper()} = Σᵢⱼ ∂L/∂eᵢⱼ {name} / √d_k", computed, "wrong", facts)

    return check


def _dl_dv_section43(seed: int) -> Result:
    q, k, v, g = _qkv(seed)
    _, a = naive_attention(q, k, v)
    true = attention_backward_autograd(q, k, v, g).dv  # (n_k, d_v): one row per value vector
    written = (g.unsqueeze(1) * a.unsqueeze(-1)).sum(dim=(0, 1))  # sum over i and j: one d_v vector
    facts = {"rows": true.shape[0], "error": float((a.T @ g - true).abs().max())}
    computed = f"∂L/∂V = Aᵀ ∂L/∂O: {tuple(true.shape)}; Σᵢⱼ: {tuple(written.shape)}"
    return Result("∂L/∂V = Σᵢⱼ ∂L/∂oᵢ αᵢⱼ", computed, "inexact", facts)


def _additive_weight_grad(seed: int) -> Result:
    """dL/dW_q of additive attention: sum_i dL/de_i (w * (1 - s_i^2)) q^T, an outer product per key."""
    gen = _gen(seed, 13)
    d, hidden, n = 4, 5, 6
    module = AdditiveAttention(d, d, hidden).double()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(_randn(gen, *p.shape) / math.sqrt(p.shape[1]))
    q, k, upstream = _randn(gen, 1, d), _randn(gen, n, d), _randn(gen, 1, n)
    e = module.scores(q, k)  # (1, n)
    (e * upstream).sum().backward()
    s = torch.tanh(module.w_q(q) + module.w_k(k)).detach()  # (n, hidden): q (1, d) broadcasts over the keys
    w = module.w.weight[0].detach()  # (hidden,)
    by_hand = ((upstream[0, :, None] * w * (1 - s**2)).sum(0))[:, None] * q  # (hidden, d): sum_i outer products
    error = float((by_hand - module.w_q.weight.grad).abs().max())
    facts = {"error": error, "error_bound": _upper(error, 1), "rows": hidden, "cols": d}
    computed = f"Σᵢ ∂L/∂eᵢ (v ⊙ (1 − sᵢ²)) qᵀ: {hidden}×{d}, max |· − autograd| = {error:.1e}"
    return Result("∂L/∂W_q = Σᵢ ∂L/∂eᵢ vᵀ(1 − sᵢ²) qᵀ", computed, "inexact", facts)


def _wo_grad(seed: int) -> Result:
    """dL/dW^O is Concat(heads)^T dL/dout: the heads' blocks are stacked, not summed."""
    gen = _gen(seed, 14)
    d_model, heads, n = 8, 2, 5
    mha = MultiHeadAttention(d_model, heads).double()
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(_randn(gen, *p.shape) * 0.3)
    x, upstream = _randn(gen, 1, n, d_model), _randn(gen, 1, n, d_model)
    captured = {}
    mha.w_o.register_forward_hook(lambda module, args, out: captured.update(concat=args[0].detach()))
    out, _ = mha(x)
    (out * upstream).sum().backward()
    concat = captured["concat"][0]  # (n, H d_v)
    stacked = concat.T @ upstream[0]  # (H d_v, d_model): head h's block of rows is head_h^T dL/dout
    d_v = d_model // heads
    summed = sum(concat[:, h * d_v : (h + 1) * d_v].T @ upstream[0] for h in range(heads))  # (d_v, d_model)
    error = float((stacked - mha.w_o.weight.grad.T).abs().max())  # nn.Linear stores W^O transposed
    facts = {
        "error": error,
        "stacked": f"{stacked.shape[0]}×{stacked.shape[1]}",
        "summed": "×".join(map(str, summed.shape)),
    }
    computed = f"∂L/∂W^O: {facts['stacked']} = Concat(heads)ᵀ ∂L/∂out (error {error:.1e}); Σ_h: {facts['summed']}"
    return Result("∂L/∂W^O = Σ_h head_hᵀ ∂L/∂output", computed, "wrong", facts)


def _weight_grad_direction(seed: int) -> Result:
    q, k, v, _ = _qkv(seed)
    qi = q[0].clone().requires_grad_()
    alpha = torch.softmax(k @ qi / math.sqrt(q.shape[-1]), dim=-1)  # (n,)
    j = 2
    auto = torch.autograd.grad(alpha[j], qi)[0]
    a = alpha.detach()
    formula = a[j] * (k[j] - a @ k) / math.sqrt(q.shape[-1])
    error = float((auto - formula).abs().max())
    return Result(
        "∂αᵢⱼ/∂qᵢ ∝ kⱼ − Σₖ αᵢₖ kₖ", f"max |αᵢⱼ(kⱼ − Σ αk)/√d_k − autograd| = {error:.1e}", _identity(error), {}
    )


# 4. Statistics of q.k.


def _score_var(d_k: int, scaled: bool, label: str = ""):
    """Var(q·k) (scaled: of q·k/√d_k) measured at d_k; `label`: what the notes print, when not the usual form."""

    def check(seed: int) -> Result:
        scores = _scores(d_k, seed)
        s = score_statistics(scores / math.sqrt(d_k) if scaled else scores)
        target = 1.0 if scaled else float(d_k)
        verdict = _measured(s["var"], target, s["var_stderr"])
        printed = label or (f"Var(q·k/√{d_k}) = 1" if scaled else f"Var(q·k) = d_k = {d_k}")
        return Result(printed, f"{s['var']:.4g} ± {s['var_stderr']:.2g}", verdict, {"n": len(scores)})

    return check


def _score_mean(seed: int) -> Result:
    s = score_statistics(_scores(64, seed))
    stderr = math.sqrt(s["var"] / s["n"])
    return Result("E[q·k] = 0", f"{s['mean']:.3g} ± {stderr:.2g}", _measured(s["mean"], 0.0, stderr), {})


def _score_std_64(seed: int) -> Result:
    s = score_statistics(_scores(64, seed))
    stderr = s["var_stderr"] / (2 * s["std"])  # delta method: d sqrt(v) = dv / (2 sqrt v)
    verdict = "right" if math.sqrt(64) == 8 and abs(s["std"] - 8) <= SIGMAS * stderr else "wrong"
    return Result("σ = √64 = 8", f"√64 = {math.sqrt(64):g}; measured {s['std']:.3f}", verdict, {"std": s["std"]})


def _range_verdict(stated: float | None, decimals: int, exact: float, sampled: float, stderr: float) -> str:
    """The one rule for every range claim: a range printed without a share says *all* values lie in it, and q.k
    (unbounded) exceeds any range with a probability above 0, so the claim is inexact; a printed share is right
    when it is the exact share to its digits and the sample agrees within SIGMAS standard errors."""
    if stated is None:
        return "inexact"
    unit = 10.0**-decimals
    fits = _fits_digits(stated, exact, decimals) and abs(sampled - stated) <= unit / 2 + SIGMAS * stderr
    return "right" if fits else "inexact"


def _within(d_k: int, bound: float, stated: float | None, decimals: int, label: str, scaled: bool = False):
    """Share of |q.k| <= bound at d_k: the normal formula, the exact value and a sample, against `stated`."""

    def check(seed: int) -> Result:
        scores = _scores(d_k, seed)
        raw_bound = bound * math.sqrt(d_k) if scaled else bound
        sampled, stderr = share_within(scores, raw_bound)
        exact = score_mass(d_k, raw_bound)
        formula = normal_mass(raw_bound / math.sqrt(d_k))
        facts = {"exact": exact, "formula": formula, "sampled": sampled, "outside": 1 - exact, "sigma": math.sqrt(d_k)}
        facts |= {"one_in": 1 / (1 - exact), "stated": stated, "form": "within"}
        computed = f"{100 * exact:.2f}% (normal formula {100 * formula:.2f}%, sampled {100 * sampled:.2f}%)"
        return Result(label, computed, _range_verdict(stated, decimals, exact, sampled, stderr), facts)

    return check


def _normal_mass(seed: int) -> Result:
    stated = (0.6827, 0.9545, 0.9973)
    true = [normal_mass(k) for k in (1, 2, 3)]
    verdict, _ = _printed(stated, true, 4)
    return Result(
        "68.27%, 95.45%, 99.73%", _vec([100 * x for x in true], ".3f").replace(",", "%,")[:-1] + "%]", verdict, {}
    )


def _tail(seed: int) -> Result:
    true = 1 - normal_mass(3)
    verdict, _ = _printed((0.0027,), (true,), 4)
    return Result("0.27%", f"{100 * true:.3f}%", verdict, {})


def _exp_half_square(seed: int) -> Result:
    stated = (0.606, 0.135, 0.011)
    true = [math.exp(-(t**2) / 2) for t in (1, 2, 3)]
    verdict, _ = _printed(stated, true, 3)
    return Result(_vec(stated, ".3f"), _vec(true, ".5f"), verdict, {})


def _gaussian(seed: int) -> Result:
    d_k = 4
    s = score_statistics(_scores(d_k, seed))
    facts = {"d_k": d_k, "kurtosis": s["kurtosis"], "theory": theoretical_score_kurtosis(d_k)}
    computed = f"kurtosis at d_k = {d_k}: {s['kurtosis']:.2f} (3 + 6/d_k = {facts['theory']:.2f}; normal: 3)"
    return Result("q·k ~ N(0, d_k)", computed, "inexact", facts)


def _std_512(seed: int) -> Result:
    true = math.sqrt(512)
    verdict, _ = _printed((22.6,), (true,), 1)
    return Result("√512 ≈ 22.6", f"{true:.4f}", verdict, {})


def _cos_var(seed: int) -> Result:
    s = score_statistics(cosine_similarity_samples(512, SAMPLES_HIGH_D, seed=seed))
    verdict = _measured(s["var"], 1 / 512, s["var_stderr"])
    stderr = math.sqrt(s["var"] / s["n"])
    verdict = verdict if _measured(s["mean"], 0.0, stderr) == "right" else "wrong"
    computed = f"E = {s['mean']:.1e}, Var = {s['var']:.3e} ± {s['var_stderr']:.1e} (1/512 = {1 / 512:.3e})"
    return Result("E[cos θ] ≈ 0, Var[cos θ] ≈ 1/d_k", computed, verdict, {})


def _scaling_as_unit_sphere(seed: int) -> Result:
    """Dividing q.k by sqrt(d_k) is scaling q and k by d_k^(-1/4): their norms become about d_k^(1/4), not 1."""
    d_k = 64
    q = _randn(_gen(seed, 15), SAMPLES // 10, d_k)
    norms = (q / d_k**0.25).norm(dim=-1)
    facts = {"d_k": d_k, "norm": float(norms.mean()), "theory": d_k**0.25, "unit_var": 1 / d_k}
    computed = f"|q / d_k^(1/4)| ≈ {facts['norm']:.3f} at d_k = {d_k} (d_k^(1/4) = {d_k**0.25:.3f})"
    return Result("|q|, |k| → ≈ 1", computed, "wrong", facts)


def _layernorm_sphere(seed: int) -> Result:
    d = 64
    x = _randn(_gen(seed, 16), 100, d) * 3 + 1
    norms = torch.nn.functional.layer_norm(x, (d,)).norm(dim=-1)
    facts = {
        "d": d,
        "norm": float(norms.mean()),
        "root": math.sqrt(d),
        "low": float(norms.min()),
        "high": float(norms.max()),
    }
    computed = f"|LN(x)| = {float(norms.min()):.4f} … {float(norms.max()):.4f} at d = {d} (√d = {math.sqrt(d):g})"
    return Result("|LN(x)| = 1", computed, "wrong", facts)


def _three_sqrt(seed: int) -> Result:
    d_k = 64
    scores = _scores(d_k, seed)
    raw, stderr = share_within(scores, 3 * math.sqrt(d_k))  # the unscaled q.k within 3 sqrt(d_k)
    scaled, _ = share_within(scores / math.sqrt(d_k), 3.0)  # the scaled one within 3: the same pairs
    exact = score_mass(d_k, 3 * math.sqrt(d_k))
    facts = {"raw": raw, "scaled": scaled, "d_k": d_k, "bound": 3 * math.sqrt(d_k), "exact": exact, "stated": None}
    # the exact share, as the within_24 row shows it (one value per quantity); the sample beside it
    computed = f"d_k = 64: |q·k| ≤ 24, i.e. |q·k/8| ≤ 3: {100 * exact:.2f}% (sampled {100 * raw:.2f}%)"
    verdict = _range_verdict(None, 0, exact, raw, stderr)  # printed without a share, like every range
    return Result("q·k/√d_k ∈ [−3√d_k, 3√d_k]", computed, verdict, facts)


# 5. Permutations.

NOTES_A = ((1, 2, 3), (4, 5, 6), (7, 8, 9))  # the 3 x 3 matrix of the permutation example


def _permute(side: str):
    stated = (7, 8, 9, 1, 2, 3, 4, 5, 6) if side == "rows" else (2, 3, 1, 5, 6, 4, 8, 9, 7)

    def check(seed: int) -> Result:
        p, a = permutation_matrix([2, 0, 1]), torch.tensor(NOTES_A, dtype=torch.float64)
        true = (p @ a if side == "rows" else a @ p).reshape(-1).tolist()
        verdict = "right" if true == list(stated) else "wrong"
        return Result(_vec(stated, "g"), _vec(true, "g"), verdict, {})

    return check


def _perm_orthogonal(seed: int) -> Result:
    p = permutation_matrix([2, 0, 1])
    eye = torch.eye(3, dtype=torch.float64)
    error = max(float((p.T @ p - eye).abs().max()), float((p @ p.T - eye).abs().max()))
    error = max(error, float((torch.linalg.inv(p) - p.T).abs().max()))
    return Result("PᵀP = PPᵀ = I, P⁻¹ = Pᵀ", f"max error {error:.1e}", _identity(error), _max_error(error))


def _perm_det(seed: int) -> Result:
    cycle, swap = (float(torch.linalg.det(permutation_matrix(p))) for p in ([2, 0, 1], [2, 1, 0]))
    verdict = "right" if round(cycle) == 1 and round(swap) == -1 else "wrong"
    return Result("det P = ±1 (+1 even)", f"det P[2,0,1] = {cycle:g}, det P[2,1,0] = {swap:g}", verdict, {})


def _cycle_p3(seed: int) -> Result:
    p3 = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=torch.float64)
    true = (p3 @ torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).tolist()
    return Result("P₃ [1, 2, 3] = [2, 3, 1]", _vec(true, "g"), "right" if true == [2, 3, 1] else "wrong", {})


def _self_attention_tokens(seed: int, n: int = 6, d: int = 4):
    gen = _gen(seed, 17)
    return _randn(gen, n, d), _randn(gen, 3, d, d) / math.sqrt(d)


def _attend(x, w):
    return naive_attention(x @ w[0], x @ w[1], x @ w[2])


def _equivariance(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    error = equivariance_error(
        lambda q, k, v: naive_attention(q, k, v)[0], x @ w[0], x @ w[1], x @ w[2], [2, 0, 5, 3, 1, 4]
    )
    return Result(
        "Attention(PQ, PK, PV) = P·Attention(Q, K, V)", f"max error {error:.1e}", _identity(error), _max_error(error)
    )


def _invariance(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    perm = torch.tensor([2, 0, 5, 3, 1, 4])
    moved = float((_attend(x[perm], w)[0] - _attend(x, w)[0]).abs().max())
    return Result(
        "Attention(PX) = Attention(X)",
        f"max |Attention(PX) − Attention(X)| = {moved:.3g}",
        "wrong",
        {"moved": moved, "moved_bound": _upper(moved)},
    )


def _pap(seed: int) -> Result:
    x, w = _self_attention_tokens(seed)
    perm = [2, 0, 5, 3, 1, 4]
    p = permutation_matrix(perm)
    error = float((_attend(x[perm], w)[1] - p @ _attend(x, w)[1] @ p.T).abs().max())
    return Result("A′ = P A Pᵀ", f"max |A′ − P A Pᵀ| = {error:.1e}", _identity(error), {})


def _verify_code(seed: int) -> Result:
    """The notes' own check: seq_len 4, d_model 6, perm [2, 0, 3, 1], float32, difference < 1e-6."""
    x = torch.randn(1, 4, 6, generator=_gen(seed, 18))  # float32, as torch.randn gives
    error = equivariance_error(lambda q, k, v: naive_attention(q, k, v)[0], x, x, x, [2, 0, 3, 1])
    return Result("max difference < 1e-6", f"{error:.1e}", "right" if error < 1e-6 else "wrong", {})


# 6. Masks.


def _masked_zero(seed: int) -> Result:
    scores = _randn(_gen(seed, 19), 5, 5)
    w = masked_softmax(scores, causal_mask(5))
    hidden = float(w[~causal_mask(5)].abs().max())
    verdict = "right" if hidden == 0 else "wrong"
    return Result("α = 0 where masked", f"max hidden weight = {hidden:g}", verdict, {"hidden": hidden})


def _masked_grad(seed: int) -> Result:
    z = _randn(_gen(seed, 20), 5, 5).requires_grad_()
    w = masked_softmax(z, causal_mask(5))
    (w * _randn(_gen(seed, 21), 5, 5)).sum().backward()
    grad = float(z.grad[~causal_mask(5)].abs().max())
    return Result(
        "∂L/∂l_ij = 0 where masked",
        f"max |gradient| at masked logits = {grad:g}",
        "right" if grad == 0 else "wrong",
        {"grad": grad},
    )


def _fully_masked_scores(seed: int, n: int = 5):
    scores = _randn(_gen(seed, 22), n, n)
    mask = causal_mask(n) & padding_mask([3], n)[0]  # (n, n); keep only keys 0..2 ...
    mask[0] = False  # ... and hide every key of query 0: one fully masked row
    return scores, mask


def _minus_inf(seed: int) -> Result:
    scores, mask = _fully_masked_scores(seed)
    w = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    nan_rows = int(torch.isnan(w).any(-1).sum())
    others = float((w[1:] - masked_softmax(scores, mask)[1:]).abs().max())
    facts = {"nan_rows": nan_rows, "others": others}
    return Result("−inf ⇒ NaN possible", f"NaN rows: {nan_rows} (the fully masked one); others exact", "right", facts)


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


def _causal_printed(seed: int) -> Result:
    printed = torch.tensor([[1 if j <= i else 0 for j in range(5)] for i in range(5)], dtype=torch.bool)
    same = torch.equal(printed, causal_mask(5))
    return Result(
        "5 × 5 lower triangle", "= causal_mask(5)" if same else "≠ causal_mask(5)", "right" if same else "wrong", {}
    )


def _sliding(seed: int, n: int = 8, w: int = 3) -> Result:
    notes, ours = notes_sliding_window_mask(n, w), sliding_window_mask(n, w)
    facts = {"n": n, "w": w, "notes": int(notes.sum(-1).max()), "ours": int(ours.sum(-1).max())}
    computed = f"n = {n}, window_size = {w}: the notes' code keeps {facts['notes']} keys per row, ours {facts['ours']}"
    return Result(f"window_size = {w} keys", computed, "inexact" if facts["notes"] == w + 1 else "wrong", facts)


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


def _hierarchical(seed: int) -> Result:
    counts = {n: int(notes_hierarchical_mask(n).sum()) for n in range(1, 17)}
    every = all(counts[n] == n * n for n in counts)
    future16 = int(future_keys(notes_hierarchical_mask(16)).sum())
    facts = {"future": future16, "all_visible": every, "form": "hierarchical" if every else "hierarchical_partial"}
    computed = f"n ≤ 16: all n² keys visible (n = 16: {future16} future keys)" if every else "not all visible"
    return Result("hierarchical_causal_mask is causal", computed, "wrong" if future16 else "right", facts)


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


def _sparse_saves(seed: int) -> Result:
    n, block = 1024, 64
    _, weights = naive_attention(*(torch.zeros(n, 1) for _ in range(3)), causal_mask(n))
    skipped = causal_skipped_tiles(n, block, block) / n_tiles(n, block) ** 2
    facts = {"n": n, "cells": weights.numel(), "skipped": skipped, "block": block}
    computed = (
        f"causal, n = {n}: naive stores {weights.numel():,} weights; {block}×{block} tiles: {skipped:.0%} skipped"
    )
    return Result("mask ⇒ sparse ⇒ cheaper", computed, "inexact", facts)


# 7. Cost.


def _quadratic(seed: int) -> Result:
    cells = {}
    for n in (64, 128):
        _, w = naive_attention(*(torch.zeros(n, 2) for _ in range(3)))
        cells[n] = w.numel()
    facts = {"small": cells[64], "large": cells[128], "ratio": cells[128] / cells[64]}
    return Result("", f"n = 64: {cells[64]:,} weights; n = 128: {cells[128]:,} (×{facts['ratio']:g})", "", facts)


def _linear_title(seed: int) -> Result:
    r = _quadratic(seed)
    return Result("linear", r.computed, "wrong" if r.facts["ratio"] == 4 else "right", r.facts)


def _memory_quadruples(seed: int) -> Result:
    r = _quadratic(seed)
    return Result("2n ⇒ 4× memory", r.computed, "right" if r.facts["ratio"] == 4 else "wrong", r.facts)


# 8. Heads and parameters.


def _reference(model: str):
    def check(seed: int) -> Result:
        row = references().set_index("model").loc[model]
        stated = {"BERT-base": 64, "GPT-3 175B": 128}[model]
        text = f"{row.d_model} / {row.heads} = {row.d_k}"
        return Result(f"d_k = {stated}", text, "right" if row.d_k == stated else "wrong", {})

    return check


def _params_same(seed: int) -> Result:
    counts = {h: parameter_count(MultiHeadAttention(64, h, device="meta")) for h in (1, 2, 4, 8, 16)}
    same = len(set(counts.values())) == 1
    computed = "d_model = 64, h = 1, 2, 4, 8, 16: " + ", ".join(f"{c:,}" for c in counts.values())
    return Result("same for every h", computed, "right" if same else "wrong", {"count": counts[1]})


def _additive_params(seed: int) -> Result:
    d = 64
    count = parameter_count(AdditiveAttention(d, d, d))
    return Result(
        "O(d_k²)", f"d_k = d_hidden = {d}: {count:,} = 2·{d}² + {d}", "right" if count == 2 * d * d + d else "wrong", {}
    )


def _dot_params(seed: int) -> Result:
    _, _, params = parity_samples(8, 8, seed, n_pairs=1)
    dot = int(params.set_index("score").loc["dot product", "parameters"])
    return Result("O(d_k)", f"q·k/√d_k: {dot} parameters", "inexact" if dot == 0 else "right", {"dot": dot})


# 9. Weight rows printed as examples.

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


def _example_rows(seed: int) -> Result:
    sums = [math.fsum(r) for r in EXAMPLE_ROWS]
    ok = all(abs(s - 1) < 1e-9 for s in sums)
    return Result(
        f"{len(EXAMPLE_ROWS)} rows, Σ = 1",
        "sums: " + ", ".join(f"{s:.2f}" for s in sums),
        "right" if ok else "wrong",
        {"sums": ", ".join(f"{s:.2f}" for s in sums)},
    )


def _competing_row(seed: int) -> Result:
    total = math.fsum(COMPETING_ROW)
    return Result(
        _vec(COMPETING_ROW, ".1f"), f"Σ = {total:.2f}", "right" if abs(total - 1) < 1e-9 else "wrong", {"sum": total}
    )


def _row_sum(seed: int) -> Result:
    _, a = naive_attention(*_qkv(seed)[:3])
    error = float((a.sum(-1) - 1).abs().max())
    return Result("Σⱼ Aᵢⱼ = 1", f"max |row sum − 1| = {error:.1e}", _identity(error), {"error": error})


def _orthogonal_key(seed: int) -> Result:
    weights = _softmax((2.0, 0.0, -1.0))  # the second key is orthogonal to the query: q.k = 0
    return Result(
        "q·k = 0 ⇒ no influence",
        f"softmax([2, 0, −1])₂ = {weights[1]:.3f}",
        "wrong" if weights[1] > 0 else "right",
        {"weight": weights[1]},
    )


def _same_dimension(seed: int) -> Result:
    q, k, v, _ = _qkv(seed)
    changed = v.clone()
    changed[:, 1:] += _randn(_gen(seed, 23), v.shape[0], v.shape[1] - 1)  # every column but the first
    moved = float((naive_attention(q, k, changed)[0][:, 0] - naive_attention(q, k, v)[0][:, 0]).abs().max())
    return Result(
        "Zᵢ,c uses only V·,c",
        f"change V's other columns: Z·,1 moves {moved:g}",
        "right" if moved == 0 else "wrong",
        {"moved": moved},
    )


# 10. Separate W_Q, W_K against one shared W.


def _projections(seed: int, n: int = 6, d_model: int = 8, d_k: int = 4):
    gen = _gen(seed, 24)
    return (
        _randn(gen, n, d_model),
        _randn(gen, d_model, d_k) / math.sqrt(d_model),
        _randn(gen, d_model, d_k) / math.sqrt(d_model),
    )


def bilinear_facts(seed: int) -> dict:
    """max |S - S^T| with separate and with shared projections, and how far softmax(QK^T), softmax(KQ^T) differ."""
    x, w_q, w_k = _projections(seed)
    s = projected_scores(x, w_q, w_k)
    a, a_t = masked_softmax(s), masked_softmax(s.T)
    return {
        "separate": asymmetry(s),
        "shared": asymmetry(projected_scores(x, w_q)),
        "weights_gap": float((a - a_t).abs().max()),
        "one_sided": float((a - a.T).abs().max()),
        "quadratic": float((s - x @ (w_q @ w_k.T) @ x.T / math.sqrt(w_q.shape[1])).abs().max()),
    }


def _qk_kq(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    computed = f"KQᵀ = (QKᵀ)ᵀ; max |softmax(QKᵀ) − softmax(KQᵀ)| = {f['weights_gap']:.3f}"
    facts = f | {"weights_gap_bound": _upper(f["weights_gap"])}  # f may be shared: a new dict
    return Result("QKᵀ ≈ KQᵀ", computed, "inexact" if f["weights_gap"] > 1e-6 else "right", facts)


def _quadratic_form(seed: int) -> Result:
    f = bilinear_facts(seed)
    error = f["quadratic"]
    return Result("XW_q(XW_k)ᵀ = X(W_qW_kᵀ)Xᵀ", f"max error {error:.1e}", _identity(error), _max_error(error))


def _shared_symmetric(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    return Result(
        "W Wᵀ ⇒ S = Sᵀ", f"max |S − Sᵀ| = {f['shared']:g} (shared W)", "right" if f["shared"] == 0 else "wrong", f
    )


def _shared_equivalent(seed: int, f: dict | None = None) -> Result:
    f = f or bilinear_facts(seed)
    computed = f"max |S − Sᵀ|: separate {f['separate']:.3f}, shared {f['shared']:g}"
    return Result("W_Q, W_K ≡ one W", computed, "wrong" if f["separate"] > 1e-9 else "right", f)


def judge_projections(key: str, facts: dict) -> Result:
    """A claim about separate and shared projections judged on a page's own tokens (facts as bilinear_facts gives
    them), so its card quotes the numbers beside it and not the claims table's fixed example."""
    judges = {"qk_kq": _qk_kq, "shared_symmetric": _shared_symmetric, "shared_equivalent": _shared_equivalent}
    if key not in judges:
        raise ValueError(f"key must be one of {tuple(judges)}, got {key!r}")
    return judges[key](0, facts)


def _self_attention_q_k_v(seed: int) -> Result:
    x, _, _ = _projections(seed)
    f = bilinear_facts(seed)
    same = asymmetry(gram(x))
    computed = f"Q = K = X: max |S − Sᵀ| = {same:g}; with W_Q, W_K: {f['separate']:.3f}"
    return Result("Q = K = V = X", computed, "inexact", f | {"same": same})


# 11. Theory of the other pages.


def _nadaraya_watson(seed: int) -> Result:
    q, k, v, _ = _qkv(seed)
    error = float((nadaraya_watson(q, k, v)[0] - naive_attention(q, k, v)[0]).abs().max())
    return Result(
        "attention = Nadaraya–Watson, K = exp(q·k/√d_k)", f"max error {error:.1e}", _identity(error), _max_error(error)
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


def _temperature(seed: int) -> Result:
    """The limits themselves, on the scale each one depends on: T falls relative to the gap between the two largest
    logits (the limit is as fast as that gap allows) and grows relative to their range; both distances must fall
    at every step, the first to 0 in float64, the second like 1/T. A fixed T = 0.01 judged a lucky draw instead."""
    z = _randn(_gen(seed, 25), 8)
    top2 = z.topk(2).values
    gap, spread = float(top2[0] - top2[1]), float(z.max() - z.min())
    cold, hot = _toward_argmax(z, gap), _toward_uniform(z, spread)
    falls = all(b < a or a == b == 0 for a, b in zip(cold, cold[1:], strict=False)) and cold[-1] == 0.0
    shrinks = all(b < a / 5 for a, b in zip(hot, hot[1:], strict=False))  # ~ 1/T: ten times smaller per step
    shown = {name: ", ".join(f"{x:.1e}" if x else "0" for x in xs) for name, xs in (("cold", cold), ("hot", hot))}
    facts = {"gap": gap, **shown}
    computed = f"1 − p_max: {facts['cold']} (T = gap × 1 … 0.001); max |p − 1/8|: {facts['hot']} (T = range × 10 … 10⁴)"
    return Result("T → 0: argmax; T → ∞: uniform", computed, "right" if falls and shrinks else "wrong", facts)


def _entropy_increasing(seed: int) -> Result:
    z = _randn(_gen(seed, 26), 8)
    grid = torch.logspace(-1, 3, 200, dtype=torch.float64)[:, None]  # from 0.1: colder rows are one-hot in fp64
    h = entropy(masked_softmax(z / grid))
    step = float(h.diff().min())
    return Result(
        "H(T) strictly increasing",
        f"smallest step over 200 T: {step:.2e}",
        "right" if step > 0 else "wrong",
        {"step": step},
    )


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


def _aliasing(seed: int) -> Result:
    codes = single_period_encoding(20, 7)
    gap = float((codes[3] - codes[10]).abs().max())
    return Result("code(j) = code(j + T)", f"T = 7: |code(3) − code(10)| = {gap:.1e}", _identity(gap), {})


def _coprime(seed: int) -> Result:
    periods = (3, 4, 5)
    first = first_collision(periods, limit=100)
    return Result(
        "repeat only after lcm",
        f"periods 3, 4, 5: first repeat at {first} (lcm = {math.lcm(*periods)})",
        "right" if first == math.lcm(*periods) else "wrong",
        {"first": first, "lcm": math.lcm(*periods)},
    )


def _parity(score: str, residual: str):
    def check(seed: int) -> Result:
        _, stats, _ = parity_samples(8, 16, seed)  # the geometry page's check, on the same seed
        value = stats[score][residual]
        label = "s(−q, −k) = s(q, k)" if score == "dot product" else "e(−q, −k) = −e(q, k)"
        return Result(label, f"max residual {value:.1e}", _identity(value), {"residual": value, "form": "max_residual"})

    return check


def _pe_rotation(seed: int) -> Result:
    pe = sinusoidal_encoding(40, 16)
    error = float((pe[30] - shift_matrix(7, 16) @ pe[23]).abs().max())
    computed = f"pos 23, k = 7, d = 16: max error {error:.1e}"
    return Result("PE(pos + k) = M_k PE(pos)", computed, _identity(error), {"error": error})


def _overflow(seed: int) -> Result:
    z = torch.tensor([100.0, 0.0])  # float32: e^100 overflows
    textbook = torch.exp(z) / torch.exp(z).sum()
    stable = masked_softmax(z)
    shifted = float((masked_softmax(z + 1000.0) - stable).abs().max())
    facts = {"textbook": _vec(textbook.tolist(), ".3g"), "stable": _vec(stable.tolist(), ".3g"), "shifted": shifted}
    computed = f"float32 [100, 0]: eᶻ/Σeᶻ = {facts['textbook']}, stable {facts['stable']}; shift by 1000: {shifted:g}"
    return Result("large zᵢ ⇒ overflow", computed, "inexact", facts)


def _flash_exact(seed: int) -> Result:
    gen = _gen(seed, 27)
    q, k, v = (_randn(gen, 256, 16) for _ in range(3))
    error = float((tiled_attention(q, k, v, block_q=32, block_k=32) - naive_attention(q, k, v)[0]).abs().max())
    computed = f"n = 256: max |tiled − naive| = {error:.1e}; largest score block 32×32 (naive: 256×256)"
    return Result("exact output, memory O(n)", computed, _identity(error, scale=10.0), {"error": error})


CLAIMS: tuple[Claim, ...] = (
    # softmax numbers
    Claim("softmax_8_2_1", ("000",), _softmax_claim((8, 2, 1), (0.87, 0.09, 0.04), 2)),
    Claim("softmax_20", ("000",), _softmax_claim((20, -20), (0.9999, 0.0), 4)),
    Claim("softmax_3", ("000",), _softmax_claim((3, -3), (0.95, 0.05), 2)),
    Claim("scaled_row", ("000",), _scaled_row),
    Claim("softmax_20_0", ("000",), _softmax_claim((20, 0, -20), (0.9999, 0.0001, 0.0), 4)),
    Claim("softmax_2_5", ("000",), _softmax_claim((2.5, 0, -2.5), (0.92, 0.08, 0.0), 2)),
    Claim("softmax_padding", ("000",), _padding_example),
    Claim("row_sum", ("000", "003", "004"), _row_sum),
    Claim("example_rows", ("000",), _example_rows),
    Claim("competing_row", ("000",), _competing_row),
    Claim("orthogonal_key", ("001",), _orthogonal_key),
    Claim("overflow", ("001",), _overflow),
    # gradients
    Claim("saturated_gradient", ("000",), _saturated_gradient),
    Claim("healthy_gradient", ("000",), _healthy_gradient),
    Claim("saturated_jacobian", ("003",), _saturated_jacobian),
    Claim("softmax_derivative", ("000", "003"), _softmax_derivative),
    Claim("dl_de", ("000",), _dl_de),
    Claim("dl_dv_section1", ("000",), _dl_dv_section1),
    Claim("dl_dq", ("000",), _dl_dqk("q")),
    Claim("dl_dk", ("000",), _dl_dqk("k")),
    Claim("dl_dv_section43", ("000",), _dl_dv_section43),
    Claim("additive_weight_grad", ("000",), _additive_weight_grad),
    Claim("wo_grad", ("000",), _wo_grad),
    Claim("weight_grad_direction", ("000",), _weight_grad_direction),
    # statistics of q.k
    Claim("score_mean", ("001", "002", "003"), _score_mean),
    Claim("product_var", ("000", "001", "003"), _score_var(1, scaled=False, label="Var(qᵢkᵢ) = 1 × 1 − 0 × 0 = 1")),
    Claim("score_var_64", ("000", "001", "002", "003"), _score_var(64, scaled=False)),
    Claim("scaled_var", ("000", "001", "002", "003"), _score_var(64, scaled=True)),
    Claim("gaussian", ("001",), _gaussian),
    Claim("score_std_64", ("000",), _score_std_64),
    Claim("within_24", ("000",), _within(64, 24.0, 0.997, 3, "99.7% in [−24, 24]")),
    Claim("within_20", ("000",), _within(64, 20.0, None, 0, "q·k ∈ [−20, 20]")),
    Claim("within_16", ("000",), _within(64, 16.0, 0.95, 2, "most in [−16, 16] … [−24, 24]")),
    Claim("within_3_scaled", ("000",), _within(64, 3.0, None, 0, "q·k/√d_k ∈ [−3, 3]", scaled=True)),
    Claim("normal_mass", ("000",), _normal_mass),
    Claim("tail", ("000",), _tail),
    Claim("exp_half_square", ("000",), _exp_half_square),
    Claim("range_512", ("003",), _within(512, 20.0, None, 0, "±20 or more")),
    Claim("score_std_512", ("000",), _std_512),
    Claim("cos_512", ("000",), _cos_var),
    Claim("three_sqrt", ("000",), _three_sqrt),
    Claim("unit_sphere", ("000",), _scaling_as_unit_sphere),
    Claim("layernorm", ("000",), _layernorm_sphere),
    # permutations
    Claim("invariance", ("000",), _invariance),
    Claim("equivariance", ("000",), _equivariance),
    Claim("pap", ("000",), _pap),
    Claim("verify_code", ("000",), _verify_code),
    Claim("permute_rows", ("000",), _permute("rows")),
    Claim("permute_cols", ("000",), _permute("cols")),
    Claim("perm_orthogonal", ("000",), _perm_orthogonal),
    Claim("perm_det", ("000",), _perm_det),
    Claim("cycle_p3", ("000",), _cycle_p3),
    # masks
    Claim("masked_zero", ("000", "002", "003", "004"), _masked_zero),
    Claim("masked_grad", ("002",), _masked_grad),
    Claim("minus_inf", ("000",), _minus_inf),
    Claim("minus_1e9", ("000", "002", "004"), _minus_1e9),
    Claim("renormalise", ("000",), _renormalise),
    Claim("padding_waste", ("000",), _padding_waste),
    Claim("causal_printed", ("000", "003", "004"), _causal_printed),
    Claim("sliding_window", ("000",), _sliding),
    Claim("block_causal", ("000",), _block),
    Claim("hierarchical", ("000",), _hierarchical),
    Claim("mha_mask", ("004",), _mha_mask),
    Claim("sparse_saves", ("000",), _sparse_saves),
    # cost
    Claim("linear_title", ("000",), _linear_title),
    Claim("memory_quadruples", ("000", "002", "003", "004"), _memory_quadruples),
    Claim("flash_exact", ("002",), _flash_exact),
    # heads, parameters, projections
    Claim("bert_d_k", ("000",), _reference("BERT-base")),
    Claim("gpt3_d_k", ("000",), _reference("GPT-3 175B")),
    Claim("params_same", ("000", "004"), _params_same),
    Claim("additive_params", ("000",), _additive_params),
    Claim("dot_params", ("000",), _dot_params),
    Claim("qk_kq", ("001",), _qk_kq),
    Claim("quadratic_form", ("001",), _quadratic_form),
    Claim("shared_symmetric", ("001",), _shared_symmetric),
    Claim("shared_equivalent", ("001",), _shared_equivalent),
    Claim("self_attention_qkv", ("000",), _self_attention_q_k_v),
    Claim("same_dimension", ("001",), _same_dimension),
    # kernels, temperature, positions, parity
    Claim("nadaraya_watson", ("002",), _nadaraya_watson),
    Claim("temperature", ("002",), _temperature),
    Claim("entropy_increasing", ("002",), _entropy_increasing),
    Claim("pe_dot", ("002",), _pe_dot),
    Claim("aliasing", ("002",), _aliasing),
    Claim("coprime", ("002",), _coprime),
    Claim("pe_rotation", ("003",), _pe_rotation),
    Claim("additive_odd", ("002",), _parity("additive", "odd")),
    Claim("dot_even", ("002",), _parity("dot product", "even")),
    Claim("exp_neg_inf", ("003",), lambda seed: Result("e^(−∞) = 0", f"{math.exp(float('-inf')):g}", "right", {})),
)
_BY_KEY = {c.key: c for c in CLAIMS}


def check(key: str, seed: int = 0) -> Result:
    """One claim, recomputed: for a page that judges only that claim (and must agree with the table)."""
    if key not in _BY_KEY:
        raise ValueError(f"key must name a claim of the notes, got {key!r}")
    result = _BY_KEY[key].check(seed)
    if result.verdict not in VERDICTS:
        raise AssertionError(f"claim {key} returned the verdict {result.verdict!r}")
    return result


def check_claims(seed: int, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per claim: key, file, notes (as printed), computed (live), verdict, facts (for the why line)."""
    rows = []
    for claim in CLAIMS if keys is None else [_BY_KEY[k] for k in keys]:
        r = check(claim.key, seed)
        rows.append(
            {
                "key": claim.key,
                "file": claim.files[0],
                "files": ", ".join(claim.files),
                "notes": r.notes,
                "computed": r.computed,
                "verdict": r.verdict,
                "facts": r.facts,
            }
        )
    return pd.DataFrame(rows)
