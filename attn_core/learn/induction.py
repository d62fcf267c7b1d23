"""Watch an induction head form: a causal decoder trained on random segments repeated to fill a sequence.

    x = s_0 s_1 ... s_{L-1} s_0 s_1 ... (cut at seq_len),   s: L distinct random tokens, L in [min_segment, max_segment]

The first copy of the segment is unpredictable; every later token is predictable by induction: find the
earlier occurrence of the current token and copy the token that followed it. One attention layer cannot do
that (its keys know only their own token and position); two can: a layer-0 head writes "my previous token
was t" into each position, and a layer-1 head matches the current token against it (Olsson et al., 2022).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attn_core._checks import check_int, check_positive
from attn_core.learn.decoder import KNOCKOUT_MODES, MAX_HEADS, POSITIONS, CausalDecoder
from attn_core.learn.heads import head_scores, split_losses

MAX_STEPS = 5000
MAX_SEQ_LEN = 256
MAX_VOCAB = 1024
MAX_D_MODEL = 256
MAX_LAYERS = 4
MAX_BATCH = 256
HELDOUT = 64  # sequences in the fixed held-out batch that every snapshot and knockout is measured on
# A phase change opens the gap first_seen - repeated by PHASE_MIN_RISE nats within PHASE_WINDOW of the run, and
# ends with the repeated-token loss below PHASE_COPIED of the first-seen one. Measured on the default recipe
# (seeds 0-4): the 2-layer runs open the gap by 1.45-2.75 nats in their fastest tenth (400 steps) and end at
# 0.00-0.08 nats against 4.1-4.2; the 1-layer model opens it by 0.85-1.19 nats in its fastest tenth of 1000
# steps, but guessing among the tokens already seen (ln L nats for a segment of L) leaves its repeated-token loss
# at 0.55-0.57 of the first-seen one (2.36-2.65 against 4.2-4.4, 400 steps; 2.34 against 4.25 at 1000, seed 0).
PHASE_MIN_RISE = 1.0
PHASE_COPIED = 1 / 3
PHASE_WINDOW = 0.1  # of the run's steps: the fall must happen within this span


@dataclass(frozen=True)
class InductionConfig:
    """Settings of one run; checked on construction (a bad field raises ValueError naming it).

    Segments have distinct tokens (so vocab >= max_segment) and fit at least twice (2 max_segment <= seq_len),
    so every sequence holds a repeat. snapshot_every: steps between snapshots (step 0 and the last always).

    The defaults are the measured recipe (benchmarks/induction.md, one thread): the 2-layer model's repeated-token
    loss falls through its phase change between steps ~150 and ~280 on seeds 0-4, and 400 steps take about 6-8 s
    of one core; the 1-layer model forms no induction head. Sequences of 32 (segments 4-16) cost half as much per
    step as 64 (segments 4-32) and formed the head at about the same step on seed 0 (215 against 210). Tried and
    rejected: at length 64, seed 0, lr 3e-3 (phase change at 290 instead of 210) and batch 16 (290, and only 40 %
    cheaper per step); at length 32, lr 2e-2 (no head by step 300, seeds 0 and 3), sinusoidal positions (none by
    300, seeds 0, 1, 3), d_model 32 (seed 2 none by 300); 300 steps (seed 3 still mid-fall at 300).
    """

    layers: int = 2
    num_heads: int = 4
    d_model: int = 64
    mlp: bool = False
    positions: str = "learned"
    vocab: int = 64
    seq_len: int = 32
    min_segment: int = 4
    max_segment: int = 16
    steps: int = 400
    batch: int = 32
    lr: float = 1e-2
    seed: int = 0
    snapshot_every: int = 10

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


@dataclass(frozen=True)
class InductionSnapshot:
    """The model after `step` updates, measured on the fixed held-out batch (heldout_batch) and the probe.

    losses: split_losses; scores: head_scores, each (L, H); probe_maps: (L, H, n, n) float16 maps on
    probe_sequence(config, seed=config.seed); train_loss: the mean training loss of the steps since the last
    snapshot (NaN at step 0).
    """

    step: int
    losses: dict[str, float]
    scores: dict[str, np.ndarray]
    probe_maps: np.ndarray
    train_loss: float = math.nan


@dataclass(frozen=True)
class InductionResult:
    """A finished (or stopped) run: its snapshots and the final fp32 state_dict (rebuild with build_model)."""

    config: InductionConfig
    snapshots: tuple[InductionSnapshot, ...]
    state: dict
    stopped: bool  # ended before config.steps: stop() returned True
    seconds: float = 0.0  # wall time of the run, snapshots included
    cpu_seconds: float = 0.0  # CPU time of the calling thread (the training runs in it)


def build_model(cfg: InductionConfig) -> CausalDecoder:
    """The untrained decoder of `cfg`, initialised from its seed."""
    _check_config(cfg)
    return CausalDecoder(
        cfg.vocab,
        cfg.seq_len,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        layers=cfg.layers,
        mlp=cfg.mlp,
        positions=cfg.positions,
        generator=torch.Generator().manual_seed(cfg.seed),
    )


def heldout_batch(cfg: InductionConfig) -> torch.Tensor:
    """(HELDOUT, seq_len): the fixed batch every snapshot and knockout is measured on (its own generator)."""
    return repeated_batch(cfg, HELDOUT, torch.Generator().manual_seed(cfg.seed + 2))


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of position i's logits against token i+1."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())


def train_induction_iter(
    cfg: InductionConfig, *, stop: Callable[[], bool] | None = None
) -> Iterator[InductionSnapshot | InductionResult]:
    """Train; yield a snapshot at step 0, every snapshot_every steps and at the end, then the InductionResult.

    stop() is asked before each step; True ends the run there (a last snapshot is taken, result.stopped).
    Data: model init from seed, training batches from seed + 1, held-out batch from seed + 2.
    """
    _check_config(cfg)
    if stop is not None and not callable(stop):
        raise ValueError(f"stop must be a callable returning True to stop, or None, got {type(stop).__name__}")
    start, cpu = time.perf_counter(), time.thread_time()
    model = build_model(cfg)
    data = torch.Generator().manual_seed(cfg.seed + 1)
    heldout, probe = heldout_batch(cfg), probe_sequence(cfg, seed=cfg.seed)
    opt = None  # made at the first update: its construction imports torch._dynamo (train.train_iter says why)
    snapshots, window, stopped = [], [], False
    for step in range(cfg.steps + 1):
        stopped = stop is not None and bool(stop())
        if step % cfg.snapshot_every == 0 or step == cfg.steps or stopped:
            snapshots.append(_snapshot(model, step, heldout, probe, window))
            window = []
            yield snapshots[-1]
        if stopped or step == cfg.steps:
            break
        if opt is None:
            opt = optimizer(model, cfg)
        window.append(_update(model, opt, repeated_batch(cfg, cfg.batch, data)))
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    yield InductionResult(cfg, tuple(snapshots), state, stopped, time.perf_counter() - start, time.thread_time() - cpu)


def optimizer(model: CausalDecoder, cfg: InductionConfig) -> torch.optim.Adam:
    """Adam in torch's fused CPU kernel: the same update as the foreach one within float rounding, at less than
    half its cost (foreach on CPU loops over the ~25 tensors op by op): the step alone 0.18 against 0.43 ms for
    the 2-layer model, a whole training step 0.3-0.9 ms less (one thread; benchmarks/induction_page.md)."""
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)


def _update(model: CausalDecoder, opt: torch.optim.Optimizer, tokens: torch.Tensor) -> float:
    logits, _ = model(tokens, maps=False)  # no attention maps: the fused kernel (decoder.DecoderBlock)
    loss = next_token_loss(logits, tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return float(loss.detach())


@torch.no_grad()
def _snapshot(model, step: int, heldout: torch.Tensor, probe: torch.Tensor, window: list[float]) -> InductionSnapshot:
    model.eval()
    logits, weights = model(heldout)
    _, probe_weights = model(probe)
    model.train()
    return InductionSnapshot(
        step=step,
        losses=split_losses(logits, heldout),
        scores={name: v.numpy() for name, v in head_scores(weights, heldout).items()},
        probe_maps=torch.stack([w[0] for w in probe_weights]).to(torch.float16).numpy(),  # (L, H, n, n)
        train_loss=sum(window) / len(window) if window else math.nan,
    )


def train_induction(cfg: InductionConfig, *, stop: Callable[[], bool] | None = None) -> InductionResult:
    """Train to the end (or until stop() returns True); the InductionResult."""
    for item in train_induction_iter(cfg, stop=stop):
        if isinstance(item, InductionResult):
            return item
    raise AssertionError("train_induction_iter ends with its result")


def restore(result: InductionResult) -> CausalDecoder:
    """The trained model of a result, in eval mode."""
    if not isinstance(result, InductionResult):
        raise ValueError(f"result must be an InductionResult, got {type(result).__name__}")
    model = build_model(result.config)
    model.load_state_dict(result.state)
    return model.eval()


@torch.no_grad()
def knockout_losses(
    result_or_model, heads=frozenset(), mode: str = "zero", *, tokens: torch.Tensor | None = None
) -> dict[str, float]:
    """split_losses with the (layer, head) pairs in `heads` knocked out ("zero" or "mean", see CausalDecoder).

    On the run's held-out batch for an InductionResult; a CausalDecoder needs `tokens` (B, n) to measure on.
    """
    if mode not in KNOCKOUT_MODES:
        raise ValueError(f"mode must be one of {KNOCKOUT_MODES}, got {mode!r}")
    if isinstance(result_or_model, InductionResult):
        model = restore(result_or_model)
        tokens = heldout_batch(result_or_model.config) if tokens is None else tokens
    elif isinstance(result_or_model, CausalDecoder):
        model = result_or_model
        if tokens is None:
            raise ValueError("tokens must be given (a (B, n) batch to measure on) when result_or_model is a model")
    else:
        raise ValueError(
            f"result_or_model must be an InductionResult or a CausalDecoder, got {type(result_or_model).__name__}"
        )
    was_training = model.training
    model.eval()
    logits, _ = model(tokens, knockout=heads, knockout_mode=mode)
    model.train(was_training)
    return split_losses(logits, tokens)


def phase_change(
    steps: Sequence[int], repeated_losses: Sequence[float], first_seen_losses: Sequence[float]
) -> int | None:
    """The step where the repeated-token loss falls away from the first-seen loss fastest; None if it never does.

    The phase change is copying starting: the loss on tokens that could be copied (repeated) drops while the loss
    on tokens never seen before (first_seen) stays. So the curve looked at is their gap, first_seen - repeated,
    not the repeated loss alone: a fall of both together (any model learning the tokens' frequencies early on)
    leaves the gap where it was. The gap is first made monotone (its running maximum: a noisy dip is no rise).
    Its largest rise over PHASE_WINDOW of the run's steps must reach PHASE_MIN_RISE nats and hold to the end (the
    last gap at least half that rise above the window's start), and the run must end copying: the last
    repeated-token loss below PHASE_COPIED of the last first-seen loss (a model that only guesses among the tokens
    already seen stays near ln(segment) / ln(vocab) of it). The answer is the middle of the steepest snapshot
    interval inside that window.
    """
    s, repeated = _check_curve(steps, repeated_losses, "repeated_losses")
    _, first = _check_curve(steps, first_seen_losses, "first_seen_losses")
    gap = first - repeated
    high = np.maximum.accumulate(gap)
    span = PHASE_WINDOW * (s[-1] - s[0])
    best = (0.0, 0, 0)
    for k in range(len(s) - 1):
        j = min(int(np.searchsorted(s, s[k] + span, side="left")), len(s) - 1)
        j = max(j, k + 1)
        best = max(best, (float(high[j] - high[k]), k, j))
    rise, k, j = best
    if rise < PHASE_MIN_RISE or gap[-1] < high[k] + rise / 2 or repeated[-1] > PHASE_COPIED * first[-1]:
        return None
    rates = [(high[i + 1] - high[i]) / (s[i + 1] - s[i]) for i in range(k, j)]
    i = k + int(np.argmax(rates))
    return int((s[i] + s[i + 1]) // 2)


def _check_curve(steps, losses, name: str) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(steps)
    loss = np.asarray(losses, dtype=float)
    if s.ndim != 1 or len(s) < 2 or not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"steps must be a sequence of at least 2 integers, got {steps!r:.80}")
    if bool(np.any(np.diff(s) <= 0)):
        raise ValueError("steps must increase strictly")
    if loss.shape != s.shape or not bool(np.all(np.isfinite(loss))):
        raise ValueError(f"{name} must be {len(s)} finite numbers, one per step")
    return s, loss


def work(cfg: InductionConfig) -> float:
    """About the flops of a run: forward and backward (3 x forward) of every training batch, plus one forward of
    the held-out batch and the probe per snapshot. Per token, a forward costs 2 x (per layer: 4 d^2 projections,
    2 n d for the scores and the mix, 8 d^2 MLP if any; then d x vocab for the unembedding)."""
    _check_config(cfg)
    d, n = cfg.d_model, cfg.seq_len
    per_token = 2 * (cfg.layers * (4 * d * d + 2 * n * d + (8 * d * d if cfg.mlp else 0)) + d * cfg.vocab)
    snapshots = cfg.steps // cfg.snapshot_every + 2
    return float(per_token * n * (3 * cfg.steps * cfg.batch + snapshots * (HELDOUT + 1)))
