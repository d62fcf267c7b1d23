"""A tiny encoder-decoder built from attn_core's parts, small enough to train in seconds on one core.

    source x:  s = E[x] + PE                (+ causal self-attention blocks, if any)
    query  u:  h = E[u]                     (a blank token, or recall's query key)
    per layer: a = CrossAttn(LN(h + PE), LN(s));  h = a + MLP(LN(a))
    out:       logits = W_out LN(h)

No residual stream runs around the cross-attention: the read-out sees only what attention fetched
from the source, so a blurred attention gives a blurred answer and training has to sharpen it.
(With a residual, the query's own position tells the read-out which word class a slot wants, and
attention spread over a noun and a verb still answers the noun slot right, the right position unfound.)

Initialisation (from an explicit generator): embeddings N(0, 1); every weight matrix N(0, 1/fan_in),
except W_Q and W_K of every attention, N(0, init_scale^2 / d_model). LN makes each token's features
unit-variance, so at initialisation q and k have components of variance init_scale^2 and
Var(q.k) = d_k init_scale^4: the i.i.d. premise of the 1/sqrt(d_k) argument, with init_scale = 1.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn_core.masks import causal_mask
from attn_core.multihead import MultiHeadAttention
from attn_core.positional import sinusoidal_encoding

# Sequences are short: with base 100 and positions 0, 2, 4, ... (every other row of the table) the
# frequencies run from 2 rad per token down, so neighbours differ clearly. With stride 1 the fastest
# turns 1 rad per token and reorder's swaps of neighbours learned more slowly (measured: mass 0.54-0.70
# after 300 steps instead of 0.95-0.97).
POSITION_BASE = 100.0
POSITION_STRIDE = 2


class Block(nn.Module):
    """Pre-norm attention then MLP; residual=False drops the stream around attention (it keeps only what it read)."""

    def __init__(self, d_model: int, num_heads: int, scale, mlp_ratio: int, *, residual: bool = True):
        super().__init__()
        self.residual = residual
        self.norm_q, self.norm_kv, self.norm_mlp = (nn.LayerNorm(d_model) for _ in range(3))
        self.attn = MultiHeadAttention(d_model, num_heads, scale=scale)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.ReLU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, h, memory=None, mask=None):
        """h (B, n_q, d_model), memory (B, n_k, d_model) or None for self-attention -> (h, weights)."""
        x = self.norm_q(h)
        kv = x if memory is None else self.norm_kv(memory)
        out, weights = self.attn(x, kv, mask=mask)  # (B, n_q, d_model), (B, H, n_q, n_k)
        h = h + out if self.residual else out
        return h + self.mlp(self.norm_mlp(h)), weights

    def queries_keys(self, h, memory=None):
        x = self.norm_q(h)
        return self.attn.queries_keys(x, x if memory is None else self.norm_kv(memory))


class TinyAttentionModel(nn.Module):
    """Cross-attention from target positions to the source; forward returns (logits, {name: weights}).

    Attention names: "self1".. for the source's causal self-attention, "cross1".. for the cross-attention.
    """

    def __init__(
        self,
        vocab_size: int,
        source_len: int,
        target_len: int,
        *,
        d_model: int,
        num_heads: int,
        layers: int,
        encoder_layers: int,
        scaled: bool,
        init_scale: float,
        mlp_ratio: int,
        generator: torch.Generator,
    ):
        super().__init__()
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.scale = 1.0 / math.sqrt(self.d_k) if scaled else 1.0
        self.embed = nn.Embedding(vocab_size, d_model)
        n = max(source_len, target_len)
        pe = sinusoidal_encoding(POSITION_STRIDE * n, d_model, base=POSITION_BASE)[::POSITION_STRIDE].float()
        self.register_buffer("pe", pe, persistent=False)  # (n, d_model)
        self.encoder = nn.ModuleList(Block(d_model, num_heads, self.scale, mlp_ratio) for _ in range(encoder_layers))
        self.decoder = nn.ModuleList(
            Block(d_model, num_heads, self.scale, mlp_ratio, residual=False) for _ in range(layers)
        )
        self.norm_out = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, vocab_size)
        self._init(init_scale, generator)

    def _init(self, init_scale: float, gen: torch.Generator) -> None:
        with torch.no_grad():
            self.embed.weight.normal_(0.0, 1.0, generator=gen)
            for name, module in self.named_modules():
                if isinstance(module, nn.Linear):
                    std = 1.0 / math.sqrt(module.in_features)
                    if name.endswith(("attn.w_q", "attn.w_k")):
                        std *= init_scale
                    module.weight.normal_(0.0, std, generator=gen)
                    module.bias.zero_()

    def attentions(self) -> list[tuple[str, MultiHeadAttention]]:
        own = [(f"self{i + 1}", b.attn) for i, b in enumerate(self.encoder)]
        return own + [(f"cross{i + 1}", b.attn) for i, b in enumerate(self.decoder)]

    def encode(self, source: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        n = source.shape[1]
        s = self.embed(source) + self.pe[:n]  # (B, n_s, d_model)
        weights = {}
        mask = causal_mask(n, device=source.device) if self.encoder else None
        for i, block in enumerate(self.encoder):
            s, weights[f"self{i + 1}"] = block(s, mask=mask)
        return s, weights

    def forward(self, source: torch.Tensor, query: torch.Tensor, *, with_qk: bool = False):
        """source (B, n_s), query (B, n_t) token ids -> logits (B, n_t, vocab), weights {name: (B, H, n_t, n_s)}.

        with_qk: also return {name: (q, k)} of the cross-attentions, each (B, H, n, d_k), unscaled.
        """
        memory, weights = self.encode(source)
        pe = self.pe[: query.shape[1]]
        h = self.embed(query)  # (B, n_t, d_model)
        qk = {}
        for i, block in enumerate(self.decoder):
            h = h + pe  # each layer's query knows its target position
            if with_qk:
                qk[f"cross{i + 1}"] = block.queries_keys(h, memory)
            h, weights[f"cross{i + 1}"] = block(h, memory)
        logits = self.readout(self.norm_out(h))
        return (logits, weights, qk) if with_qk else (logits, weights)
