"""Input validation shared by every public function: one place for the error messages."""

from __future__ import annotations

import math

import torch


def broadcast_shape(*shapes) -> torch.Size:
    """torch.broadcast_shapes in plain Python (RuntimeError when the shapes do not broadcast). Torch's own goes
    through torch._refs, whose first use imports sympy (~500 modules, ~0.5 s of a core): on a fresh server that
    landed in the first visitor's page run."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for sizes in zip(*(((1,) * (ndim - len(s)) + tuple(s)) for s in shapes), strict=True):
        big = {n for n in sizes if n != 1}
        if len(big) > 1:
            raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(big.pop() if big else 1)
    return torch.Size(out)


def check_tensor(name: str, x, *, min_dim: int = 1) -> torch.Tensor:
    """Raise unless `x` is a floating-point tensor with at least `min_dim` dimensions."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must have a floating-point dtype, got {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {tuple(x.shape)}")
    return x


def check_qkv(q, k, v) -> tuple[int, int, int, int]:
    """Validate q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v); return (n_q, n_k, d_k, d_v)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, x, min_dim=2)
    n_q, d_k = q.shape[-2:]
    n_k, d_k_k = k.shape[-2:]
    n_v, d_v = v.shape[-2:]
    if n_q == 0 or n_k == 0:
        raise ValueError(
            f"q and k must hold at least one position (n_q, n_k >= 1), got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    if d_k == 0:
        raise ValueError(f"q must have d_k >= 1 (last dimension), got shape {tuple(q.shape)}")
    if d_k_k != d_k:
        raise ValueError(f"k must have the same last dimension d_k={d_k} as q, got shape {tuple(k.shape)}")
    if n_v != n_k:
        raise ValueError(f"v must have n_k={n_k} rows like k (shape (..., n_k, d_v)), got shape {tuple(v.shape)}")
    if d_v == 0:
        raise ValueError(f"v must have d_v >= 1 (last dimension), got shape {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    lead = q.shape[:-2]
    if lead == k.shape[:-2] == v.shape[:-2]:  # the common case; broadcasting costs microseconds a call
        return n_q, n_k, d_k, d_v
    try:
        broadcast_shape(lead, k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "q, k, v leading (batch/head) dimensions must broadcast, got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        ) from None
    return n_q, n_k, d_k, d_v


def check_positive(name: str, value, *, allow_none: bool = False) -> float | None:
    """Raise unless `value` is a finite number > 0 (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_int(name: str, value, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Raise unless `value` is an int in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value}")
    return value


def check_mask(mask, logits_shape: torch.Size, device: torch.device) -> torch.Tensor | None:
    """Raise unless `mask` is None or a bool tensor broadcastable to `logits_shape`."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a bool tensor (True = may attend), got {got}")
    try:
        shape = broadcast_shape(mask.shape, logits_shape)
    except RuntimeError:
        shape = None
    if shape != logits_shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} must broadcast to the logits shape "
            f"(..., n_q, n_k) = {tuple(logits_shape)}"
        )
    return mask.to(device)


def softmax_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision logits are exponentiated in fp32, as every fused kernel does."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def check_attention(q, k, v, scale, temperature) -> tuple[int, int, int, float, float]:
    """The checks of an attention forward (naive and tiled alike), in one order so that inputs with several
    faults get the same message from both: q, k, v (check_qkv), scale, temperature, finite entries, then logits
    q.k * scale / temperature that fit the softmax dtype. Returns (n_q, n_k, d_k, scale, temperature), the
    default scale resolved."""
    n_q, n_k, d_k, _ = check_qkv(q, k, v)
    scale = resolve_scale(scale, d_k)
    temperature = check_positive("temperature", temperature)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(name, x)
    check_logit_range(q, k, scale / temperature, softmax_dtype(q.dtype))
    return n_q, n_k, d_k, scale, temperature


def resolve_scale(scale, d_k: int) -> float:
    """Default scale 1/sqrt(d_k); an explicit scale must be a finite number > 0."""
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    return check_positive("scale", scale)


def check_finite(name: str, x: torch.Tensor) -> torch.Tensor:
    """Raise unless every entry of `x` is finite: attention of NaN or infinity has no defined value."""
    # A NaN or an infinity makes any sum non-finite, so a finite sum settles it in one fast reduction (no
    # bool copy of x); a sum that overflowed from finite entries falls through to the exact scan.
    if bool(torch.isfinite(x.detach().sum())):
        return x
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must contain only finite numbers (found NaN or infinity)")
    return x


_NORM_CHUNK_ELEMENTS = 1 << 20  # float64 elements converted at a time: 8 MiB


def _largest_row_norm(x: torch.Tensor) -> float:
    """max over rows of |x_row|, computed in float64 a slice of rows at a time.

    Converting the whole tensor at once would hold a float64 copy of it: at n = 8192, d = 128, 8 heads that
    is 64 MiB for q and 64 MiB for k, more than the tiled algorithm's whole working memory. The slices are
    views (no copy of a strided x); one host read at the end.
    """
    x = x.detach()
    rows_per_slice = max(1, _NORM_CHUNK_ELEMENTS // max(1, x.numel() // x.shape[-2]))
    maxima = [
        x[..., i : i + rows_per_slice, :].double().norm(dim=-1).amax() for i in range(0, x.shape[-2], rows_per_slice)
    ]
    return float(torch.stack(maxima).amax())


def check_logit_range(q: torch.Tensor, k: torch.Tensor, factor: float, dtype: torch.dtype) -> None:
    """Raise if a logit q.k * factor, or a step on the way to it, could overflow `dtype`.

    By Cauchy-Schwarz |q_i.k_j| <= max_i |q_i| max_j |k_j|: an O(n d) bound, checked in float64,
    that guarantees the n_q x n_k logits stay finite without computing them. The naive path forms
    q.k before scaling, the tiled path scales q first: both intermediates are bounded too.
    """
    if q.numel() == 0 or k.numel() == 0:  # an empty batch has no logits to overflow
        return
    q_norm, k_norm = (_largest_row_norm(x) for x in (q, k))
    bound = max(q_norm * k_norm * max(1.0, factor), q_norm * factor)
    limit = torch.finfo(dtype).max
    if not math.isfinite(bound) or bound > limit:
        raise ValueError(
            f"q and k are too large for {dtype}: |q·k| · scale / temperature could reach {bound:.3g}, beyond "
            f"{limit:.3g}, and the logits would overflow. Rescale q or k, raise the temperature, or use float64."
        )
