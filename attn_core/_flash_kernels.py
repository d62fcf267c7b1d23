"""The Triton kernels of attn_core.flash_triton, which imports this module on the first launch.

Imported then, not before: triton.jit reads TRITON_INTERPRET when it decorates, and flash_triton has
checked by that time that the mode in force is the one triton was first imported under.

Shapes: Q (Z, N_Q, HEAD_DIM), K and V (Z, N_K, HEAD_DIM) with any strides; Out, DO, DQ, DK, DV
contiguous; Lse, Delta (Z, N_Q) fp32. Z is batch x heads. HEAD_DIM_PAD is HEAD_DIM rounded up to a
power of two (tl.arange needs one); padded columns load as 0 and add 0 to every dot product.

Constexpr shape facts let the compiler drop every check that cannot fail:
    EVEN_M  N_Q is a multiple of every query tile        -> no row checks on Q, DO, Lse, Delta, Out, DQ
    EVEN_N  N_K is a multiple of every key tile          -> no row checks on K, V, DK, DV, no column mask
    EVEN_D  HEAD_DIM == HEAD_DIM_PAD                     -> no head-dim checks
Causal attention (top-left: query i sees key j iff j <= i) splits every loop in two: the interior
tiles, wholly visible, run without any mask; only the tiles the diagonal crosses are masked.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _load_tile(ptrs, rows, n_rows, offs_d, HEAD_DIM: tl.constexpr, ROW_CHECK: tl.constexpr, EVEN_D: tl.constexpr):
    """(len(rows), HEAD_DIM_PAD) tile; rows >= n_rows and padded columns read as 0, checked only if they can occur."""
    if ROW_CHECK:
        if EVEN_D:
            x = tl.load(ptrs, mask=rows[:, None] < n_rows, other=0.0)
        else:
            x = tl.load(ptrs, mask=(rows[:, None] < n_rows) & (offs_d[None, :] < HEAD_DIM), other=0.0)
    else:
        if EVEN_D:
            x = tl.load(ptrs)
        else:
            x = tl.load(ptrs, mask=offs_d[None, :] < HEAD_DIM, other=0.0)
    return x


@triton.jit
def _store_tile(ptrs, x, rows, n_rows, offs_d, HEAD_DIM: tl.constexpr, ROW_CHECK: tl.constexpr, EVEN_D: tl.constexpr):
    if ROW_CHECK:
        if EVEN_D:
            tl.store(ptrs, x, mask=rows[:, None] < n_rows)
        else:
            tl.store(ptrs, x, mask=(rows[:, None] < n_rows) & (offs_d[None, :] < HEAD_DIM))
    else:
        if EVEN_D:
            tl.store(ptrs, x)
        else:
            tl.store(ptrs, x, mask=offs_d[None, :] < HEAD_DIM)


@triton.jit
def _add_tile(ptrs, x, rows, n_rows, offs_d, HEAD_DIM: tl.constexpr, ROW_CHECK: tl.constexpr, EVEN_D: tl.constexpr):
    """_store_tile as fp32 atomic adds: several programs add into the same rows."""
    if ROW_CHECK:
        if EVEN_D:
            tl.atomic_add(ptrs, x, mask=rows[:, None] < n_rows, sem="relaxed")
        else:
            tl.atomic_add(ptrs, x, mask=(rows[:, None] < n_rows) & (offs_d[None, :] < HEAD_DIM), sem="relaxed")
    else:
        if EVEN_D:
            tl.atomic_add(ptrs, x, sem="relaxed")
        else:
            tl.atomic_add(ptrs, x, mask=offs_d[None, :] < HEAD_DIM, sem="relaxed")


@triton.jit
def _load_rowvec(ptrs, rows, n_rows, ROW_CHECK: tl.constexpr):
    if ROW_CHECK:
        x = tl.load(ptrs, mask=rows < n_rows, other=0.0)
    else:
        x = tl.load(ptrs)
    return x


# --- forward ------------------------------------------------------------------------------------


@triton.jit
def _fwd_tiles(
    acc, l_i, m_i, q, K, V, stride_kn, stride_kd, stride_vn, stride_vd,
    lo, hi, offs_m, offs_n, offs_d, N_K, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_D: tl.constexpr,
    CAUSAL_MASK: tl.constexpr, COL_CHECK: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """Stream key/value tiles [lo, hi) through the online softmax of one query block.

    Per row: m = running max of the logits (log2 units), l = running sum of 2^(logit - m),
    acc = running sum of 2^(logit - m) v, rescaled by 2^(m_old - m_new) when m grows.
    # per tile: read 2 * BLOCK_N * d elements; 2 * BLOCK_M * BLOCK_N * d multiply-adds
    """
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)  # lo is a multiple of BLOCK_N: aligned, vectorised loads
        cols = start_n + offs_n  # (BLOCK_N,)
        k = _load_tile(K + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, cols, N_K, offs_d,
                       HEAD_DIM, COL_CHECK, EVEN_D)  # fmt: skip
        if DOT_IN_FP32:  # Triton's interpreter stores bf16 as uint16 and would multiply the raw bits
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N) raw q . k
        if CAUSAL_MASK:
            visible = cols[None, :] <= offs_m[:, None]
            if COL_CHECK:  # the tail tile's columns past N_K hold zeros, not keys
                visible = visible & (cols[None, :] < N_K)
            s = tl.where(visible, s, float("-inf"))
        elif COL_CHECK:
            s = tl.where(cols[None, :] < N_K, s, float("-inf"))
        # the max of the raw logits, scaled once per row: qk_scale > 0 (the wrapper checks it), so
        # max(s) * c = max(s * c), and each logit costs one FMA below instead of a multiply and a subtract
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        if CAUSAL_MASK:  # a row with no visible key yet: avoid -inf - -inf = NaN
            m_new = tl.where(m_new == float("-inf"), 0.0, m_new)
        elif COL_CHECK:
            m_new = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_new)  # rescales the old state; 0 while m_i = -inf
        p = tl.exp2(s * qk_scale - m_new[:, None])  # (BLOCK_M, BLOCK_N), in [0, 1]
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_tile(V + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, cols, N_K, offs_d,
                       HEAD_DIM, COL_CHECK, EVEN_D)  # fmt: skip
        if DOT_IN_FP32:
            v = v.to(tl.float32)
        # p is rounded to the input dtype, as in FlashAttention, so the second matmul runs on tensor cores
        p = p.to(V.dtype.element_ty).to(v.dtype)
        acc = tl.dot(p, v, acc * alpha[:, None], input_precision=DOT_PRECISION)  # (BLOCK_M, HEAD_DIM_PAD)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(
    Q, K, V, Out, Lse,
    stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd,
    stride_vz, stride_vn, stride_vd,
    N_Q, N_K, qk_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """One program: query rows [m0, m0 + BLOCK_M) of slice z against every key tile they see.

    Writes Out and Lse = m + log2(l), from which the backward rebuilds any tile of softmax weights
    as 2^(logit - Lse) without a second online pass.
    # read N_Q*d + (N_Q/BLOCK_M) * 2*N_K*d elements (half of that when causal); write N_Q*d + N_Q
    """
    n_m_blocks = tl.cdiv(N_Q, BLOCK_M)
    pid = tl.program_id(0)
    z = (pid // n_m_blocks).to(tl.int64)  # int64: z * stride passes 2^31 on large batches
    block = pid % n_m_blocks
    if CAUSAL:  # longest first: the last query block sees the most keys, so it starts in the first wave
        block = n_m_blocks - 1 - block
    m0 = block * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query rows
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    K += z * stride_kz
    V += z * stride_vz

    q_ptrs = Q + z * stride_qz + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    q = _load_tile(q_ptrs, offs_m, N_Q, offs_d, HEAD_DIM, not EVEN_M, EVEN_D)  # (BLOCK_M, HEAD_DIM_PAD)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM_PAD], dtype=tl.float32)

    # Key tiles [0, full_hi) need no mask; [full_hi, hi) hold the diagonal and/or the ragged end.
    if EVEN_N:
        n_k_full = N_K
    else:
        n_k_full = (N_K // BLOCK_N) * BLOCK_N
    if CAUSAL:  # a tile is wholly visible to the block when its last key is <= m0; none right of the diagonal load
        full_hi = tl.minimum(((m0 + 1) // BLOCK_N) * BLOCK_N, n_k_full)
        hi = tl.minimum(m0 + BLOCK_M, N_K)
    else:
        full_hi = n_k_full
        hi = N_K
    acc, l_i, m_i = _fwd_tiles(
        acc, l_i, m_i, q, K, V, stride_kn, stride_kd, stride_vn, stride_vd, 0, full_hi, offs_m, offs_n, offs_d,
        N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, False, False, DOT_PRECISION, DOT_IN_FP32,
    )  # fmt: skip
    if CAUSAL:
        acc, l_i, m_i = _fwd_tiles(
            acc, l_i, m_i, q, K, V, stride_kn, stride_kd, stride_vn, stride_vd, full_hi, hi, offs_m, offs_n, offs_d,
            N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, True, not EVEN_N, DOT_PRECISION, DOT_IN_FP32,
        )  # fmt: skip
    elif not EVEN_N:
        acc, l_i, m_i = _fwd_tiles(
            acc, l_i, m_i, q, K, V, stride_kn, stride_kd, stride_vn, stride_vd, full_hi, hi, offs_m, offs_n, offs_d,
            N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, False, True, DOT_PRECISION, DOT_IN_FP32,
        )  # fmt: skip

    seen = l_i > 0  # a row that saw no key outputs 0, not NaN, and gets weights 2^-inf = 0 in backward
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    o_ptrs = Out + (z * N_Q + offs_m[:, None]) * HEAD_DIM + offs_d[None, :]
    _store_tile(o_ptrs, out.to(Out.dtype.element_ty), offs_m, N_Q, offs_d, HEAD_DIM, not EVEN_M, EVEN_D)
    lse = tl.where(seen, m_i + tl.log2(l_i), float("inf"))
    if EVEN_M:
        tl.store(Lse + z * N_Q + offs_m, lse)
    else:
        tl.store(Lse + z * N_Q + offs_m, lse, mask=offs_m < N_Q)


# --- forward through tensor descriptors (Hopper's bulk tensor copy engine) -------------------------
# For 16-bit inputs whose lengths are multiples of the tiles and whose head dim is a power of two:
# Q, K, V and Out are seen as 2-D (Z * N, HEAD_DIM) row arrays, and each tile moves with one
# descriptor load (TMA on sm_90; plain loads elsewhere). WARP_SPEC asks Triton to split the key loop
# into a loader warp feeding compute warpgroups, so the tensor cores keep working during the
# exponentials. Triton 3.6 cannot warp-specialise a kernel with two key loops, so a causal kernel
# with WARP_SPEC masks every tile in one loop; without it, interior tiles run unmasked.


@triton.jit
def _fwd_tiles_desc(
    acc, l_i, m_i, q, desc_k, desc_v, kv_row, lo, hi, offs_m, offs_n, qk_scale,
    BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, WARP_SPEC: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """_fwd_tiles for whole tiles read through descriptors. # per tile: read 2 BLOCK_N d; 2 BLOCK_M BLOCK_N d FMAs"""
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPEC):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([kv_row + start_n, 0])  # (BLOCK_N, HEAD_DIM)
        if DOT_IN_FP32:
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k))  # (BLOCK_M, BLOCK_N) raw q . k
        if CAUSAL_MASK:  # key 0 is visible to every query, so no row stays at -inf past the first tile
            s = tl.where((start_n + offs_n)[None, :] <= offs_m[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = desc_v.load([kv_row + start_n, 0])
        if DOT_IN_FP32:
            v = v.to(tl.float32)
        acc = tl.dot(p.to(desc_v.dtype).to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attn_fwd_desc(
    desc_q, desc_k, desc_v, Out, Lse, N_Q, N_K, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    WARP_SPEC: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """_attn_fwd for N_Q, N_K multiples of BLOCK_M, BLOCK_N and a power-of-two HEAD_DIM: no checks at all.

    Out (contiguous) is written with plain stores: Triton 3.6's warp specialisation rejects a
    descriptor store after the loop ("tensor descriptor block and tensor types must match").
    """
    n_m_blocks = N_Q // BLOCK_M
    pid = tl.program_id(0)
    z = pid // n_m_blocks
    block = pid % n_m_blocks
    if CAUSAL:  # longest first
        block = n_m_blocks - 1 - block
    m0 = block * BLOCK_M
    q_row = z * N_Q + m0  # rows of the 2-D views (the wrapper keeps Z * N below 2^31)
    kv_row = z * N_K
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([q_row, 0])  # (BLOCK_M, HEAD_DIM)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum(m0 + BLOCK_M, N_K)
        if WARP_SPEC:
            acc, l_i, m_i = _fwd_tiles_desc(acc, l_i, m_i, q, desc_k, desc_v, kv_row, 0, hi, offs_m, offs_n, qk_scale,
                                            BLOCK_N, True, True, DOT_IN_FP32)  # fmt: skip
        else:
            full_hi = tl.minimum(((m0 + 1) // BLOCK_N) * BLOCK_N, hi)
            acc, l_i, m_i = _fwd_tiles_desc(acc, l_i, m_i, q, desc_k, desc_v, kv_row, 0, full_hi, offs_m, offs_n,
                                            qk_scale, BLOCK_N, False, False, DOT_IN_FP32)  # fmt: skip
            acc, l_i, m_i = _fwd_tiles_desc(acc, l_i, m_i, q, desc_k, desc_v, kv_row, full_hi, hi, offs_m, offs_n,
                                            qk_scale, BLOCK_N, True, False, DOT_IN_FP32)  # fmt: skip
    else:
        acc, l_i, m_i = _fwd_tiles_desc(acc, l_i, m_i, q, desc_k, desc_v, kv_row, 0, N_K, offs_m, offs_n, qk_scale,
                                        BLOCK_N, False, WARP_SPEC, DOT_IN_FP32)  # fmt: skip
    # every row saw key 0 at least (top-left causal, N_K >= BLOCK_N), so l_i > 0
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(
        Out + (q_row + tl.arange(0, BLOCK_M))[:, None] * HEAD_DIM + offs_d[None, :],
        (acc / l_i[:, None]).to(Out.dtype.element_ty),
    )
    tl.store(Lse + z * N_Q + offs_m, m_i + tl.log2(l_i))


# --- backward -----------------------------------------------------------------------------------
# With P = softmax weights, dO = incoming gradient, D_i = sum_d dO_id O_id = sum_j P_ij dP_ij:
#     dV = P^T dO,   dP = dO V^T,   dS = P * (dP - D),   dQ = dS K * c,   dK = dS^T Q * c   (c = scale/temp)
# Two launches: _attn_bwd_delta computes D; _attn_bwd gives every program one key block (dK, dV:
# it walks the query tiles at and below the diagonal) and one query block (dQ: it walks the key
# tiles left of and on the diagonal). No two programs write the same rows, so there are no atomics,
# and the result does not depend on scheduling (ATOMIC trades that for two fewer matmuls: _attn_bwd).
# Pairing key block j with query block j balances causal work: key block j sees n - j*B queries,
# query block j sees (j+1)*B keys, n + B in all.


@triton.jit
def _attn_bwd_delta(
    Out, DO, Delta, DQAcc, N_ROWS,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK: tl.constexpr, EVEN_D: tl.constexpr,
    ZERO_DQ: tl.constexpr,
):  # fmt: skip
    """Delta[r] = sum_d Out[r, d] * DO[r, d] in fp32 over the Z * N_Q rows; with ZERO_DQ, also zero the
    fp32 dQ accumulator of the atomic backward (one launch fewer than a memset). # read 2 N d; write N"""
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    offs = rows[:, None] * HEAD_DIM + offs_d[None, :]
    o = _load_tile(Out + offs, rows, N_ROWS, offs_d, HEAD_DIM, True, EVEN_D).to(tl.float32)
    do = _load_tile(DO + offs, rows, N_ROWS, offs_d, HEAD_DIM, True, EVEN_D).to(tl.float32)
    tl.store(Delta + rows, tl.sum(o * do, 1), mask=rows < N_ROWS)
    if ZERO_DQ:
        _store_tile(DQAcc + offs, tl.zeros([BLOCK, HEAD_DIM_PAD], dtype=tl.float32), rows, N_ROWS, offs_d, HEAD_DIM,
                    True, EVEN_D)  # fmt: skip


@triton.jit
def _dkdv_tiles(
    dk, dv, k, v, Q, DO, Lse, Delta, DQ, stride_qm, stride_qd,
    lo, hi, cols, offs_m, offs_d, N_Q, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, EVEN_D: tl.constexpr,
    CAUSAL_MASK: tl.constexpr, ROW_CHECK: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
):  # fmt: skip
    """Accumulate dK, dV of one key block over query tiles [lo, hi), in transposed (key, query) tiles;
    with ATOMIC_DQ, also add this block's share dS K * sm_scale to each tile's rows of the fp32 DQ.

    Transposed, P^T and dS^T come out of the dot products in the shape the next dot needs, so no
    register tile is transposed. Rows past N_Q load as zeros (q = dO = 0, D = 0) and add nothing.
    Key columns past N_K are never stored, and a column's dK, dV depend on that column alone.
    # per tile: 4 matmuls of BLOCK_M x BLOCK_N x d; 5 with ATOMIC_DQ
    """
    for start_m in range(lo, hi, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        rows = start_m + offs_m  # (BLOCK_M,)
        q = _load_tile(Q + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd, rows, N_Q, offs_d,
                       HEAD_DIM, ROW_CHECK, EVEN_D)  # fmt: skip
        do = _load_tile(DO + rows[:, None] * HEAD_DIM + offs_d[None, :], rows, N_Q, offs_d, HEAD_DIM, ROW_CHECK, EVEN_D)
        if DOT_IN_FP32:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        lse = _load_rowvec(Lse + rows, rows, N_Q, ROW_CHECK)
        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M) raw
        p_t = tl.exp2(s_t * qk_scale - lse[None, :])  # the forward's softmax weights, transposed
        if CAUSAL_MASK:
            p_t = tl.where(cols[:, None] <= rows[None, :], p_t, 0.0)
        dv = tl.dot(p_t.to(Q.dtype.element_ty).to(do.dtype), do, dv, input_precision=DOT_PRECISION)
        delta = _load_rowvec(Delta + rows, rows, N_Q, ROW_CHECK)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        ds_t = (p_t * (dp_t - delta[None, :])).to(Q.dtype.element_ty).to(q.dtype)
        dk = tl.dot(ds_t, q, dk, input_precision=DOT_PRECISION)
        if ATOMIC_DQ:
            dq = tl.dot(tl.trans(ds_t), k, input_precision=DOT_PRECISION)  # (BLOCK_M, HEAD_DIM_PAD)
            _add_tile(DQ + rows[:, None] * HEAD_DIM + offs_d[None, :], dq * sm_scale, rows, N_Q, offs_d, HEAD_DIM,
                      ROW_CHECK, EVEN_D)  # fmt: skip
    return dk, dv


@triton.jit
def _dq_tiles(
    dq, q, do, lse, delta, K, V, stride_kn, stride_kd, stride_vn, stride_vd,
    lo, hi, rows, offs_n, offs_d, N_K, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_D: tl.constexpr,
    CAUSAL_MASK: tl.constexpr, COL_CHECK: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """Accumulate dQ of one query block over key tiles [lo, hi)."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k = _load_tile(K + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, cols, N_K, offs_d,
                       HEAD_DIM, COL_CHECK, EVEN_D)  # fmt: skip
        v = _load_tile(V + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, cols, N_K, offs_d,
                       HEAD_DIM, COL_CHECK, EVEN_D)  # fmt: skip
        if DOT_IN_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N) raw
        p = tl.exp2(s * qk_scale - lse[:, None])
        if CAUSAL_MASK:
            visible = cols[None, :] <= rows[:, None]
            if COL_CHECK:  # a zero key past N_K has logit 0, which may exceed every real one: drop it
                visible = visible & (cols[None, :] < N_K)
            p = tl.where(visible, p, 0.0)
        elif COL_CHECK:
            p = tl.where(cols[None, :] < N_K, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(K.dtype.element_ty).to(k.dtype), k, dq, input_precision=DOT_PRECISION)
    return dq


@triton.jit
def _bwd_dkdv(
    Q, K, V, DO, Lse, Delta, DQ, DK, DV,
    stride_qm, stride_qd, stride_kn, stride_kd, stride_vn, stride_vd,
    n0, N_Q, N_K, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr, ATOMIC_DQ: tl.constexpr,
):  # fmt: skip
    """dK, dV of key rows [n0, n0 + BLOCK_N), and with ATOMIC_DQ their share of dQ: K, V stay on chip
    while Q, dO tiles stream past."""
    cols = n0 + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    k = _load_tile(K + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, cols, N_K, offs_d,
                   HEAD_DIM, not EVEN_N, EVEN_D)  # fmt: skip
    v = _load_tile(V + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, cols, N_K, offs_d,
                   HEAD_DIM, not EVEN_N, EVEN_D)  # fmt: skip
    if DOT_IN_FP32:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, HEAD_DIM_PAD], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM_PAD], dtype=tl.float32)

    if EVEN_M:
        n_q_full = N_Q
    else:
        n_q_full = (N_Q // BLOCK_M) * BLOCK_M
    if CAUSAL:  # queries before n0 see none of these keys; from diag_end on they see all of them
        diag_end = tl.cdiv(n0 + BLOCK_N, BLOCK_M) * BLOCK_M
        dk, dv = _dkdv_tiles(
            dk, dv, k, v, Q, DO, Lse, Delta, DQ, stride_qm, stride_qd, (n0 // BLOCK_M) * BLOCK_M,
            tl.minimum(diag_end, N_Q), cols, offs_m, offs_d, N_Q, qk_scale, sm_scale,
            HEAD_DIM, BLOCK_M, EVEN_D, True, not EVEN_M, DOT_PRECISION, DOT_IN_FP32, ATOMIC_DQ,
        )  # fmt: skip
        lo = diag_end
    else:
        lo = 0
    dk, dv = _dkdv_tiles(
        dk, dv, k, v, Q, DO, Lse, Delta, DQ, stride_qm, stride_qd, lo, n_q_full, cols, offs_m, offs_d, N_Q, qk_scale,
        sm_scale, HEAD_DIM, BLOCK_M, EVEN_D, False, False, DOT_PRECISION, DOT_IN_FP32, ATOMIC_DQ,
    )  # fmt: skip
    if not EVEN_M:  # the ragged last query tile, unless the diagonal tiles already covered it
        dk, dv = _dkdv_tiles(
            dk, dv, k, v, Q, DO, Lse, Delta, DQ, stride_qm, stride_qd, tl.maximum(lo, n_q_full), N_Q, cols, offs_m,
            offs_d, N_Q, qk_scale, sm_scale, HEAD_DIM, BLOCK_M, EVEN_D, False, True, DOT_PRECISION, DOT_IN_FP32,
            ATOMIC_DQ,
        )  # fmt: skip

    offs = cols[:, None] * HEAD_DIM + offs_d[None, :]
    _store_tile(DK + offs, (dk * sm_scale).to(DK.dtype.element_ty), cols, N_K, offs_d, HEAD_DIM, not EVEN_N, EVEN_D)
    _store_tile(DV + offs, dv.to(DV.dtype.element_ty), cols, N_K, offs_d, HEAD_DIM, not EVEN_N, EVEN_D)


@triton.jit
def _bwd_dq(
    Q, K, V, DO, Lse, Delta, DQ,
    stride_qm, stride_qd, stride_kn, stride_kd, stride_vn, stride_vd,
    m0, N_Q, N_K, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """dQ of query rows [m0, m0 + BLOCK_M): Q, dO, Lse, D stay on chip while K, V tiles stream past."""
    rows = m0 + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    q = _load_tile(Q + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd, rows, N_Q, offs_d,
                   HEAD_DIM, not EVEN_M, EVEN_D)  # fmt: skip
    do = _load_tile(DO + rows[:, None] * HEAD_DIM + offs_d[None, :], rows, N_Q, offs_d, HEAD_DIM, not EVEN_M, EVEN_D)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    lse = _load_rowvec(Lse + rows, rows, N_Q, not EVEN_M)
    delta = _load_rowvec(Delta + rows, rows, N_Q, not EVEN_M)
    dq = tl.zeros([BLOCK_M, HEAD_DIM_PAD], dtype=tl.float32)

    if EVEN_N:
        n_k_full = N_K
    else:
        n_k_full = (N_K // BLOCK_N) * BLOCK_N
    if CAUSAL:
        full_hi = tl.minimum(((m0 + 1) // BLOCK_N) * BLOCK_N, n_k_full)
        hi = tl.minimum(m0 + BLOCK_M, N_K)
    else:
        full_hi = n_k_full
        hi = N_K
    dq = _dq_tiles(
        dq, q, do, lse, delta, K, V, stride_kn, stride_kd, stride_vn, stride_vd, 0, full_hi, rows, offs_n, offs_d,
        N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, False, False, DOT_PRECISION, DOT_IN_FP32,
    )  # fmt: skip
    if CAUSAL:
        dq = _dq_tiles(
            dq, q, do, lse, delta, K, V, stride_kn, stride_kd, stride_vn, stride_vd, full_hi, hi, rows, offs_n,
            offs_d, N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, True, not EVEN_N, DOT_PRECISION, DOT_IN_FP32,
        )  # fmt: skip
    elif not EVEN_N:
        dq = _dq_tiles(
            dq, q, do, lse, delta, K, V, stride_kn, stride_kd, stride_vn, stride_vd, full_hi, hi, rows, offs_n,
            offs_d, N_K, qk_scale, HEAD_DIM, BLOCK_N, EVEN_D, False, True, DOT_PRECISION, DOT_IN_FP32,
        )  # fmt: skip
    dq_ptrs = DQ + rows[:, None] * HEAD_DIM + offs_d[None, :]
    _store_tile(dq_ptrs, (dq * sm_scale).to(DQ.dtype.element_ty), rows, N_Q, offs_d, HEAD_DIM, not EVEN_M, EVEN_D)


@triton.jit
def _attn_bwd(
    Q, K, V, DO, Lse, Delta, DQ, DK, DV,
    stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd,
    stride_vz, stride_vn, stride_vd,
    N_Q, N_K, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
    BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
    CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_D: tl.constexpr,
    DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr, ATOMIC: tl.constexpr,
):  # fmt: skip
    """Program j of slice z: dK, dV of key block j (BLOCK_N1 keys, in query steps of BLOCK_M1), then
    dQ of query block j (BLOCK_M2 queries, in key steps of BLOCK_N2), for each that exists.

    ATOMIC (FlashAttention-2's order): one program per key block, whose dS, computed once, also gives
    its share of dQ, added with atomics to DQ, an fp32 accumulator the delta kernel zeroed: five
    matmuls per (query tile, key block) pair instead of seven, and half the exponentials; the sum's
    order, and so its last bits, depends on scheduling (deterministic=False). BLOCK_M2, BLOCK_N2 unused.
    """
    n_k_blocks = tl.cdiv(N_K, BLOCK_N1)
    if ATOMIC:  # key block 0 sees the most queries when causal: the longest programs start first
        n_q_blocks = 0
        n_programs = n_k_blocks
    else:
        n_q_blocks = tl.cdiv(N_Q, BLOCK_M2)
        n_programs = tl.maximum(n_k_blocks, n_q_blocks)
    pid = tl.program_id(0)
    z = (pid // n_programs).to(tl.int64)
    j = pid % n_programs
    Q += z * stride_qz
    K += z * stride_kz
    V += z * stride_vz
    DO += z * N_Q * HEAD_DIM
    DQ += z * N_Q * HEAD_DIM
    DK += z * N_K * HEAD_DIM
    DV += z * N_K * HEAD_DIM
    Lse += z * N_Q
    Delta += z * N_Q
    if ATOMIC or j < n_k_blocks:  # (ATOMIC: always; the constant keeps the check out of the compiled kernel)
        _bwd_dkdv(
            Q, K, V, DO, Lse, Delta, DQ, DK, DV, stride_qm, stride_qd, stride_kn, stride_kd, stride_vn, stride_vd,
            j * BLOCK_N1, N_Q, N_K, qk_scale, sm_scale, HEAD_DIM, HEAD_DIM_PAD, BLOCK_M1, BLOCK_N1,
            CAUSAL, EVEN_M, EVEN_N, EVEN_D, DOT_PRECISION, DOT_IN_FP32, ATOMIC,
        )  # fmt: skip
    if not ATOMIC and j < n_q_blocks:
        _bwd_dq(
            Q, K, V, DO, Lse, Delta, DQ, stride_qm, stride_qd, stride_kn, stride_kd, stride_vn, stride_vd,
            j * BLOCK_M2, N_Q, N_K, qk_scale, sm_scale, HEAD_DIM, HEAD_DIM_PAD, BLOCK_M2, BLOCK_N2,
            CAUSAL, EVEN_M, EVEN_N, EVEN_D, DOT_PRECISION, DOT_IN_FP32,
        )  # fmt: skip
