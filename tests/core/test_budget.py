import threading

import pytest
import torch
from helpers import rand

from attn_core import naive_attention, tiled_attention
from attn_core.budget import DEFAULT_BUDGET_MB, MemoryBudgetError, budget_bytes, memory_budget
from attn_core.regression import AdditiveAttention, kernel_weights
from attn_core.stats import softmax_jacobian


def test_default_budget_fits_a_1_gb_host():
    assert budget_bytes() == int(DEFAULT_BUDGET_MB * 2**20) and DEFAULT_BUDGET_MB <= 512


def test_naive_refuses_before_allocating_and_points_to_tiled():
    # 1 x 4096 x 4096 fp32 logits x 3 copies = 192 MiB: over a 100 MiB budget, under 200 MiB.
    q = torch.zeros(1, 4096, 8)  # nothing of size n x n exists yet
    with memory_budget(100), pytest.raises(MemoryBudgetError, match="tiled_attention"):
        naive_attention(q, q, q)
    with memory_budget(200):
        out, w = naive_attention(q[:, :64], q[:, :64], q[:, :64])
    assert w.shape == (1, 64, 64)


def test_budget_error_is_a_value_error_with_numbers():
    # 3 fp64 copies of 2048 x 2048 = 96 MiB
    with memory_budget(1), pytest.raises(ValueError, match=r"about 96 MB, over the memory budget of 1 MB"):
        naive_attention(rand(2048, 2), rand(2048, 2), rand(2048, 2))


def test_tiled_runs_where_naive_is_refused():
    q, k, v = rand(1, 1500, 4), rand(1, 1500, 4, seed=1), rand(1, 1500, 4, seed=2)
    with memory_budget(40):  # naive: 3 x 1500^2 x 8 B = 51 MiB
        with pytest.raises(MemoryBudgetError):
            naive_attention(q, k, v)
        out = tiled_attention(q, k, v, block_q=128, block_k=128)
    ref, _ = naive_attention(q, k, v)
    torch.testing.assert_close(out, ref)
    with memory_budget(0.1), pytest.raises(MemoryBudgetError, match="block_q and block_k"):
        tiled_attention(q, k, v, block_q=1024, block_k=1024)


def test_other_n_by_n_paths_respect_the_budget():
    with memory_budget(1):
        with pytest.raises(MemoryBudgetError):
            kernel_weights(rand(1000, 2), rand(1000, 2))
        with pytest.raises(MemoryBudgetError):
            softmax_jacobian(torch.full((600,), 1 / 600))
        with pytest.raises(MemoryBudgetError):
            AdditiveAttention(2, 2, 64).double().scores(rand(100, 2), rand(100, 2))


def test_budget_is_per_thread_and_restored():
    seen = {}

    def other():
        seen["other"] = budget_bytes()

    with memory_budget(5):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert budget_bytes() == 5 * 2**20
    assert seen["other"] == budget_bytes() == int(DEFAULT_BUDGET_MB * 2**20)
    for bad in (0, -1, float("inf"), "10", True):
        with pytest.raises(ValueError, match="mb must be"):
            with memory_budget(bad):
                pass
