"""Tables for "Geometry and kernel regression": the convex hull, Nadaraya-Watson, parity, near-orthogonality.

output = sum_i alpha_i v_i,  alpha_i >= 0,  sum_i alpha_i = 1   ->  output lies in the convex hull of the v_i
alpha_i = exp(q.k_i / (sqrt(d) T)) / sum_j exp(q.k_j / (sqrt(d) T))  =  Nadaraya-Watson, exponential kernel

The functions the page calls keep their results for the whole server (@cached), shared and read-only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch
from torch import nn

from attn_core._checks import check_int, check_positive
from attn_core.naive import naive_attention
from attn_core.regression import AdditiveAttention, nadaraya_watson, parameter_count
from attn_core.stats import cosine_similarity_samples, score_statistics
from explorer.ui.cache import cached

COS_D_SWEEP = tuple(2**i for i in range(1, 11))  # 2 .. 1024
COS_BINS = 50
COS_NARROW_FROM = min(d for d in COS_D_SWEEP if 3 / math.sqrt(d) < 1)  # the first d whose 3 sd bound an angle: 16
COS_PAIRS = 3000  # histogram pairs: Var cos is measured to about 2.6% (sqrt(2/3000)), whatever d
COS_SWEEP_PAIRS = 1000  # per d in the sweep: 5% is invisible on log axes, and 10 sizes stay fast
REGRESSION_GRID = 200  # query points along the x axis of the 1-D demo
REGRESSION_RANGE = (-3.0, 3.0)
PARITY_PAIRS = 300
MAX_POINTS = 64


# 1. The convex hull, by Andrew's monotone chain: sort by x, then build the lower and the upper chain,
#    dropping the middle point of every clockwise (or straight) turn.


def _check_points(points) -> np.ndarray:
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0:
        raise ValueError(f"points must have shape (n >= 1, 2), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("points must be finite numbers")
    return pts


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """z-component of (a - o) x (b - o): > 0 for a counter-clockwise turn o -> a -> b."""
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def convex_hull(points) -> np.ndarray:
    """Indices of the hull's vertices, counter-clockwise from the lowest-leftmost point.

    Points inside or on an edge (collinear) are left out; 1 or 2 distinct points give themselves.
    """
    pts = _check_points(points)
    _, first = np.unique(pts, axis=0, return_index=True)  # drop duplicates, keep the first copy
    order = first[np.lexsort((pts[first, 1], pts[first, 0]))]  # by x, then by y
    if len(order) < 3:
        return order

    def chain(indices):
        out: list[int] = []
        for i in indices:
            while len(out) >= 2 and _cross(pts[out[-2]], pts[out[-1]], pts[i]) <= 0:
                out.pop()
            out.append(int(i))
        return out

    lower, upper = chain(order), chain(order[::-1])
    return np.array(lower[:-1] + upper[:-1])  # each chain ends where the other begins


def in_hull(point, vertices, *, tol: float = 1e-9) -> bool:
    """Whether `point` lies in the convex polygon `vertices` (counter-clockwise), boundary included.

    `tol` is relative to the polygon's size, so rounding in a convex combination never reads as "outside".
    """
    p = np.asarray(point, dtype=np.float64)
    poly = _check_points(vertices)
    slack = tol * max(1.0, float(np.abs(poly).max()), float(np.abs(p).max())) ** 2
    if len(poly) == 1:
        return bool(np.linalg.norm(p - poly[0]) ** 2 <= slack)
    if len(poly) == 2:  # a segment: collinear, and between its ends
        a, b = poly
        t = float(np.dot(p - a, b - a))
        return abs(_cross(a, b, p)) <= slack and -slack <= t <= float(np.dot(b - a, b - a)) + slack
    return all(_cross(poly[i], poly[(i + 1) % len(poly)], p) >= -slack for i in range(len(poly)))


# 2. The 2-D picture: values from the seed, keys = values, one query; attention against Nadaraya-Watson.


def value_points(n_points: int, seed: int) -> np.ndarray:
    """n_points standard-normal 2-D value vectors from the seed, shape (n_points, 2)."""
    check_int("n_points", n_points, minimum=1, maximum=MAX_POINTS)
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    return torch.randn(n_points, 2, generator=gen, dtype=torch.float64).numpy()


@cached(64)
def hull_view(n_points: int, q_x: float, q_y: float, temperature: float, seed: int):
    """Everything the 2-D picture shows, with the keys equal to the values.

    Returns (points, hull, summary): points has columns point, x, y, logit, attention, nw (the two weights);
    hull has order, x, y (closed: the first vertex repeated at the end); summary holds the two outputs,
    their largest differences, the centroid and whether the output lies in the hull.
    """
    temperature = check_positive("temperature", temperature)
    v = torch.from_numpy(value_points(n_points, seed))  # (n, 2)
    q = torch.tensor([[q_x, q_y]], dtype=torch.float64)  # (1, 2)
    scale = 1 / math.sqrt(2)
    out, w = naive_attention(q, v, v, temperature=temperature)  # softmax(q K^T / (sqrt(2) T)) V
    nw_out, nw_w = nadaraya_watson(q, v, v, kernel="exponential", scale=scale / temperature)
    names = [f"v{i + 1}" for i in range(n_points)]
    points = pd.DataFrame(
        {
            "point": names,
            "x": v[:, 0].numpy(),
            "y": v[:, 1].numpy(),
            "logit": (q @ v.T)[0].numpy() * scale / temperature,
            "attention": w[0].numpy(),
            "nw": nw_w[0].numpy(),
        }
    )
    vertices = convex_hull(v.numpy())
    closed = np.append(vertices, vertices[0])
    hull = pd.DataFrame({"order": range(len(closed)), "x": v[closed, 0].numpy(), "y": v[closed, 1].numpy()})
    output = out[0].numpy()
    summary = {
        "output": (float(output[0]), float(output[1])),
        "nw_output": (float(nw_out[0, 0]), float(nw_out[0, 1])),
        "max_abs_diff_output": float((out - nw_out).abs().max()),
        "max_abs_diff_weights": float((w - nw_w).abs().max()),
        "centroid": tuple(float(c) for c in v.mean(dim=0)),
        "inside": in_hull(output, v[vertices].numpy()),
        "n_vertices": len(vertices),
    }
    return points, hull, summary


# 3. Kernel regression in 1-D: the gaussian kernel is local, the exponential (dot-product) kernel is not.


def target_function(x: np.ndarray) -> np.ndarray:
    return np.sin(2 * x) + 0.3 * x


@cached(64)
def regression_1d(n_samples: int, noise: float, bandwidth: float, seed: int):
    """Noisy samples of sin(2x) + 0.3x and the Nadaraya-Watson curves of both kernels.

    Returns (samples, curves, rmse): samples has x, y; curves has series, x, y (series "truth",
    "gaussian", "exponential"); rmse maps each kernel to its root-mean-square error against the truth.
    The exponential kernel is exp(x x_i / h^2): the gaussian one is the same times exp(-x_i^2 / 2h^2).
    """
    check_int("n_samples", n_samples, minimum=2, maximum=10_000)
    bandwidth = check_positive("bandwidth", bandwidth)
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    lo, hi = REGRESSION_RANGE
    x = lo + (hi - lo) * torch.rand(n_samples, 1, generator=gen, dtype=torch.float64)  # keys (n, 1)
    y = torch.from_numpy(target_function(x.numpy())) + noise * torch.randn(n_samples, 1, generator=gen, dtype=x.dtype)
    grid = torch.linspace(lo, hi, REGRESSION_GRID, dtype=torch.float64)[:, None]  # queries (G, 1)
    truth = target_function(grid.numpy()[:, 0])
    curves = [pd.DataFrame({"series": "truth", "x": grid[:, 0].numpy(), "y": truth})]
    rmse = {}
    for kernel in ("gaussian", "exponential"):
        pred, _ = nadaraya_watson(grid, x, y, kernel=kernel, scale=1 / bandwidth**2, bandwidth=bandwidth)
        curves.append(pd.DataFrame({"series": kernel, "x": grid[:, 0].numpy(), "y": pred[:, 0].numpy()}))
        rmse[kernel] = float(np.sqrt(np.mean((pred[:, 0].numpy() - truth) ** 2)))
    samples = pd.DataFrame({"x": x[:, 0].numpy(), "y": y[:, 0].numpy()})
    return samples, pd.concat(curves, ignore_index=True), rmse


@cached(64)
def regression_rows(n_samples: int, noise: float, bandwidth: float, seed: int) -> pd.DataFrame:
    """regression_1d's samples and curves in one frame, as its chart exports them: columns series, x, y."""
    samples, curves, _ = regression_1d(n_samples, noise, bandwidth, seed)
    return pd.concat([samples.assign(series="samples")[["series", "x", "y"]], curves], ignore_index=True)


# 4. Parity: a dot product is even in (q, k), tanh makes the additive score odd.


def _additive(d: int, hidden: int, gen: torch.Generator) -> AdditiveAttention:
    """AdditiveAttention(d, d, hidden) with N(0, 1/fan_in) weights drawn from `gen` (not the global RNG)."""
    module = AdditiveAttention(d, d, hidden).double()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) / math.sqrt(p.shape[1]))
    return module


@cached(64)
def weights_table(n_points: int, q_x: float, q_y: float, temperature: float, seed: int, labels: tuple[str, ...]):
    """hull_view's weights as the page's table shows them: a row per kind (logit, attention, Nadaraya-Watson
    weight) named by `labels`, a column per value (v1, v2, ...)."""
    points, _, _ = hull_view(n_points, q_x, q_y, temperature, seed)
    weights = points.set_index("point")[["logit", "attention", "nw"]].T
    weights.index = list(labels)
    weights.columns.name = None  # the value names head their own columns
    return weights


@cached(64)
def parity_samples(d: int, hidden: int, seed: int, n_pairs: int = PARITY_PAIRS):
    """score(q, k) against score(-q, -k) for random pairs, additive and scaled dot-product.

    Returns (pairs, stats, params): pairs has columns score ("additive"/"dot product"), s, s_flipped;
    stats has the largest odd and even residuals max|s(-q,-k) + s(q,k)|, max|s(-q,-k) - s(q,k)| per score;
    params has score ("dot product"/"bilinear"/"additive": qᵀk/√d, qᵀMk, wᵀtanh(W_q q + W_k k)) and parameters.
    """
    check_int("d", d, minimum=1, maximum=4096)
    check_int("hidden", hidden, minimum=1, maximum=4096)
    check_int("n_pairs", n_pairs, minimum=1, maximum=100_000)
    gen = torch.Generator().manual_seed(check_int("seed", seed))
    q = torch.randn(n_pairs, 1, d, generator=gen, dtype=torch.float64)  # one query per pair
    k = torch.randn(n_pairs, 1, d, generator=gen, dtype=torch.float64)  # one key per pair
    additive = _additive(d, hidden, gen)
    with torch.no_grad():
        scores = {
            "additive": (additive.scores(q, k), additive.scores(-q, -k)),
            "dot product": (q @ k.transpose(-2, -1) / math.sqrt(d), (-q) @ (-k).transpose(-2, -1) / math.sqrt(d)),
        }
    frames, stats = [], {}
    for name, (s, s_flip) in scores.items():
        s, s_flip = s.reshape(-1), s_flip.reshape(-1)
        frames.append(pd.DataFrame({"score": name, "s": s.numpy(), "s_flipped": s_flip.numpy()}))
        stats[name] = {"odd": float((s_flip + s).abs().max()), "even": float((s_flip - s).abs().max())}
    params = pd.DataFrame(
        {
            "score": ["dot product", "bilinear", "additive"],
            "parameters": [0, parameter_count(nn.Bilinear(d, d, 1, bias=False)), parameter_count(additive)],
        }
    )
    return pd.concat(frames, ignore_index=True), stats, params


@cached(16)
def parameters_table(
    d: int, hidden: int, seed: int, names: Mapping[str, str], counts: Mapping[str, str], headers: Mapping[str, str]
) -> pd.DataFrame:
    """parity_samples' parameter counts as the page's table shows them: each score by its name, its count and the
    count's formula, under `headers` (score, parameters, formula)."""
    _, _, params = parity_samples(d, hidden, seed)
    return pd.DataFrame(
        {
            headers["score"]: params.score.map(names),
            headers["parameters"]: params.parameters,
            headers["formula"]: params.score.map(counts),
        }
    )


# 5. Random directions in high dimension are nearly orthogonal: Var cos(theta) = 1/d exactly.


def cosine_density(t: np.ndarray, d: int) -> np.ndarray:
    """Density of cos(theta) between independent isotropic d-vectors: c_d (1 - t^2)^((d - 3) / 2), d >= 2."""
    c = math.exp(math.lgamma(d / 2) - math.lgamma((d - 1) / 2) - 0.5 * math.log(math.pi))
    with np.errstate(divide="ignore"):  # d = 2 diverges at t = +-1: inf there is the right answer
        return c * np.power(np.clip(1 - np.asarray(t, dtype=np.float64) ** 2, 0, None), (d - 3) / 2)


@cached(64)
def cosine_histogram(d: int, n_pairs: int, seed: int):
    """Histogram density of cos(theta) for n_pairs random pairs in d dimensions, and the exact density.

    Returns (bars, curve, stats): bars has left, right, density; curve has x, density;
    stats is score_statistics of the cosines plus "theory" = 1/d and the_band(cos, d).
    """
    check_int("d", d, minimum=2)
    cos = cosine_similarity_samples(d, n_pairs, seed=seed)
    density, edges = np.histogram(cos.numpy(), bins=COS_BINS, range=(-1, 1), density=True)
    bars = pd.DataFrame({"left": edges[:-1], "right": edges[1:], "density": density})
    grid = np.linspace(-0.995, 0.995, 399)  # the d = 2 density is unbounded at +-1
    curve = pd.DataFrame({"x": grid, "density": cosine_density(grid, d)})
    return bars, curve, score_statistics(cos) | {"theory": 1 / d} | three_sd_band(cos, d)


def three_sd_band(cos: torch.Tensor, d: int) -> dict[str, float]:
    """How close to 90 deg random directions are: band = 3 standard deviations of cos(theta), 3/sqrt(d); within =
    the share of the sampled cosines inside +-band; degrees = the angle from 90 deg that band allows (nan when the
    band reaches past +-1, d <= 9: then it allows every angle)."""
    band = 3 / math.sqrt(d)
    within = float((cos.abs() <= band).double().mean())
    return {"band": band, "within": within, "degrees": math.degrees(math.asin(band)) if band < 1 else math.nan}


@cached(8)
def cosine_variance_sweep(n_pairs: int, seed: int) -> pd.DataFrame:
    """Measured Var cos(theta) with its standard error against the theory 1/d, for d = 2 .. 1024."""
    rows = []
    for d in COS_D_SWEEP:
        s = score_statistics(cosine_similarity_samples(d, n_pairs, seed=seed + d))
        rows.append({"d": d, "empirical": s["var"], "stderr": s["var_stderr"], "theory": 1 / d})
    return pd.DataFrame(rows)
