"""flash_attention (Triton kernels, forward and backward) against naive_attention, on Triton's interpreter.

Small 16 x 16 tiles keep the interpreter fast and make every shape below span several tiles, with
tails (n = 37, 100), padded head dims (24, 48) and cross attention (n_q != n_k).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

_saved_env = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"  # Triton picks interpreter or compiler when first imported
try:
    triton = pytest.importorskip("triton")
    pytest.importorskip("triton.language")
finally:  # the rest of the session sees the variable as it was: CPU flash unavailable there
    if _saved_env is None:
        del os.environ["TRITON_INTERPRET"]
    else:
        os.environ["TRITON_INTERPRET"] = _saved_env

from attn_core import causal_mask, flash_triton, naive_attention  # noqa: E402
from attn_core.flash_triton import flash_attention, flash_available, flash_compiled, launch_settings  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ok, reason = flash_available("cpu")
    assert ok, f"{reason} (was triton imported before this module, without TRITON_INTERPRET=1?)"


def _qkv(lead, n_q, n_k, d, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, n_q, d, generator=g)
    k = torch.randn(*lead, n_k, d, generator=g)
    v = torch.randn(*lead, n_k, d, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def _reference(q, k, v, causal, **kwargs):
    """fp32 naive attention of the (possibly low-precision) inputs."""
    mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None
    out, _ = naive_attention(q.float(), k.float(), v.float(), mask, **kwargs)
    return out


def _torch_low_precision(q, k, v, causal):
    """PyTorch's own attention with every intermediate rounded to the input dtype."""
    logits = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5  # (..., n_q, n_k) in q.dtype
    if causal:
        logits = logits.masked_fill(~causal_mask(q.shape[-2], k.shape[-2]), float("-inf"))
    return torch.softmax(logits, dim=-1) @ v


@pytest.mark.parametrize(
    "lead, n_q, n_k, d, causal, block_m, block_n",
    [
        ((1, 1), 1, 1, 16, False, 16, 16),  # one position: a single, almost empty tile
        ((2, 2), 37, 37, 32, True, 16, 16),  # tails in both directions, diagonal inside tiles
        ((1, 2), 100, 100, 64, True, 32, 16),  # diagonal crosses two key tiles per query block
        ((2, 1), 100, 37, 48, True, 16, 32),  # n_q > n_k: rows past n_k see every key; d padded to 64
        ((2, 1), 37, 100, 24, False, 16, 16),  # cross attention, d padded to 32
        ((1, 3), 1, 100, 16, True, 16, 16),  # the single query sees key 0 only
        ((1, 1), 100, 1, 64, False, 32, 32),
        ((1, 1), 20, 20, 128, True, 16, 16),  # the largest head dim
    ],
)
def test_matches_naive_fp32(lead, n_q, n_k, d, causal, block_m, block_n):
    q, k, v = _qkv(lead, n_q, n_k, d)
    out = flash_attention(q, k, v, causal=causal, block_m=block_m, block_n=block_n)
    assert out.shape == q.shape and out.dtype == torch.float32
    torch.testing.assert_close(out, _reference(q, k, v, causal), atol=1e-5, rtol=1e-5)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    n_q=st.integers(1, 70),
    n_k=st.integers(1, 70),
    d=st.sampled_from([16, 24, 40]),
    causal=st.booleans(),
    block_m=st.sampled_from([16, 32]),
    block_n=st.sampled_from([16, 32]),
)
def test_matches_naive_for_random_shapes(n_q, n_k, d, causal, block_m, block_n):
    q, k, v = _qkv((1,), n_q, n_k, d, seed=n_q * 1000 + n_k)
    out = flash_attention(q, k, v, causal=causal, block_m=block_m, block_n=block_n)
    torch.testing.assert_close(out, _reference(q, k, v, causal), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("scale, temperature", [(0.3, 2.5), (None, 0.05)])
def test_scale_and_temperature(scale, temperature):
    """temperature 0.05 makes logits ~20x sharper: the running max jumps often and far."""
    q, k, v = _qkv((2,), 45, 50, 32)
    out = flash_attention(q, k, v, causal=True, scale=scale, temperature=temperature)
    ref = _reference(q, k, v, True, scale=scale, temperature=temperature)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_low_precision_error_at_most_twice_torchs(dtype, causal):
    """FlashAttention's criterion: against an fp32 reference, the kernel may err up to twice as much
    as PyTorch computing in the same dtype, plus one rounding of the output (eps * max|out|) so that
    a lucky small PyTorch error cannot make the bound unreachable."""
    q, k, v = _qkv((2, 2), 70, 45, 32, dtype)
    out = flash_attention(q, k, v, causal=causal)
    ref = _reference(q, k, v, causal)
    err = (out.float() - ref).abs().max()
    torch_err = (_torch_low_precision(q, k, v, causal).float() - ref).abs().max()
    assert out.dtype == dtype
    assert err <= 2 * torch_err + torch.finfo(dtype).eps * ref.abs().max(), (err, torch_err)


def _gradients(attention, q, k, v, d_out):
    """(out, dq, dk, dv) of `attention` at fresh leaf copies of q, k, v, for the incoming gradient d_out."""
    q, k, v = (x.detach().clone().requires_grad_() for x in (q, k, v))
    out = attention(q, k, v)
    out.backward(d_out)
    return out, q.grad, k.grad, v.grad


@pytest.mark.parametrize(
    "n_q, n_k, d, causal, block_m, block_n, temperature",
    [
        (37, 37, 32, True, 32, 16, 1.0),  # query blocks span two key tiles each
        (100, 37, 48, True, 16, 32, 0.7),  # rows past n_k see every key; d padded to 64
        (20, 50, 24, True, 16, 16, 1.0),  # keys 20..49 are seen by no query: zero dk, dv
        (37, 100, 16, False, 32, 16, 2.0),
    ],
)
def test_gradients_match_naive_fp32(n_q, n_k, d, causal, block_m, block_n, temperature):
    q, k, v = _qkv((2, 2), n_q, n_k, d)
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(7))
    mask = causal_mask(n_q, n_k) if causal else None
    got = _gradients(
        lambda q, k, v: flash_attention(
            q, k, v, causal=causal, temperature=temperature, block_m=block_m, block_n=block_n
        ),
        q, k, v, d_out,
    )  # fmt: skip
    want = _gradients(lambda q, k, v: naive_attention(q, k, v, mask, temperature=temperature)[0], q, k, v, d_out)
    for name, x, y in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_gradients_at_most_twice_torchs(dtype):
    """The forward's criterion, per gradient."""
    q, k, v = _qkv((2, 2), 40, 30, 32, dtype)
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(7)).to(dtype)
    got = _gradients(lambda q, k, v: flash_attention(q, k, v, causal=True), q, k, v, d_out)
    mask = causal_mask(40, 30)
    up = (x.float() for x in (q, k, v, d_out))
    want = _gradients(lambda q, k, v: naive_attention(q, k, v, mask)[0], *up)
    torch_own = _gradients(lambda q, k, v: _torch_low_precision(q, k, v, True), q, k, v, d_out)
    for name, x, y, t in zip(("out", "dq", "dk", "dv"), got, want, torch_own, strict=True):
        assert x.dtype == dtype
        err, torch_err = (x.float() - y).abs().max(), (t.float() - y).abs().max()
        assert err <= 2 * torch_err + torch.finfo(dtype).eps * y.abs().max(), (name, err, torch_err)


def test_causal_never_reads_key_tiles_past_the_diagonal():
    """NaN in every key/value after the first tile: a loop that merely masked those tiles would
    still multiply their NaN values by p = 0, and 0 * NaN = NaN. The 16 queries see keys 0..15 only,
    so the result is attention over those 16 keys, and the hidden keys get zero gradient."""
    q, k, v = _qkv((1, 1), 16, 64, 32)
    k[..., 16:, :] = float("nan")
    v[..., 16:, :] = float("nan")
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(7))
    out, dq, dk, dv = _gradients(
        lambda q, k, v: flash_attention(q, k, v, causal=True, block_m=16, block_n=16), q, k, v, d_out
    )
    want = _gradients(
        lambda q, k, v: naive_attention(q, k, v, causal_mask(16))[0], q, k[..., :16, :], v[..., :16, :], d_out
    )
    for x, y in zip((out, dq, dk[..., :16, :], dv[..., :16, :]), want, strict=True):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5)
    assert not dk[..., 16:, :].any() and not dv[..., 16:, :].any()


# The kernels choose their loops from constexpr shape facts - EVEN_M (n_q a multiple of every query
# tile), EVEN_N (n_k of every key tile), EVEN_D (d a power of two) - and split causal loops into
# interior tiles (no mask at all) and the tiles the diagonal crosses (masked). Each case names the
# path it takes; output and all three gradients are checked against autograd of naive attention.
_PATHS = {
    "even, causal, diagonal = one tile": (64, 64, 32, True, 16, 16),
    "even, causal, diagonal spans two key tiles": (64, 64, 64, True, 32, 16),
    "even, causal, key tiles wider than query blocks": (64, 64, 16, True, 16, 32),
    "even, not causal: no masked loop at all": (64, 96, 32, False, 32, 32),
    "even, causal, n_q > n_k: late query blocks unmasked": (96, 64, 32, True, 32, 16),
    "even, causal, n_q < n_k: key blocks no query sees": (32, 96, 32, True, 16, 16),
    "one past a multiple: ragged last tiles": (65, 65, 32, True, 16, 16),
    "odd lengths, d = 80 padded to 128": (63, 33, 80, True, 32, 16),
    "odd lengths, d = 128, not causal": (33, 63, 128, False, 16, 32),
    "lengths below one tile": (7, 5, 16, True, 32, 32),
}


@pytest.mark.parametrize("path", list(_PATHS))
def test_every_loop_path_matches_naive_forward_and_backward(path):
    n_q, n_k, d, causal, block_m, block_n = _PATHS[path]
    q, k, v = _qkv((2,), n_q, n_k, d, seed=n_q + n_k)
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(3))
    mask = causal_mask(n_q, n_k) if causal else None
    got = _gradients(
        lambda q, k, v: flash_attention(q, k, v, causal=causal, block_m=block_m, block_n=block_n), q, k, v, d_out
    )
    want = _gradients(lambda q, k, v: naive_attention(q, k, v, mask)[0], q, k, v, d_out)
    for name, x, y in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("d", [16, 24, 48, 64, 80, 128])
def test_head_dims_with_default_tiles(d):
    """Without block overrides the interpreter runs its asymmetric default (forward 32 x 16; backward
    16-query steps over 32-key blocks, 16-key steps over 32-query blocks), on an odd length."""
    q, k, v = _qkv((1, 2), 45, 45, d, seed=d)
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(d))
    got = _gradients(lambda q, k, v: flash_attention(q, k, v, causal=True), q, k, v, d_out)
    want = _gradients(lambda q, k, v: naive_attention(q, k, v, causal_mask(45))[0], q, k, v, d_out)
    for name, x, y in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")


def _cuda_tilings() -> list[tuple[dict, dict]]:
    """Each distinct (forward, backward) tiling among the CUDA candidates, any head dim or dtype."""
    fwds, bwds = {}, {}
    for d in (64, 128):
        for dtype in (torch.float16, torch.float32):
            fwd, bwd = flash_triton._candidates(d, dtype, False)
            fwds |= {(c["BLOCK_M"], c["BLOCK_N"]): c for c in fwd}
            bwds |= {tuple(v for key, v in c.items() if key.isupper()): c for c in bwd}
    fwd, bwd = list(fwds.values()), list(bwds.values())
    return [(fwd[i % len(fwd)], bwd[i % len(bwd)]) for i in range(max(len(fwd), len(bwd)))]


@pytest.mark.parametrize(
    "fwd, bwd", _cuda_tilings(), ids=lambda c: "x".join(str(v) for k, v in c.items() if k.isupper())
)
def test_every_cuda_tiling_matches_naive(fwd, bwd):
    """The tiles the GPU may tune to (128-row blocks, 32-row steps, ...), on a causal length that is a
    multiple of none of them (ragged last tiles, a diagonal through the middle of 128-blocks)."""
    from tools.gpu_check import _forced

    for n in (140,):
        q, k, v = _qkv((1,), n, n, 32, seed=n)
        d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1))
        with _forced(flash_triton, fwd, bwd):
            got = _gradients(lambda q, k, v: flash_attention(q, k, v, causal=True), q, k, v, d_out)
        mask = causal_mask(n)
        want = _gradients(lambda q, k, v, mask=mask: naive_attention(q, k, v, mask)[0], q, k, v, d_out)
        for name, x, y in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
            torch.testing.assert_close(x, y, atol=3e-5, rtol=1e-5, msg=lambda m, s=f"n={n} {name}": f"{s}: {m}")


@pytest.fixture
def recorder(monkeypatch):
    """Records each launch (name, grid, keywords: tools.gpu_check's _Launch) and runs it if `run`."""
    from tools.gpu_check import _Recorder

    real = flash_triton._kernels()

    def install(run=True):
        rec = _Recorder(real, run)
        monkeypatch.setattr(flash_triton, "_kernels", lambda: rec)
        return rec

    return install


@pytest.mark.parametrize("deterministic", [False, True])
@pytest.mark.parametrize(
    "n_q, n_k, d, even",
    [(64, 32, 32, (True, True, True)), (65, 32, 32, (False, True, True)), (64, 33, 24, (True, False, False))],
)
def test_even_flags_and_grids_follow_the_shapes(recorder, n_q, n_k, d, even, deterministic):
    rec = recorder()
    q, k, v = (x.requires_grad_() for x in _qkv((3,), n_q, n_k, d))
    out = flash_attention(q, k, v, causal=True, block_m=32, block_n=16, deterministic=deterministic)
    out.sum().backward()
    (fwd, fwd_grid, fwd_kw), (delta, _, delta_kw), (bwd, bwd_grid, bwd_kw) = (
        (launch.name, launch.grid, launch.kwargs) for launch in rec.launches
    )
    assert (fwd, delta) == ("_attn_fwd", "_attn_bwd_delta")
    for kw in (fwd_kw, bwd_kw):
        assert (kw["EVEN_M"], kw["EVEN_N"], kw["EVEN_D"]) == even
    assert fwd_grid == (3 * -(-n_q // 32),)  # one program per (slice, query block)
    assert bwd == "_attn_bwd"
    if deterministic:  # one program per (slice, key block j, query block j); no dQ accumulator to zero
        assert (bwd_kw["ATOMIC"], delta_kw["ZERO_DQ"]) == (False, False)
        assert bwd_grid == (3 * max(-(-n_k // 16), -(-n_q // 32)),)
    else:  # one program per (slice, key block); the delta kernel zeroes the fp32 dQ sums
        assert (bwd_kw["ATOMIC"], delta_kw["ZERO_DQ"]) == (True, True)
        assert bwd_grid == (3 * -(-n_k // 16),)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
def test_atomic_and_deterministic_backward_agree_with_naive(dtype, causal):
    """The five-matmul backward (fp32 atomics into dQ; in dq itself for fp32 inputs, else a copy) and the
    seven-matmul one, on a ragged cross-attention shape whose key blocks each add to many query rows."""
    q, k, v = _qkv((2, 2), 45, 37, 24, dtype)
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    mask = causal_mask(45, 37) if causal else None
    up = (x.float() for x in (q, k, v, d_out))
    want = _gradients(lambda q, k, v: naive_attention(q, k, v, mask)[0], *up)
    results = {}
    for deterministic in (False, True):
        results[deterministic] = _gradients(
            lambda q, k, v, det=deterministic: flash_attention(q, k, v, causal=causal, deterministic=det),
            q, k, v, d_out,
        )  # fmt: skip
        for name, x, y in zip(("out", "dq", "dk", "dv"), results[deterministic], want, strict=True):
            assert x.dtype == dtype
            tol = 2e-5 if dtype == torch.float32 else 2e-2
            torch.testing.assert_close(x.float(), y, atol=tol, rtol=tol, msg=lambda m, n=name: f"{n}: {m}")


def _desc_candidates(d: int, ws: bool, block_m=32, block_n=16):
    """The descriptor forward with `ws` (warp-specialised key loop) and the interpreter's backward."""
    fwd = dict(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=1, num_stages=1, DESC=True, WARP_SPEC=ws)
    bwd = flash_triton._candidates(d, torch.float16, True)[1][0]
    return fwd, bwd


@pytest.mark.parametrize("ws", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    "n_q, n_k, causal",
    [(64, 64, True), (64, 64, False), (96, 32, True), (32, 96, True), (64, 48, False)],
)
def test_descriptor_forward_matches_naive(recorder, n_q, n_k, causal, dtype, ws):
    """_attn_fwd_desc (tensor descriptors; one masked loop when warp-specialised and causal, else the
    interior tiles unmasked) within FlashAttention's bound, and its launch taken for these even shapes."""
    from tools.gpu_check import _forced

    rec = recorder()
    q, k, v = _qkv((2, 3), n_q, n_k, 32, dtype, seed=n_q + n_k)
    with _forced(flash_triton, *_desc_candidates(32, ws)):
        out = flash_attention(q, k, v, causal=causal)
    assert [launch.name for launch in rec.launches] == ["_attn_fwd_desc"]
    ref = _reference(q, k, v, causal)
    err = (out.float() - ref).abs().max()
    torch_err = (_torch_low_precision(q, k, v, causal).float() - ref).abs().max()
    assert err <= 2 * torch_err + torch.finfo(dtype).eps * ref.abs().max(), (err, torch_err)


def _sliced(z, n, d, dtype):
    """(Z, n, d) views into (Z, n + 16, d) storage: rows evenly strided within a slice, not across slices."""
    g = torch.Generator().manual_seed(n)
    return tuple(torch.randn(z, n + 16, d, generator=g).to(dtype)[:, :n] for _ in range(3))


@pytest.mark.parametrize(
    "why, make",
    [
        ("ragged length", lambda: _qkv((2, 2), 40, 40, 32, torch.float16)),
        ("head dim not a power of two", lambda: _qkv((2, 2), 64, 64, 24, torch.float16)),
        ("fp32", lambda: _qkv((2, 2), 64, 64, 32)),
        ("slices of longer rows", lambda: _sliced(3, 64, 32, torch.float16)),
    ],
)
def test_descriptor_candidate_falls_back_where_the_shapes_do_not_allow(recorder, why, make):
    """A descriptor setting applied where its tiles do not divide the lengths, the head dim is padded,
    the dtype is fp32 or the rows are not evenly strided: the same tiles through _attn_fwd, and right."""
    from tools.gpu_check import _forced

    rec = recorder()
    q, k, v = make()
    with _forced(flash_triton, *_desc_candidates(q.shape[-1], True)):
        out = flash_attention(q, k, v, causal=True)
    assert [launch.name for launch in rec.launches] == ["_attn_fwd"], why
    tol = 1e-5 if q.dtype == torch.float32 else 2e-3
    torch.testing.assert_close(out.float(), _reference(q, k, v, True), atol=tol, rtol=tol)


def test_launch_settings_are_cached_per_shape_class(recorder):
    """Lengths 33 and 60 share class 64 and so one cached entry; 65 is class 128. No grad: forward only."""
    rec = recorder()
    before = {tuple(sorted(s.items())) for s in launch_settings()}
    for n in (33, 60, 65):
        flash_attention(*_qkv((1,), n, n, 56), causal=False)
    new = [s for s in launch_settings() if tuple(sorted(s.items())) not in before]
    assert sorted((s["kernel"], s["n_q_class"], s["n_k_class"], s["d"]) for s in new) == [
        ("fwd", 64, 64, 56),
        ("fwd", 128, 128, 56),
    ]
    assert [launch.name for launch in rec.launches] == ["_attn_fwd"] * 3


def test_tuning_picks_a_candidate_and_caches_it(monkeypatch):
    """The CUDA path on a class's first call: every candidate is timed (here: each run once on the CPU,
    the descriptor forward and the atomic backward among them), the fastest runs, and the plan records it."""
    timed = []

    def bench(run):
        start = time.perf_counter()
        run()
        timed.append(time.perf_counter() - start)
        return timed[-1]

    monkeypatch.setattr(flash_triton, "_bench", bench)
    q, k, v = _qkv((2,), 64, 64, 32, torch.float16)
    plan = flash_triton._plan(q.device, q.dtype, 32, True, None, None)
    fwd = (*_desc_candidates(32, True)[:1], dict(BLOCK_M=16, BLOCK_N=32, num_warps=1, num_stages=1))
    bwd = tuple(
        flash_triton._as_dict(flash_triton._BWD_KEYS, c)
        for c in ((16, 32, 32, 16, 1, 1, "atomic"), (16, 16, 16, 16, 1, 1))
    )
    monkeypatch.setattr(plan, "candidates", {"fwd": fwd, "bwd": bwd})
    monkeypatch.setattr(plan, "tune", True)
    monkeypatch.setattr(plan, "chosen", {})
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(2)).to(q.dtype)
    want = _gradients(
        lambda q, k, v: naive_attention(q, k, v, causal_mask(64))[0], *(x.float() for x in (q, k, v, d_out))
    )
    for _ in range(2):  # the second call reuses the choice
        got = _gradients(lambda q, k, v: flash_attention(q, k, v, causal=True), q, k, v, d_out)
        for x, y in zip(got, want, strict=True):
            torch.testing.assert_close(x.float(), y, atol=2e-2, rtol=2e-2)
    assert len(timed) == 4  # two candidates each way, on the first call only
    assert set(plan.chosen) == {("fwd", 64, 64), ("bwd", 64, 64)}
    assert plan.chosen[("fwd", 64, 64)].config in fwd
    assert plan.chosen[("bwd", 64, 64)].config in bwd


def test_no_autograd_graph_without_grad():
    q, k, v = _qkv((2,), 20, 20, 16)
    assert flash_attention(q, k, v).grad_fn is None
    q.requires_grad_()
    assert flash_attention(q, k, v).grad_fn is not None
    with torch.no_grad():
        assert flash_attention(q, k, v).grad_fn is None


def _refuse(*args, **kwargs):
    raise AssertionError("the flash path must not wait for the device")


def test_wrapper_never_reads_tensor_values(recorder, monkeypatch):
    """Every call that copies a value to the host (and so waits for a GPU) raises here; the kernels
    are stubbed, so only the wrapper's own Python runs, forward and backward."""
    recorder(run=False)
    for name in ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__"):
        monkeypatch.setattr(torch.Tensor, name, _refuse)
    for name in ("isfinite", "isnan", "isinf", "equal", "allclose"):
        monkeypatch.setattr(torch, name, _refuse)
    q, k, v = (x.requires_grad_() for x in _qkv((2, 2), 40, 30, 32, torch.float16))
    out = flash_attention(q, k, v, causal=True, temperature=0.5)
    torch.autograd.grad(out, (q, k, v), torch.ones_like(out))


@pytest.mark.parametrize("lead", [(), (3,), (2, 1, 2), (0, 2)])
def test_any_leading_dims(lead):
    q, k, v = _qkv(lead, 20, 18, 16)
    out = flash_attention(q, k, v, causal=True)
    assert out.shape == q.shape
    torch.testing.assert_close(out, _reference(q, k, v, True), atol=1e-5, rtol=1e-5)


def test_strided_inputs():
    """Inputs stored (B, H, d, n) and viewed as (B, H, n, d): the kernel must follow the strides."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 32, n, generator=g).transpose(-2, -1) for n in (30, 40, 40))
    assert q.stride(-1) != 1
    d_out = torch.ones(()).expand(q.shape)  # what out.sum().backward() sends: all strides 0
    got = _gradients(lambda q, k, v: flash_attention(q, k, v), q, k, v, d_out)
    want = _gradients(lambda q, k, v: naive_attention(q, k, v)[0], q, k, v, d_out)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, atol=2e-5, rtol=1e-5)


def _widen(x):
    return x.repeat(1, 1, 1, 9)  # d = 144


_BAD_INPUTS = {  # name: (q, k, v -> flash_attention kwargs, expected message)
    "head dim too small": (lambda q, k, v: dict(q=q[..., :8], k=k[..., :8], v=v[..., :8]), "head dim"),
    "head dim too large": (lambda q, k, v: dict(q=_widen(q), k=_widen(k), v=_widen(v)), "head dim"),
    "d_v != d_k": (lambda q, k, v: dict(q=q, k=k, v=v.repeat(1, 1, 1, 2)), "d_v"),
    "broadcast leading dims": (lambda q, k, v: dict(q=q[:, :1], k=k, v=v), "same leading"),
    "float64": (lambda q, k, v: dict(q=q.double(), k=k.double(), v=v.double()), "float16, bfloat16 or float32"),
    "mixed dtypes": (lambda q, k, v: dict(q=q.half(), k=k, v=v), "one dtype"),
    "not a tensor": (lambda q, k, v: dict(q=q.tolist(), k=k, v=v), "q must be a torch.Tensor"),
    "scale 0": (lambda q, k, v: dict(q=q, k=k, v=v, scale=0.0), "scale"),
    "negative temperature": (lambda q, k, v: dict(q=q, k=k, v=v, temperature=-1.0), "temperature"),
    "causal not bool": (lambda q, k, v: dict(q=q, k=k, v=v, causal="yes"), "causal"),
    "block_m not a power of two": (lambda q, k, v: dict(q=q, k=k, v=v, block_m=24), "block_m"),
    "block_n below 16": (lambda q, k, v: dict(q=q, k=k, v=v, block_n=8), "block_n"),
}


@pytest.mark.parametrize("name", list(_BAD_INPUTS))
def test_bad_inputs_raise_value_error(name):
    make_kwargs, message = _BAD_INPUTS[name]
    with pytest.raises(ValueError, match=message):
        flash_attention(**make_kwargs(*_qkv((1, 2), 4, 5, 16)))


def test_flash_available_under_the_interpreter():
    assert flash_available("cpu")[0]
    ok, reason = flash_available("meta")
    assert not ok and "tiled_attention" in reason
    if not torch.cuda.is_available():
        assert not flash_available("cuda")[0]


def test_flash_compiled_is_a_gpu_kernel_outside_the_interpreter(monkeypatch):
    assert flash_available("cpu")[0] and not flash_compiled("cpu")  # the interpreter runs it, too slow to time
    runnable = {"ok": True}
    monkeypatch.setattr(flash_triton, "flash_available", lambda device: (runnable["ok"], ""))
    for interpreted, compiled in ((True, False), (False, True)):
        monkeypatch.setattr(flash_triton, "_mode", lambda interpreted=interpreted: (interpreted, interpreted))
        assert flash_compiled("cuda") is compiled
    runnable["ok"] = False
    assert not flash_compiled("cuda")


def _python(code: str, prelude: str = "") -> dict:
    """Run `code` in a fresh interpreter without TRITON_INTERPRET; it prints one JSON object."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    script = prelude + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


_CALL = """
import json, sys
import torch
import attn_core
imported_triton = "triton" in sys.modules
ok, reason = attn_core.flash_available("cpu")
q = torch.randn(1, 1, 4, 16)
try:
    attn_core.flash_attention(q, q, q)
    error = None
except Exception as e:
    error = [type(e).__name__, str(e)]
import os
os.environ["TRITON_INTERPRET"] = "1"  # too late: triton (if any) was imported above
late_ok, late_reason = attn_core.flash_available("cpu")
print(json.dumps(dict(imported_triton=imported_triton, ok=ok, reason=reason, error=error, late=late_reason)))
"""


def test_cpu_without_interpreter_points_to_tiled_attention():
    got = _python(_CALL)
    assert not got["imported_triton"], "import attn_core must not import triton"
    assert not got["ok"] and "tiled_attention" in got["reason"]
    assert got["error"][0] == "RuntimeError" and "tiled_attention" in got["error"][1]
    assert "set after triton was imported" in got["late"]


def test_without_triton_points_to_tiled_attention():
    got = _python(_CALL, prelude="import sys\nsys.modules['triton'] = None  # import triton now fails\n")
    assert not got["ok"] and "triton is not installed" in got["reason"]
    assert got["error"][0] == "ImportError" and "tiled_attention" in got["error"][1]


def test_remembered_checks_never_let_a_bad_argument_through():
    """The checks' verdict is kept per (shapes, dtypes, devices, arguments): a call that differs only in
    an argument's type or value (1 for True, temperature 0, a bool for a number) is checked afresh."""
    q, k, v = _qkv((2,), 20, 20, 16)
    flash_attention(q, k, v, causal=True, temperature=0.5)
    for kwargs, message in (
        (dict(causal=1, temperature=0.5), "causal"),
        (dict(causal=True, temperature=0.0), "temperature"),
        (dict(causal=True, temperature=True), "temperature"),
        (dict(causal=True, deterministic=1), "deterministic"),
        (dict(causal=True, block_m=24), "block_m"),
    ):
        with pytest.raises(ValueError, match=message):
            flash_attention(q, k, v, **kwargs)
    with pytest.raises(ValueError, match="head dim"):
        flash_attention(q[..., :8], k[..., :8], v[..., :8], causal=True, temperature=0.5)
