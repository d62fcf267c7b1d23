"""Watch an induction head form: a causal decoder trained on random segments repeated to fill a sequence.

    x = s_0 s_1 ... s_{L-1} s_0 s_1 ... (cut at seq_len),   s: L distinct random tokens, L in [min_segment, max_segment]

The first copy of the segment is unpredictable; every later token is predictable by induction: find the
earlier occurrence of the current token and copy the token that followed it. One attention layer cannot do
that (its keys know only their own token and position); two can: a layer-0 head writes "my previous token
was t" into each position, and a layer-1 head matches the current token against it (Olsson et al., 2022).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core._checks import check_int, check_positive
from attn_core.learn.decoder import MAX_HEADS, POSITIONS

MAX_STEPS = 5000
MAX_SEQ_LEN = 256
MAX_VOCAB = 1024
MAX_D_MODEL = 256
MAX_LAYERS = 4
MAX_BATCH = 256


@dataclass(frozen=True)
class InductionConfig:
    """Settings of one run; checked on construction (a bad field raises ValueError naming it).

    Segments have distinct tokens (so vocab >= max_segment) and fit at least twice (2 max_segment <= seq_len),
    so every sequence holds a repeat. snapshot_every: steps between snapshots (step 0 and the last always).
    """

    layers: int = 2
    num_heads: int = 4
    d_model: int = 64
    mlp: bool = False
    positions: str = "learned"
    vocab: int = 64
    seq_len: int = 64
    min_segment: int = 4
    max_segment: int = 32
    steps: int = 600
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0
    snapshot_every: int = 20

    def __post_init__(self):
        check_int("layers", self.layers, minimum=1, maximum=MAX_LAYERS)
        check_int("num_heads", self.num_heads, minimum=1, maximum=MAX_HEADS)
        check_int("d_model", self.d_model, minimum=2, maximum=MAX_D_MODEL)
        if self.d_model % self.num_heads or self.d_model % 2:
            raise ValueError(f"d_model must be even and divisible by num_heads={self.num_heads}, got {self.d_model}")
        if not isinstance(self.mlp, bool):
            raise ValueError(f"mlp must be True or False, got {self.mlp!r}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        check_int("seq_len", self.seq_len, minimum=4, maximum=MAX_SEQ_LEN)
        check_int("min_segment", self.min_segment, minimum=2, maximum=self.seq_len // 2)
        check_int("max_segment", self.max_segment, minimum=self.min_segment, maximum=self.seq_len // 2)
        check_int("vocab", self.vocab, minimum=self.max_segment, maximum=MAX_VOCAB)
        check_int("steps", self.steps, minimum=1, maximum=MAX_STEPS)
        check_int("batch", self.batch, minimum=1, maximum=MAX_BATCH)
        if check_positive("lr", self.lr) > 1:
            raise ValueError(f"lr must be a number in (0, 1], got {self.lr!r}")
        check_int("seed", self.seed, minimum=0, maximum=2**63 - 1)
        check_int("snapshot_every", self.snapshot_every, minimum=1, maximum=MAX_STEPS)


def repeated_batch(cfg: InductionConfig, batch: int, generator: torch.Generator) -> torch.Tensor:
    """(batch, seq_len) long: per row, a segment of L distinct random tokens (L uniform in [min, max]) repeated."""
    _check_config(cfg)
    check_int("batch", batch, minimum=1, maximum=4096)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    lengths = torch.randint(cfg.min_segment, cfg.max_segment + 1, (batch, 1), generator=generator)  # (B, 1)
    return _repeat(_segments(cfg, batch, generator), lengths, cfg.seq_len)


def probe_sequence(cfg: InductionConfig, seed: int = 0) -> torch.Tensor:
    """(1, seq_len): one fixed sequence, a segment of max_segment distinct random tokens then its copies.

    The longest segment gives the longest stretch with nothing to copy before the first repeat.
    """
    _check_config(cfg)
    gen = torch.Generator().manual_seed(check_int("seed", seed, minimum=0, maximum=2**63 - 1))
    return _repeat(_segments(cfg, 1, gen), torch.tensor([[cfg.max_segment]]), cfg.seq_len)


def _segments(cfg: InductionConfig, batch: int, gen: torch.Generator) -> torch.Tensor:
    """(batch, max_segment): the first max_segment tokens of a random permutation of the vocabulary, per row."""
    return torch.rand(batch, cfg.vocab, generator=gen).argsort(dim=1)[:, : cfg.max_segment]


def _repeat(segments: torch.Tensor, lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """segments (B, max_segment), lengths (B, 1) -> (B, seq_len): position t holds segment[t mod L]."""
    return segments.gather(1, torch.arange(seq_len)[None, :] % lengths)


def _check_config(cfg) -> None:
    if not isinstance(cfg, InductionConfig):
        raise ValueError(f"cfg must be an InductionConfig, got {type(cfg).__name__}")
