"""Why divide by sqrt(d_k), and what softmax saturation does to gradients.

If q_i, k_i are independent with mean mu and variance sigma^2, then
    E[q.k] = d_k mu^2,   Var(q.k) = d_k (sigma^4 + 2 sigma^2 mu^2)     (= d_k for N(0, 1))
so scaling by 1/sqrt(d_k) brings the standard-normal case back to unit variance.
"""

from __future__ import annotations

import math

import torch

from attn_core._checks import check_int, check_positive, check_tensor
from attn_core.budget import check_budget, tensor_bytes

DISTRIBUTIONS = ("normal", "uniform", "shifted")
_CHUNK_ELEMENTS = 1 << 22  # draw at most 4M numbers at a time, whatever d_k x n_pairs is


def _draw(distribution: str, shape, mean: float, gen: torch.Generator) -> torch.Tensor:
    if distribution == "uniform":  # U(-sqrt 3, sqrt 3): mean 0, variance 1
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * math.sqrt(3.0)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    return x + mean if distribution == "shifted" else x


def _check_distribution(distribution: str) -> None:
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


def sample_scores(d_k: int, n_pairs: int, *, distribution: str = "normal", mean: float = 1.0, seed: int = 0):
    """Unscaled dot products q.k of `n_pairs` independent pairs of d_k-vectors, shape (n_pairs,), fp64.

    distribution: "normal" N(0, 1), "uniform" with unit variance, or "shifted" N(mean, 1) entries
    (non-zero mean breaks the zero-mean assumption of the derivation).
    """
    return sample_score_prefixes((d_k,), n_pairs, distribution=distribution, mean=mean, seed=seed)[:, 0]


def sample_score_prefixes(d_ks, n_pairs: int, *, distribution: str = "normal", mean: float = 1.0, seed: int = 0):
    """q.k for several d_k at once, shape (n_pairs, len(d_ks)): column j sums the first d_ks[j] products.

    One draw of max(d_ks)-vectors serves every d_k (prefixes of the same vectors are honest samples
    of each size), which makes a sweep over d_k = 1..1024 cost one draw instead of eleven.
    """
    d_ks = tuple(d_ks)
    if not d_ks:
        raise ValueError("d_ks must name at least one d_k")
    for d_k in d_ks:
        check_int("d_k", d_k, minimum=1)
    check_int("n_pairs", n_pairs, minimum=2)
    _check_distribution(distribution)
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    d_max = max(d_ks)
    columns = torch.tensor(d_ks) - 1
    rows = max(1, _CHUNK_ELEMENTS // d_max)
    chunks = []
    for start in range(0, n_pairs, rows):
        size = (min(rows, n_pairs - start), d_max)
        q, k = _draw(distribution, size, mean, gen), _draw(distribution, size, mean, gen)
        chunks.append((q * k).cumsum(dim=-1)[:, columns])  # (rows, len(d_ks))
    return torch.cat(chunks)


def theoretical_score_mean(d_k: int, *, distribution: str = "normal", mean: float = 1.0) -> float:
    _check_distribution(distribution)
    return d_k * mean**2 if distribution == "shifted" else 0.0


def theoretical_score_variance(d_k: int, *, distribution: str = "normal", mean: float = 1.0) -> float:
    """d_k (sigma^4 + 2 sigma^2 mu^2) with sigma = 1; mu = 0 except for "shifted"."""
    _check_distribution(distribution)
    mu = mean if distribution == "shifted" else 0.0
    return d_k * (1.0 + 2.0 * mu**2)


def theoretical_score_kurtosis(d_k: int) -> float:
    """Kurtosis E[(q.k)^4] / Var^2 of q.k for N(0, 1) entries: 3 + 6 / d_k (a normal has 3).

    Each product q_i k_i has fourth moment 9; summing d_k of them pulls the kurtosis towards 3 as 1/d_k,
    so q.k is Gaussian only in the limit: at d_k = 1 it is the product of two normals.
    """
    check_int("d_k", d_k, minimum=1)
    return 3.0 + 6.0 / d_k


def normal_mass(k: float) -> float:
    """P(|Z| <= k) for Z ~ N(0, 1): erf(k / sqrt 2), e.g. 0.6827, 0.9545, 0.9973 at k = 1, 2, 3."""
    return math.erf(check_positive("k", k) / math.sqrt(2.0))


_MASS_POINTS = 20_001


def score_mass(d_k: int, bound: float) -> float:
    """P(|q.k| <= bound) exactly (to about 1e-7) for q, k with independent N(0, 1) entries, without sampling.

    Given q, q.k ~ N(0, |q|^2), so P = E[erf(bound / (sqrt 2 R))] with R = |q| chi-distributed with
    d_k degrees of freedom; the expectation is integrated on a fine grid of R. It differs from the
    normal formula erf(bound / sqrt(2 d_k)) because q.k is not exactly normal (its tails are heavier).
    """
    check_int("d_k", d_k, minimum=1)
    bound = check_positive("bound", bound)
    r = torch.linspace(0.0, math.sqrt(d_k) + 16.0, _MASS_POINTS, dtype=torch.float64)  # (points,)
    log_norm = (d_k / 2 - 1) * math.log(2) + math.lgamma(d_k / 2)  # the chi density's normalising constant
    log_pdf = (d_k - 1) * torch.log(r.clamp_min(1e-300)) - r**2 / 2 - log_norm
    at_zero = math.sqrt(2 / math.pi) if d_k == 1 else 0.0  # r^0 at r = 0 for d_k = 1, else r^(d_k - 1) = 0
    pdf = torch.where(r > 0, log_pdf.exp(), torch.tensor(at_zero, dtype=r.dtype))
    inside = torch.where(r > 0, torch.special.erf(bound / (math.sqrt(2.0) * r.clamp_min(1e-300))), torch.ones_like(r))
    return float(torch.trapezoid(pdf * inside, r) / torch.trapezoid(pdf, r))


def share_within(x: torch.Tensor, bound: float) -> tuple[float, float]:
    """The share of |x| <= bound and its binomial standard error sqrt(p (1 - p) / N)."""
    check_tensor("x", x)
    bound = check_positive("bound", bound)
    values = x.detach().reshape(-1)
    if values.numel() < 2:
        raise ValueError(f"x must hold at least 2 values, got {values.numel()}")
    p = float((values.abs() <= bound).double().mean())
    return p, math.sqrt(p * (1 - p) / values.numel())


def score_statistics(scores: torch.Tensor) -> dict[str, float]:
    """Mean, variance (unbiased), its standard error, the share within 3 sample sigmas, and the kurtosis m4 / m2^2.

    The standard error of the sample variance is sqrt((m4 - s^4) / N), m4 the fourth central moment:
    it tells how far from the theory an honest sample may land.
    """
    check_tensor("scores", scores)
    x = scores.detach().reshape(-1).to(torch.float64)
    if x.numel() < 2:
        raise ValueError(f"scores must hold at least 2 values, got {x.numel()}")
    mean, var = x.mean(), x.var()
    m4 = ((x - mean) ** 4).mean()
    std = var.sqrt()
    inside = ((x - mean).abs() <= 3 * std).double().mean() if std > 0 else torch.tensor(1.0)
    kurtosis = m4 / ((x - mean) ** 2).mean() ** 2 if std > 0 else torch.tensor(float("nan"))
    return {
        "n": x.numel(),
        "mean": float(mean),
        "var": float(var),
        "std": float(std),
        "var_stderr": float(((m4 - var**2).clamp_min(0) / x.numel()).sqrt()),
        "share_within_3sigma": float(inside),
        "kurtosis": float(kurtosis),
    }


def entropy(p: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy in nats, with 0 log 0 = 0: log(n) for uniform weights, 0 for one-hot."""
    check_tensor("p", p)
    return -(p * torch.log(torch.where(p > 0, p, torch.ones_like(p)))).sum(dim=dim)


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """d softmax(x) / dx = diag(p) - p p^T, shape (..., n, n) for weights p of shape (..., n)."""
    check_tensor("p", p)
    n = p.shape[-1]
    check_budget(tensor_bytes((*p.shape, n), p.dtype, 2), f"a {n} x {n} softmax Jacobian", "Use fewer keys.")
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)


def jacobian_norm(p: torch.Tensor, ord: str = "fro") -> torch.Tensor:
    """Frobenius ("fro") or spectral ("2") norm of the softmax Jacobian, shape (...,).

    It tends to 0 as p becomes one-hot: a saturated softmax passes almost no gradient back.
    """
    if ord not in ("fro", "2"):
        raise ValueError(f"ord must be 'fro' or '2', got {ord!r}")
    jac = softmax_jacobian(p)
    return torch.linalg.matrix_norm(jac, ord="fro" if ord == "fro" else 2)


def saturation_summary(logits: torch.Tensor, *, temperature: float = 1.0) -> dict[str, float]:
    """Mean entropy, mean largest weight and mean Jacobian norm of softmax(logits / T) over rows."""
    check_tensor("logits", logits)
    temperature = check_positive("temperature", temperature)
    p = torch.softmax(logits.to(torch.float64) / temperature, dim=-1)
    return {
        "entropy": float(entropy(p).mean()),
        "max_weight": float(p.amax(dim=-1).mean()),
        "jacobian_norm": float(jacobian_norm(p).mean()),
    }


def random_logits(d_k: int, n_rows: int, n_keys: int, *, scaled: bool, seed: int = 0) -> torch.Tensor:
    """Logits q.k (/ sqrt(d_k) if `scaled`) for standard-normal q, k: shape (n_rows, n_keys), fp64."""
    check_int("d_k", d_k, minimum=1)
    check_int("n_rows", n_rows, minimum=1)
    check_int("n_keys", n_keys, minimum=1)
    check_budget(tensor_bytes((n_rows, n_keys), torch.float64), f"{n_rows} x {n_keys} logits", "Use fewer rows.")
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    q = torch.randn(n_rows, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    logits = q @ k.T
    return logits / math.sqrt(d_k) if scaled else logits


def cosine_similarity_samples(d: int, n_pairs: int, *, seed: int = 0) -> torch.Tensor:
    """cos(theta) between independent standard-normal d-vectors; its variance is 1/d."""
    check_int("d", d, minimum=1)
    check_int("n_pairs", n_pairs, minimum=2)
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    a = torch.randn(n_pairs, d, generator=gen, dtype=torch.float64)
    b = torch.randn(n_pairs, d, generator=gen, dtype=torch.float64)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)
