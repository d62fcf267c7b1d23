"""A small causal decoder (GPT-style) built from attn_core's parts, for watching heads form and knocking them out.

    h_0 = E[x] + P                         (P learned, or sinusoidal)
    per layer l:  h = h + Attn_l(LN(h))    (causal; + MLP(LN(h)) when mlp=True)
    logits = U LN(h_L)

Attention-only by default: every path from input to output then runs through attention heads and the
residual stream, the setting in which a previous-token head in one layer and a copying head in the next
compose into an induction head (Olsson et al., 2022). Each head's output passes through W_o on its own slice
of columns, so removing a head (knockout) is exact: its d_k slice of the concatenated heads is set to 0
("zero") or to its mean over the batch's positions ("mean") before W_o.

Initialisation (from an explicit generator): embeddings and learned positions N(0, 1); every weight matrix
N(0, 1/fan_in); biases 0. LN makes each token's features unit-variance, so every stream term starts O(1).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attn_core._checks import check_int
from attn_core.masks import causal_mask
from attn_core.multihead import MultiHeadAttention
from attn_core.positional import sinusoidal_encoding

POSITIONS = ("learned", "sinusoidal")
KNOCKOUT_MODES = ("zero", "mean")
MLP_RATIO = 4
MAX_LAYERS = 8
MAX_HEADS = 16
MAX_D_MODEL = 512
MAX_LEN = 4096
MAX_VOCAB = 65536


class DecoderBlock(nn.Module):
    """Pre-norm causal self-attention (and an MLP when mlp=True), each added to the residual stream."""

    def __init__(self, d_model: int, num_heads: int, mlp: bool):
        super().__init__()
        self.norm_attn = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.norm_mlp = nn.LayerNorm(d_model) if mlp else None
        self.mlp = (
            nn.Sequential(nn.Linear(d_model, MLP_RATIO * d_model), nn.GELU(), nn.Linear(MLP_RATIO * d_model, d_model))
            if mlp
            else None
        )

    def forward(self, h, mask, knocked: tuple[int, ...] = (), mode: str = "zero"):
        """h (B, n, d_model), mask (n, n) -> (h, weights (B, H, n, n)); `knocked` heads lose their output.

        mask None: causal, and no weights are made (None): torch's fused kernel, for training, which needs no maps
        (a training step of the induction recipe costs about a third less than through naive_attention)."""
        attn = self.attn
        x = self.norm_attn(h)
        b, n, _ = x.shape
        q, k = attn.queries_keys(x)  # (B, H, n, d_k) each
        v = attn.w_v(x).view(b, n, attn.num_heads, attn.d_k).transpose(1, 2)  # (B, H, n, d_k)
        if mask is None:
            heads, weights = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=attn.scale), None
        else:
            heads, weights = _attention(q, k, v, mask, attn.scale or attn.d_k**-0.5)  # (B, H, n, d_k), (B, H, n, n)
        if knocked:
            heads = _knock_out(heads, knocked, mode)
        h = h + attn.w_o(heads.transpose(1, 2).reshape(b, n, attn.d_model))
        if self.mlp is not None:
            h = h + self.mlp(self.norm_mlp(h))
        return h, weights


def _attention(q, k, v, mask, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """naive_attention's result (its tests hold this path to it) without its input checks and in torch's one-pass
    softmax: every query sees key 0, so no row is fully masked. The checks scan q, k and v on every call, which
    took as long as the attention itself in the snapshots of a training run (64 sequences, every few steps).
    One baddbmm scales the scores and adds the mask as a -inf bias in the same pass: a snapshot's held-out layer
    ~1.0 against ~1.5 ms with a separate product, scaling and masked_fill (one thread)."""
    b, h, n_q, d_k = q.shape
    bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, float("-inf"))  # (n_q, n_k)
    q3, k3, v3 = (x.reshape(b * h, x.shape[2], x.shape[3]) for x in (q, k, v))  # heads as one batch of matrices
    weights = torch.softmax(torch.baddbmm(bias, q3, k3.transpose(1, 2), alpha=scale), dim=-1)  # (B H, n_q, n_k)
    return torch.bmm(weights, v3).view(b, h, n_q, -1), weights.view(b, h, n_q, -1)


def _knock_out(heads: torch.Tensor, knocked: tuple[int, ...], mode: str) -> torch.Tensor:
    """heads (B, H, n, d_k) with the knocked heads' outputs zeroed or replaced by their mean over (B, n)."""
    keep = torch.ones(heads.shape[1], 1, 1, dtype=heads.dtype, device=heads.device)
    keep[list(knocked)] = 0.0
    out = heads * keep  # (B, H, n, d_k)
    if mode == "mean":
        out = out + (1 - keep) * heads.mean(dim=(0, 2), keepdim=True)  # (1, H, 1, d_k) broadcast
    return out


class CausalDecoder(nn.Module):
    """tokens (B, n) -> (logits (B, n, vocab), [one (B, H, n, n) causal attention map per layer]).

    config: the constructor's keyword arguments (all but the generator), so CausalDecoder(**config,
    generator=...) rebuilds the architecture for a saved state_dict.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        *,
        d_model: int = 64,
        num_heads: int = 4,
        layers: int = 2,
        mlp: bool = False,
        positions: str = "learned",
        generator: torch.Generator,
    ):
        super().__init__()
        _check_architecture(vocab_size, max_len, d_model, num_heads, layers, mlp, positions, generator)
        self.config = dict(
            vocab_size=vocab_size,
            max_len=max_len,
            d_model=d_model,
            num_heads=num_heads,
            layers=layers,
            mlp=mlp,
            positions=positions,
        )
        self.vocab_size, self.max_len, self.num_heads = vocab_size, max_len, num_heads
        self.embed = nn.Embedding(vocab_size, d_model)
        if positions == "learned":
            self.pos = nn.Parameter(torch.empty(max_len, d_model))
        else:
            self.register_buffer("pos", sinusoidal_encoding(max_len, d_model).float(), persistent=False)
        self.blocks = nn.ModuleList(DecoderBlock(d_model, num_heads, mlp) for _ in range(layers))
        self.norm_out = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        self._init(generator)

    def _init(self, gen: torch.Generator) -> None:
        with torch.no_grad():
            self.embed.weight.normal_(0.0, 1.0, generator=gen)
            if isinstance(self.pos, nn.Parameter):
                self.pos.normal_(0.0, 1.0, generator=gen)
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    module.weight.normal_(0.0, 1.0 / math.sqrt(module.in_features), generator=gen)
                    if module.bias is not None:
                        module.bias.zero_()

    @property
    def layers(self) -> int:
        return len(self.blocks)

    def forward(self, tokens: torch.Tensor, *, knockout=frozenset(), knockout_mode: str = "zero", maps: bool = True):
        """tokens (B, n) long -> logits (B, n, vocab), weights: one (B, H, n, n) map per layer (rows = queries).

        knockout: (layer, head) pairs whose output is removed before W_o: "zero" sets it to 0, "mean"
        replaces it by its mean over the batch and positions (the head still attends; its map is returned).
        maps=False: weights is [] and attention runs in torch's fused causal kernel (training: no map is needed).
        """
        self._check_tokens(tokens)
        by_layer = self._knockout_by_layer(knockout, knockout_mode)
        if not isinstance(maps, bool):
            raise ValueError(f"maps must be True or False, got {maps!r}")
        n = tokens.shape[1]
        h = self.embed(tokens) + self.pos[:n]  # (B, n, d_model)
        mask = causal_mask(n, device=tokens.device) if maps else None  # (n, n)
        weights = []
        for layer, block in enumerate(self.blocks):
            h, w = block(h, mask, by_layer.get(layer, ()), knockout_mode)
            if maps:
                weights.append(w)
        return self.unembed(self.norm_out(h)), weights

    def _check_tokens(self, tokens) -> None:
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
            got = f"{tokens.dtype} of shape {tuple(tokens.shape)}" if isinstance(tokens, torch.Tensor) else tokens
            raise ValueError(f"tokens must be a (B, n) tensor of dtype torch.long, got {got!r:.80}")
        n = tokens.shape[1]
        if tokens.shape[0] < 1 or not 1 <= n <= self.max_len:
            raise ValueError(
                f"tokens must have shape (B >= 1, 1 <= n <= max_len={self.max_len}), got {tuple(tokens.shape)}"
            )
        if bool(((tokens < 0) | (tokens >= self.vocab_size)).any()):
            raise ValueError(f"tokens must be ids in [0, {self.vocab_size - 1}]")

    def _knockout_by_layer(self, knockout, mode: str) -> dict[int, tuple[int, ...]]:
        if mode not in KNOCKOUT_MODES:
            raise ValueError(f"knockout_mode must be one of {KNOCKOUT_MODES}, got {mode!r}")
        if not isinstance(knockout, (set, frozenset, list, tuple)):
            raise ValueError(f"knockout must be a set of (layer, head) pairs, got {type(knockout).__name__}")
        by_layer: dict[int, set[int]] = {}
        for pair in knockout:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(_is_int(x) for x in pair)):
                raise ValueError(f"knockout must hold (layer, head) pairs of integers, got {pair!r:.40}")
            layer, head = pair
            if not (0 <= layer < self.layers and 0 <= head < self.num_heads):
                raise ValueError(
                    f"knockout pair {pair} is out of range: layer in [0, {self.layers - 1}], "
                    f"head in [0, {self.num_heads - 1}]"
                )
            by_layer.setdefault(layer, set()).add(head)
        return {layer: tuple(sorted(heads)) for layer, heads in by_layer.items()}


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_architecture(vocab_size, max_len, d_model, num_heads, layers, mlp, positions, generator) -> None:
    check_int("vocab_size", vocab_size, minimum=2, maximum=MAX_VOCAB)
    check_int("max_len", max_len, minimum=1, maximum=MAX_LEN)
    check_int("d_model", d_model, minimum=2, maximum=MAX_D_MODEL)
    check_int("num_heads", num_heads, minimum=1, maximum=MAX_HEADS)
    check_int("layers", layers, minimum=1, maximum=MAX_LAYERS)
    if d_model % num_heads or d_model % 2:
        raise ValueError(
            f"d_model must be even (sin/cos positions) and divisible by num_heads={num_heads}, got {d_model}"
        )
    if not isinstance(mlp, bool):
        raise ValueError(f"mlp must be True or False, got {mlp!r}")
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
