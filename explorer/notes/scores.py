"""Statistics of q·k: its mean, variance and ranges measured on seeded draws, the normal formula beside them."""

from __future__ import annotations

import math

import torch

from attn_core.stats import (
    cosine_similarity_samples,
    normal_mass,
    score_mass,
    score_statistics,
    share_within,
    theoretical_score_kurtosis,
)
from explorer.notes.registry import Result, claim, register
from explorer.notes.rules import SIGMAS, fits_digits, measured, printed_verdict, vec
from explorer.notes.samples import SAMPLES, SAMPLES_HIGH_D, randn, score_draw, seeded


@claim("score_mean", "001", "002", "003")
def _score_mean(seed: int) -> Result:
    s = score_statistics(score_draw(64, seed))
    stderr = math.sqrt(s["var"] / s["n"])
    return Result("E[q·k] = 0", f"{s['mean']:.3g} ± {stderr:.2g}", measured(s["mean"], 0.0, stderr), {})


def _score_var(d_k: int, scaled: bool, label: str = ""):
    """Var(q·k) (scaled: of q·k/√d_k) measured at d_k; `label`: what the notes print, when not the usual form."""

    def check(seed: int) -> Result:
        scores = score_draw(d_k, seed)
        s = score_statistics(scores / math.sqrt(d_k) if scaled else scores)
        target = 1.0 if scaled else float(d_k)
        verdict = measured(s["var"], target, s["var_stderr"])
        printed = label or (f"Var(q·k/√{d_k}) = 1" if scaled else f"Var(q·k) = d_k = {d_k}")
        return Result(printed, f"{s['var']:.4g} ± {s['var_stderr']:.2g}", verdict, {"n": len(scores)})

    return check


register("product_var", "000", "001", "003", check=_score_var(1, scaled=False, label="Var(qᵢkᵢ) = 1 × 1 − 0 × 0 = 1"))
register("score_var_64", "000", "001", "002", "003", check=_score_var(64, scaled=False))
register("scaled_var", "000", "001", "002", "003", check=_score_var(64, scaled=True))


@claim("gaussian", "001")
def _gaussian(seed: int) -> Result:
    d_k = 4
    s = score_statistics(score_draw(d_k, seed))
    facts = {"d_k": d_k, "kurtosis": s["kurtosis"], "theory": theoretical_score_kurtosis(d_k)}
    computed = f"kurtosis at d_k = {d_k}: {s['kurtosis']:.2f} (3 + 6/d_k = {facts['theory']:.2f}; normal: 3)"
    return Result("q·k ~ N(0, d_k)", computed, "inexact", facts)


@claim("score_std_64", "000")
def _score_std_64(seed: int) -> Result:
    s = score_statistics(score_draw(64, seed))
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
    fits = fits_digits(stated, exact, decimals) and abs(sampled - stated) <= unit / 2 + SIGMAS * stderr
    return "right" if fits else "inexact"


def _within(d_k: int, bound: float, stated: float | None, decimals: int, label: str, scaled: bool = False):
    """Share of |q.k| <= bound at d_k: the normal formula, the exact value and a sample, against `stated`."""

    def check(seed: int) -> Result:
        scores = score_draw(d_k, seed)
        raw_bound = bound * math.sqrt(d_k) if scaled else bound
        sampled, stderr = share_within(scores, raw_bound)
        exact = score_mass(d_k, raw_bound)
        formula = normal_mass(raw_bound / math.sqrt(d_k))
        facts = {"exact": exact, "formula": formula, "sampled": sampled, "outside": 1 - exact, "sigma": math.sqrt(d_k)}
        facts |= {"one_in": 1 / (1 - exact), "stated": stated, "form": "within"}
        computed = f"{100 * exact:.2f}% (normal formula {100 * formula:.2f}%, sampled {100 * sampled:.2f}%)"
        return Result(label, computed, _range_verdict(stated, decimals, exact, sampled, stderr), facts)

    return check


register("within_24", "000", check=_within(64, 24.0, 0.997, 3, "99.7% in [−24, 24]"))
register("within_20", "000", check=_within(64, 20.0, None, 0, "q·k ∈ [−20, 20]"))
register("within_16", "000", check=_within(64, 16.0, 0.95, 2, "most in [−16, 16] … [−24, 24]"))
register("within_3_scaled", "000", check=_within(64, 3.0, None, 0, "q·k/√d_k ∈ [−3, 3]", scaled=True))


@claim("normal_mass", "000")
def _normal_mass(seed: int) -> Result:
    stated = (0.6827, 0.9545, 0.9973)
    true = [normal_mass(k) for k in (1, 2, 3)]
    verdict, _ = printed_verdict(stated, true, 4)
    return Result(
        "68.27%, 95.45%, 99.73%", vec([100 * x for x in true], ".3f").replace(",", "%,")[:-1] + "%]", verdict, {}
    )


@claim("tail", "000")
def _tail(seed: int) -> Result:
    true = 1 - normal_mass(3)
    verdict, _ = printed_verdict((0.0027,), (true,), 4)
    return Result("0.27%", f"{100 * true:.3f}%", verdict, {})


@claim("exp_half_square", "000")
def _exp_half_square(seed: int) -> Result:
    stated = (0.606, 0.135, 0.011)
    true = [math.exp(-(t**2) / 2) for t in (1, 2, 3)]
    verdict, _ = printed_verdict(stated, true, 3)
    return Result(vec(stated, ".3f"), vec(true, ".5f"), verdict, {})


register("range_512", "003", check=_within(512, 20.0, None, 0, "±20 or more"))


@claim("score_std_512", "000")
def _std_512(seed: int) -> Result:
    true = math.sqrt(512)
    verdict, _ = printed_verdict((22.6,), (true,), 1)
    return Result("√512 ≈ 22.6", f"{true:.4f}", verdict, {})


@claim("cos_512", "000")
def _cos_var(seed: int) -> Result:
    s = score_statistics(cosine_similarity_samples(512, SAMPLES_HIGH_D, seed=seed))
    verdict = measured(s["var"], 1 / 512, s["var_stderr"])
    stderr = math.sqrt(s["var"] / s["n"])
    verdict = verdict if measured(s["mean"], 0.0, stderr) == "right" else "wrong"
    computed = f"E = {s['mean']:.1e}, Var = {s['var']:.3e} ± {s['var_stderr']:.1e} (1/512 = {1 / 512:.3e})"
    return Result("E[cos θ] ≈ 0, Var[cos θ] ≈ 1/d_k", computed, verdict, {})


@claim("three_sqrt", "000")
def _three_sqrt(seed: int) -> Result:
    d_k = 64
    scores = score_draw(d_k, seed)
    raw, stderr = share_within(scores, 3 * math.sqrt(d_k))  # the unscaled q.k within 3 sqrt(d_k)
    scaled, _ = share_within(scores / math.sqrt(d_k), 3.0)  # the scaled one within 3: the same pairs
    exact = score_mass(d_k, 3 * math.sqrt(d_k))
    facts = {"raw": raw, "scaled": scaled, "d_k": d_k, "bound": 3 * math.sqrt(d_k), "exact": exact, "stated": None}
    # the exact share, as the within_24 row shows it (one value per quantity); the sample beside it
    computed = f"d_k = 64: |q·k| ≤ 24, i.e. |q·k/8| ≤ 3: {100 * exact:.2f}% (sampled {100 * raw:.2f}%)"
    verdict = _range_verdict(None, 0, exact, raw, stderr)  # printed without a share, like every range
    return Result("q·k/√d_k ∈ [−3√d_k, 3√d_k]", computed, verdict, facts)


@claim("unit_sphere", "000")
def _scaling_as_unit_sphere(seed: int) -> Result:
    """Dividing q.k by sqrt(d_k) is scaling q and k by d_k^(-1/4): their norms become about d_k^(1/4), not 1."""
    d_k = 64
    q = randn(seeded(seed, 15), SAMPLES // 10, d_k)
    norms = (q / d_k**0.25).norm(dim=-1)
    facts = {"d_k": d_k, "norm": float(norms.mean()), "theory": d_k**0.25, "unit_var": 1 / d_k}
    computed = f"|q / d_k^(1/4)| ≈ {facts['norm']:.3f} at d_k = {d_k} (d_k^(1/4) = {d_k**0.25:.3f})"
    return Result("|q|, |k| → ≈ 1", computed, "wrong", facts)


@claim("layernorm", "000")
def _layernorm_sphere(seed: int) -> Result:
    d = 64
    x = randn(seeded(seed, 16), 100, d) * 3 + 1
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
