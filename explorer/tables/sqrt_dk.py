"""Tables for "Why divide by sqrt(d_k)": score histograms, variance against d_k, one softmax row.

The functions the page calls keep their results for the whole server (@cached), shared and read-only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from attn_core.naive import masked_softmax
from attn_core.stats import DISTRIBUTIONS as DISTRIBUTIONS  # the page's choice of the entries' distribution
from attn_core.stats import (
    sample_score_prefixes,
    sample_scores,
    score_statistics,
    theoretical_score_kurtosis,
    theoretical_score_variance,
)
from explorer.ui.cache import cached

D_K_SWEEP = tuple(2**i for i in range(11))  # 1 .. 1024
BINS = 60
NOT_NORMAL = 0.5  # excess kurtosis from which the histogram visibly departs from the bell curve


def _gaussian(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-(x**2) / (2 * var)) / math.sqrt(2 * math.pi * var)


@cached(32)
def score_histograms(d_k: int, n_pairs: int, distribution: str, mean: float, seed: int):
    """Histogram densities of unscaled and scaled scores with N(0, d_k) and N(0, 1) beside them.

    Returns (bars, curves, stats): bars has columns series, left, right, density; curves has
    series, x, density; stats maps "unscaled"/"scaled" to score_statistics.
    """
    raw = sample_scores(d_k, n_pairs, distribution=distribution, mean=mean, seed=seed)
    series = {"unscaled": raw, "scaled": raw / math.sqrt(d_k)}
    theory_var = {"unscaled": float(d_k), "scaled": 1.0}
    bars, curves, stats = [], [], {}
    for name, x in series.items():
        values = x.numpy()
        density, edges = np.histogram(values, bins=BINS, density=True)
        bars.append(pd.DataFrame({"series": name, "left": edges[:-1], "right": edges[1:], "density": density}))
        grid = np.linspace(edges[0], edges[-1], 200)
        curves.append(pd.DataFrame({"series": name, "x": grid, "density": _gaussian(grid, theory_var[name])}))
        stats[name] = score_statistics(x)
    return pd.concat(bars, ignore_index=True), pd.concat(curves, ignore_index=True), stats


@cached(32)
def histogram_facts(d_k: int, n_pairs: int, distribution: str, mean: float, seed: int) -> dict:
    """What the page says beside score_histograms: theory_var (Var(q.k) in theory), bands (each series' mean +- 3
    sample sigmas, where the caption's share is counted), kurtosis_theory (3 + 6/d_k for N(0, 1) entries, else
    None), and not_normal: whether the excess kurtosis (in theory, else measured) reaches NOT_NORMAL."""
    _, _, stats = score_histograms(d_k, n_pairs, distribution, mean, seed)
    bands = {name: (s["mean"] - 3 * s["std"], s["mean"] + 3 * s["std"]) for name, s in stats.items()}
    kurtosis = theoretical_score_kurtosis(d_k) if distribution == "normal" else None
    excess = (kurtosis if kurtosis is not None else stats["scaled"]["kurtosis"]) - 3
    return {
        "theory_var": theoretical_score_variance(d_k, distribution=distribution, mean=mean),
        "bands": bands,
        "kurtosis_theory": kurtosis,
        "not_normal": abs(excess) >= NOT_NORMAL,
    }


@cached(32)
def series_bars(d_k: int, n_pairs: int, distribution: str, mean: float, seed: int, series: str) -> pd.DataFrame:
    """The bars of one series of score_histograms ("unscaled" or "scaled"), as its own chart exports them."""
    bars, _, _ = score_histograms(d_k, n_pairs, distribution, mean, seed)
    return bars[bars.series == series]


@cached(16)
def variance_sweep(n_pairs: int, distribution: str, mean: float, seed: int) -> pd.DataFrame:
    """Empirical Var(q.k) for d_k = 1..1024 with its standard error and the theory line."""
    scores = sample_score_prefixes(D_K_SWEEP, n_pairs, distribution=distribution, mean=mean, seed=seed)
    rows = []
    for column, d_k in enumerate(D_K_SWEEP):
        s = score_statistics(scores[:, column])
        theory = theoretical_score_variance(d_k, distribution=distribution, mean=mean)
        rows.append({"d_k": d_k, "empirical": s["var"], "stderr": s["var_stderr"], "theory": theory})
    return pd.DataFrame(rows)


@cached(64)
def softmax_row(d_k: int, n_keys: int, temperature: float, seed: int) -> pd.DataFrame:
    """One query against n_keys keys: softmax weights of the unscaled and the scaled logits.

    Columns: key, series ("unscaled"/"scaled"), logit, weight. Temperature divides both.
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    logits = k @ q
    frames = []
    for name, x in (("unscaled", logits), ("scaled", logits / math.sqrt(d_k))):
        w = masked_softmax(x / temperature)
        frames.append(pd.DataFrame({"key": range(n_keys), "series": name, "logit": x.numpy(), "weight": w.numpy()}))
    return pd.concat(frames, ignore_index=True)


@cached(64)
def logit_spans(d_k: int, n_keys: int, seed: int) -> dict[str, float]:
    """The span (largest minus smallest logit) of softmax_row's unscaled and scaled logits: the gaps softmax sees."""
    row = softmax_row(d_k, n_keys, 1.0, seed)  # the logits do not depend on the temperature
    return row.groupby("series").logit.agg(lambda x: x.max() - x.min()).to_dict()


@cached(64)
def largest_weights(d_k: int, n_keys: int, temperature: float, seed: int) -> dict[str, float]:
    """The largest softmax weight of softmax_row's unscaled and of its scaled row."""
    return softmax_row(d_k, n_keys, temperature, seed).groupby("series").weight.max().to_dict()


def scaled_moments(d_k: int, mean: float) -> tuple[float, float]:
    """Variance and mean of q.k / sqrt(d_k) for N(mu, 1) entries: 1 + 2 mu^2 and sqrt(d_k) mu^2 (it drifts)."""
    return theoretical_score_variance(d_k, distribution="shifted", mean=mean) / d_k, math.sqrt(d_k) * mean**2
