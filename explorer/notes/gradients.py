"""Gradients: the notes' formulas against autograd, and the softmax Jacobian where it saturates."""

from __future__ import annotations

import math

import torch

from attn_core.backward import attention_backward, attention_backward_autograd
from attn_core.multihead import MultiHeadAttention
from attn_core.naive import naive_attention
from attn_core.regression import AdditiveAttention
from attn_core.stats import jacobian_norm, softmax_jacobian
from explorer.notes.registry import Result, claim, register
from explorer.notes.rules import identity, softmax64, upper
from explorer.notes.samples import qkv, randn, seeded


def _jacobian_of(logits) -> float:
    """‖J‖_F of softmax at `logits`, its diagonal p_i(1 − p_i) with 1 − p_i summed from the other weights.

    diag(p) − p pᵀ in float64 loses it: p₁ of softmax([20, −20]) rounds to 1, so p₁ − p₁² is 0, not p₁p₂.
    """
    p = softmax64(logits)
    tails = [math.fsum(p[:i] + p[i + 1 :]) for i in range(len(p))]  # 1 - p_i, from the others
    entries = [p[i] * tails[i] if i == j else p[i] * p[j] for i in range(len(p)) for j in range(len(p))]
    return math.sqrt(math.fsum(e * e for e in entries))


@claim("saturated_gradient", "000")
def _saturated_gradient(seed: int) -> Result:
    norm = _jacobian_of((20.0, -20.0))
    return Result("‖J‖ ≈ 0", f"‖J‖_F = {norm:.2g}", "right" if norm < 1e-6 else "wrong", {"norm": norm})


@claim("healthy_gradient", "000")
def _healthy_gradient(seed: int) -> Result:
    """[3, -3] is said to let gradients flow: true, but its Jacobian is 100x below the flat maximum."""
    norm, flat = _jacobian_of((3.0, -3.0)), _jacobian_of((0.0, 0.0))
    as_printed = float(jacobian_norm(torch.tensor([0.95, 0.05], dtype=torch.float64)))
    facts = {"norm": norm, "flat": flat, "ratio": flat / norm, "printed": as_printed}
    return Result("softmax([3, −3]): ‖J‖ healthy", f"‖J‖_F = {norm:.3g}", "inexact", facts)


@claim("saturated_jacobian", "003")
def _saturated_jacobian(seed: int) -> Result:
    norm = _jacobian_of((20.0, 0.0, -20.0))
    return Result("σᵢ ≈ 1 or 0 ⇒ ∂σᵢ/∂zⱼ ≈ 0", f"‖J‖_F = {norm:.2g}", "right" if norm < 1e-6 else "wrong", {})


@claim("softmax_derivative", "000", "003")
def _softmax_derivative(seed: int) -> Result:
    z = randn(seeded(seed, 12), 5).requires_grad_()
    p = torch.softmax(z, dim=-1)
    auto = torch.stack([torch.autograd.grad(p[j], z, retain_graph=True)[0] for j in range(5)])  # row j: dp_j/dz
    error = float((softmax_jacobian(p.detach()) - auto).abs().max())
    facts = {"error": error, "form": "formula_autograd"}
    return Result("∂αⱼ/∂eᵢ = αᵢ(δᵢⱼ − αⱼ)", f"max |formula − autograd| = {error:.1e}", identity(error), facts)


@claim("dl_de", "000")
def _dl_de(seed: int) -> Result:
    q, k, v, g = qkv(seed)
    hand, auto = attention_backward(q, k, v, g), attention_backward_autograd(q, k, v, g)
    error = float((hand.dscores - auto.dscores).abs().max())
    facts = {"error": error, "form": "formula_autograd"}
    return Result(
        "∂L/∂eᵢ = αᵢ(∂L/∂αᵢ − Σⱼ αⱼ ∂L/∂αⱼ)", f"max |formula − autograd| = {error:.1e}", identity(error), facts
    )


@claim("dl_dv_section1", "000")
def _dl_dv_section1(seed: int) -> Result:
    q, k, v, g = qkv(seed)
    _, a = naive_attention(q, k, v)
    error = float((a.T @ g - attention_backward_autograd(q, k, v, g).dv).abs().max())
    return Result("∂L/∂Vⱼ = Σᵢ αᵢⱼ ∂L/∂oᵢ", f"max |Aᵀ·∂L/∂O − autograd| = {error:.1e}", identity(error), {})


def _dl_dqk(which: str):
    """The notes' dL/dQ = (1/sqrt d_k) sum_ij dL/de_ij K: a scalar times K, and that scalar is 0."""

    def check(seed: int) -> Result:
        q, k, v, g = qkv(seed)
        auto = attention_backward_autograd(q, k, v, g)
        total = float(auto.dscores.sum())  # each row of dL/dS sums to 0
        true = auto.dq if which == "q" else auto.dk
        other = k if which == "q" else q
        as_written = total * other / math.sqrt(q.shape[-1])
        facts = {"total": total, "true": float(true.abs().max()), "written": float(as_written.abs().max())}
        computed = f"Σᵢⱼ ∂L/∂eᵢⱼ = {total:.1e}; max |∂L/∂{which.upper()}| = {facts['true']:.3g}"
        name = "K" if which == "q" else "Q"
        return Result(f"∂L/∂{which.upper()} = Σᵢⱼ ∂L/∂eᵢⱼ {name} / √d_k", computed, "wrong", facts)

    return check


register("dl_dq", "000", check=_dl_dqk("q"))
register("dl_dk", "000", check=_dl_dqk("k"))


@claim("dl_dv_section43", "000")
def _dl_dv_section43(seed: int) -> Result:
    q, k, v, g = qkv(seed)
    _, a = naive_attention(q, k, v)
    true = attention_backward_autograd(q, k, v, g).dv  # (n_k, d_v): one row per value vector
    written = (g.unsqueeze(1) * a.unsqueeze(-1)).sum(dim=(0, 1))  # sum over i and j: one d_v vector
    facts = {"rows": true.shape[0], "error": float((a.T @ g - true).abs().max())}
    computed = f"∂L/∂V = Aᵀ ∂L/∂O: {tuple(true.shape)}; Σᵢⱼ: {tuple(written.shape)}"
    return Result("∂L/∂V = Σᵢⱼ ∂L/∂oᵢ αᵢⱼ", computed, "inexact", facts)


@claim("additive_weight_grad", "000")
def _additive_weight_grad(seed: int) -> Result:
    """dL/dW_q of additive attention: sum_i dL/de_i (w * (1 - s_i^2)) q^T, an outer product per key."""
    gen = seeded(seed, 13)
    d, hidden, n = 4, 5, 6
    module = AdditiveAttention(d, d, hidden).double()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(gen, *p.shape) / math.sqrt(p.shape[1]))
    q, k, upstream = randn(gen, 1, d), randn(gen, n, d), randn(gen, 1, n)
    e = module.scores(q, k)  # (1, n)
    (e * upstream).sum().backward()
    s = torch.tanh(module.w_q(q) + module.w_k(k)).detach()  # (n, hidden): q (1, d) broadcasts over the keys
    w = module.w.weight[0].detach()  # (hidden,)
    by_hand = ((upstream[0, :, None] * w * (1 - s**2)).sum(0))[:, None] * q  # (hidden, d): sum_i outer products
    error = float((by_hand - module.w_q.weight.grad).abs().max())
    facts = {"error": error, "error_bound": upper(error, 1), "rows": hidden, "cols": d}
    computed = f"Σᵢ ∂L/∂eᵢ (v ⊙ (1 − sᵢ²)) qᵀ: {hidden}×{d}, max |· − autograd| = {error:.1e}"
    return Result("∂L/∂W_q = Σᵢ ∂L/∂eᵢ vᵀ(1 − sᵢ²) qᵀ", computed, "inexact", facts)


@claim("wo_grad", "000")
def _wo_grad(seed: int) -> Result:
    """dL/dW^O is Concat(heads)^T dL/dout: the heads' blocks are stacked, not summed."""
    gen = seeded(seed, 14)
    d_model, heads, n = 8, 2, 5
    mha = MultiHeadAttention(d_model, heads).double()
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(randn(gen, *p.shape) * 0.3)
    x, upstream = randn(gen, 1, n, d_model), randn(gen, 1, n, d_model)
    captured = {}
    mha.w_o.register_forward_hook(lambda module, args, out: captured.update(concat=args[0].detach()))
    out, _ = mha(x)
    (out * upstream).sum().backward()
    concat = captured["concat"][0]  # (n, H d_v)
    stacked = concat.T @ upstream[0]  # (H d_v, d_model): head h's block of rows is head_h^T dL/dout
    d_v = d_model // heads
    summed = sum(concat[:, h * d_v : (h + 1) * d_v].T @ upstream[0] for h in range(heads))  # (d_v, d_model)
    error = float((stacked - mha.w_o.weight.grad.T).abs().max())  # nn.Linear stores W^O transposed
    facts = {
        "error": error,
        "stacked": f"{stacked.shape[0]}×{stacked.shape[1]}",
        "summed": "×".join(map(str, summed.shape)),
    }
    computed = f"∂L/∂W^O: {facts['stacked']} = Concat(heads)ᵀ ∂L/∂out (error {error:.1e}); Σ_h: {facts['summed']}"
    return Result("∂L/∂W^O = Σ_h head_hᵀ ∂L/∂output", computed, "wrong", facts)


@claim("weight_grad_direction", "000")
def _weight_grad_direction(seed: int) -> Result:
    q, k, v, _ = qkv(seed)
    qi = q[0].clone().requires_grad_()
    alpha = torch.softmax(k @ qi / math.sqrt(q.shape[-1]), dim=-1)  # (n,)
    j = 2
    auto = torch.autograd.grad(alpha[j], qi)[0]
    a = alpha.detach()
    formula = a[j] * (k[j] - a @ k) / math.sqrt(q.shape[-1])
    error = float((auto - formula).abs().max())
    return Result(
        "∂αᵢⱼ/∂qᵢ ∝ kⱼ − Σₖ αᵢₖ kₖ", f"max |αᵢⱼ(kⱼ − Σ αk)/√d_k − autograd| = {error:.1e}", identity(error), {}
    )
