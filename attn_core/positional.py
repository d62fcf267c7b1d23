"""Sinusoidal positional encodings and the rotation that shifts them.

    PE(pos, 2i) = sin(pos * w_i),  PE(pos, 2i+1) = cos(pos * w_i),  w_i = base^(-2i/d)
Each (sin, cos) pair rotates by the angle k w_i when pos moves by k, so PE(pos + k) = M_k PE(pos)
with M_k block-diagonal, independent of pos; and PE(i).PE(j) = sum_i cos((i - j) w_i).
"""

from __future__ import annotations

import torch

from attn_core._checks import check_int, check_positive


def frequencies(d_model: int, *, base: float = 10000.0) -> torch.Tensor:
    """w_i = base^(-2i/d_model) for i = 0..d_model/2-1, fp64."""
    check_int("d_model", d_model, minimum=2)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    check_positive("base", base)
    return base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int, *, base: float = 10000.0, start: int = 0) -> torch.Tensor:
    """(n_positions, d_model) encodings of positions start..start+n_positions-1, fp64."""
    check_int("n_positions", n_positions, minimum=1)
    w = frequencies(d_model, base=base)
    angles = torch.arange(start, start + n_positions, dtype=torch.float64)[:, None] * w[None, :]
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe


def shift_matrix(k: int, d_model: int, *, base: float = 10000.0) -> torch.Tensor:
    """M_k (d_model, d_model) with PE(pos + k) = M_k PE(pos): a 2x2 rotation per frequency."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"k must be an integer offset, got {k!r}")
    b = k * frequencies(d_model, base=base)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] [sin a, cos a]
    m[idx, idx], m[idx, idx + 1] = torch.cos(b), torch.sin(b)
    m[idx + 1, idx], m[idx + 1, idx + 1] = -torch.sin(b), torch.cos(b)
    return m


def single_period_encoding(n_positions: int, period: float) -> torch.Tensor:
    """(n_positions, 2) [sin, cos] of one frequency: positions `period` apart get identical codes."""
    check_int("n_positions", n_positions, minimum=1)
    check_positive("period", period)
    angles = 2 * torch.pi * torch.arange(n_positions, dtype=torch.float64) / period
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1)
