"""Small shared test helpers."""

import torch


def rand(*shape, seed=0, dtype=torch.float64, requires_grad=False):
    """Standard-normal tensor from an explicit seed."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return x.requires_grad_(requires_grad)
