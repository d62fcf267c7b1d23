import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import (
    cosine_similarity_samples,
    entropy,
    jacobian_norm,
    random_logits,
    sample_score_prefixes,
    sample_scores,
    saturation_summary,
    score_statistics,
    softmax_jacobian,
    theoretical_score_mean,
    theoretical_score_variance,
)

N = 20_000


def variance_tolerance(d_k: int, n: int, fourth_moment_per_term: float) -> float:
    """5 standard errors of the sample variance of q.k, from the moments of the sum of d_k terms.

    Each term q_i k_i has variance 1 and fourth moment mu4; the sum's fourth central moment is
    d_k mu4 + 3 d_k (d_k - 1), so Var(sample variance) ~ (that - d_k^2) / n.
    """
    m4 = d_k * fourth_moment_per_term + 3 * d_k * (d_k - 1)
    return 5 * math.sqrt((m4 - d_k**2) / n)


@pytest.mark.parametrize("d_k", [1, 16, 64, 512])
def test_variance_of_dot_product_is_d_k(d_k):
    scores = sample_scores(d_k, N, seed=d_k)
    stats = score_statistics(scores)
    # For N(0,1) entries E[(q k)^4] = E[q^4] E[k^4] = 9.
    assert abs(stats["var"] - d_k) < variance_tolerance(d_k, N, 9.0)
    assert abs(stats["mean"]) < 5 * math.sqrt(d_k / N)
    scaled = score_statistics(scores / math.sqrt(d_k))
    assert abs(scaled["var"] - 1) < variance_tolerance(d_k, N, 9.0) / d_k


def test_prefix_sweep_gives_every_d_k_its_variance():
    d_ks = (1, 8, 64, 512)
    scores = sample_score_prefixes(d_ks, N, seed=11)
    assert scores.shape == (N, len(d_ks))
    for column, d_k in enumerate(d_ks):
        assert abs(float(scores[:, column].var()) - d_k) < variance_tolerance(d_k, N, 9.0)
    torch.testing.assert_close(scores[:, -1], sample_scores(512, N, seed=11))


def test_uniform_unit_variance_also_gives_d_k():
    d_k = 64
    stats = score_statistics(sample_scores(d_k, N, distribution="uniform", seed=3))
    # U(-sqrt3, sqrt3) has E[x^4] = 9/5, so E[(q k)^4] = 81/25.
    assert abs(stats["var"] - d_k) < variance_tolerance(d_k, N, 81 / 25)


def test_shifted_mean_breaks_the_assumption_as_predicted():
    d_k, mu = 32, 1.0
    stats = score_statistics(sample_scores(d_k, N, distribution="shifted", mean=mu, seed=4))
    theory = theoretical_score_variance(d_k, distribution="shifted", mean=mu)
    assert theory == d_k * 3  # (1 + 2 mu^2) d_k
    assert abs(stats["mean"] - theoretical_score_mean(d_k, distribution="shifted", mean=mu)) < 5 * math.sqrt(theory / N)
    assert abs(stats["var"] - theory) < 5 * stats["var_stderr"]
    assert stats["var"] > 2 * d_k  # far from the d_k the zero-mean derivation promises


def test_share_within_three_sigma_is_gaussian_for_large_d_k():
    stats = score_statistics(sample_scores(256, N, seed=5))
    # 99.73% for a Gaussian; binomial standard error sqrt(p(1-p)/N) ~ 3.7e-4.
    assert abs(stats["share_within_3sigma"] - 0.9973) < 5 * math.sqrt(0.9973 * 0.0027 / N) + 1e-3


def test_sampling_in_chunks_is_reproducible_and_seeded():
    a, b = sample_scores(1024, 5000, seed=7), sample_scores(1024, 5000, seed=7)
    assert torch.equal(a, b) and not torch.equal(a, sample_scores(1024, 5000, seed=8))


def test_entropy_extremes():
    assert float(entropy(torch.full((8,), 1 / 8))) == pytest.approx(math.log(8))
    assert float(entropy(torch.tensor([1.0, 0.0, 0.0]))) == 0.0


@given(st.lists(st.floats(-30, 30), min_size=1, max_size=8))
def test_jacobian_matches_autograd(logits):
    x = torch.tensor(logits, dtype=torch.float64)
    p = torch.softmax(x, -1)
    auto = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), x)
    torch.testing.assert_close(softmax_jacobian(p), auto)


def test_saturation_shrinks_the_gradient():
    flat, spiky = torch.tensor([2.5, 0.0, -2.5]), torch.tensor([20.0, 0.0, -20.0])
    assert float(jacobian_norm(torch.softmax(spiky, -1))) < 1e-7 < float(jacobian_norm(torch.softmax(flat, -1)))
    unscaled = saturation_summary(random_logits(512, 64, 16, scaled=False))
    scaled = saturation_summary(random_logits(512, 64, 16, scaled=True))
    assert unscaled["max_weight"] > 0.9 > scaled["max_weight"]
    assert unscaled["jacobian_norm"] < scaled["jacobian_norm"] / 3
    hot = saturation_summary(random_logits(64, 64, 16, scaled=True), temperature=100.0)
    assert hot["entropy"] == pytest.approx(math.log(16), rel=1e-3)


def test_cosine_variance_is_one_over_d():
    for d in (4, 256):
        c = cosine_similarity_samples(d, N, seed=d)
        # E[cos] = 0 and E[cos^2] = 1/d for isotropic vectors; E[cos^4] = 3/(d(d+2)) gives the SE.
        var_cos2 = 3 / (d * (d + 2)) - 1 / d**2
        assert abs(float(c.var()) - 1 / d) < 5 * math.sqrt(var_cos2 / N)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sample_scores(0, 10), "d_k"),
        (lambda: sample_scores(4, 1), "n_pairs"),
        (lambda: sample_scores(4, 10, distribution="cauchy"), "distribution"),
        (lambda: jacobian_norm(torch.ones(3), ord="nuc"), "ord"),
        (lambda: saturation_summary(torch.ones(3), temperature=0), "temperature"),
        (lambda: score_statistics(torch.ones(1)), "at least 2"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_normal_mass_is_the_3_sigma_rule():
    from attn_core import normal_mass

    assert [round(normal_mass(k), 4) for k in (1, 2, 3)] == [0.6827, 0.9545, 0.9973]
    with pytest.raises(ValueError, match="k"):
        normal_mass(-1)


def test_score_mass_is_exact_for_d_k_2_and_matches_sampling_at_64():
    from attn_core import normal_mass, score_mass, share_within

    # two products: q.k is Laplace(0, 1), so P(|q.k| <= b) = 1 - e^(-b)
    for b in (0.5, 1.0, 3.0):
        assert score_mass(2, b) == pytest.approx(1 - math.exp(-b), abs=1e-7)
    exact = score_mass(64, 24.0)
    p, se = share_within(sample_scores(64, 200_000, seed=3), 24.0)
    assert abs(p - exact) < 4 * se
    # the normal formula overstates the mass inside 3 sigma: q.k at d_k = 64 has heavier tails
    assert exact == pytest.approx(0.99670, abs=1e-5) and normal_mass(3) - exact > 5e-4
    assert score_mass(100_000, 3 * 100_000**0.5) == pytest.approx(normal_mass(3), abs=1e-5)  # Gaussian in the limit


def test_kurtosis_of_the_dot_product_is_3_plus_6_over_d_k():
    from attn_core import theoretical_score_kurtosis

    assert theoretical_score_kurtosis(1) == 9 and theoretical_score_kurtosis(64) == pytest.approx(3.09375)
    for d_k, tol in ((1, 1.5), (4, 0.25), (64, 0.1)):
        measured = score_statistics(sample_scores(d_k, 100_000, seed=d_k))["kurtosis"]
        assert abs(measured - theoretical_score_kurtosis(d_k)) < tol, d_k
    with pytest.raises(ValueError, match="d_k"):
        theoretical_score_kurtosis(0)


def test_share_within_counts_and_refuses_bad_input():
    from attn_core import share_within

    p, se = share_within(torch.tensor([-3.0, -1.0, 0.5, 2.0]), 1.0)
    assert p == 0.5 and se == pytest.approx(0.25)
    with pytest.raises(ValueError, match="bound"):
        share_within(torch.tensor([1.0, 2.0]), 0.0)
