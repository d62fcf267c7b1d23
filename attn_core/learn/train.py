"""Train the tiny model on a toy task and record compact snapshots of what its attention learned.

Each snapshot (a few dozen per run) holds the loss and accuracy, the attention weights averaged over a
fixed held-out probe batch (per attention, per head: n_q x n_k), the weight they put on the right
alignment, softmax entropy and largest weight, the gradient norm reaching W_Q and W_K, and the
empirical Var(q.k) of the learned queries and keys beside the i.i.d. prediction d_k.
Everything flows from `seed`: the same config gives the same numbers on a rerun (on the same CPU build).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from attn_core._checks import check_int, check_positive
from attn_core.learn.model import TinyAttentionModel
from attn_core.learn.tasks import TASK_NAMES, Task, make_task
from attn_core.stats import entropy

OPTIMIZERS = ("adam", "sgd")
MAX_STEPS = 5000
MAX_D_MODEL = 512
MAX_WEIGHT = 1e6  # |weight| beyond this counts as divergence (q.k stays far inside float32 below it)
MAX_WORK_FLOPS = 2e12  # ~ a minute of one core: the settings a page may ask for, whatever their mix
LR_WIDTH = 64  # the task's default lr is for d_model <= 64; a wider model gets lr x 64 / d_model
# per task: steps, learning rate and causal self-attention layers over the source that its default run uses
TASK_DEFAULTS = {
    "reverse": {"steps": 300, "lr": 1e-2, "encoder_layers": 0},
    "copy_offset": {"steps": 300, "lr": 1e-2, "encoder_layers": 0},
    "reorder": {"steps": 300, "lr": 1e-2, "encoder_layers": 0},
    "recall": {"steps": 300, "lr": 3e-3, "encoder_layers": 1},
}


@dataclass(frozen=True)
class LearnConfig:
    """Settings of one training run; None takes the task's default (TASK_DEFAULTS, tasks.TASK_SIZES).

    lr=None: the task's default, times 64 / d_model above d_model = 64 (measured: lr 1e-2 made reverse
    diverge at d_model 256, scaled or not; 2.5e-3 learns it).
    init_scale multiplies the initial W_Q and W_K, so Var(q.k) at step 0 is about d_k init_scale^4.
    """

    task: str = "reverse"
    length: int | None = None
    vocab_size: int | None = None
    offset: int | None = None  # copy_offset only: its shift, default min(3, length - 1)
    d_model: int = 64
    num_heads: int = 1
    layers: int = 1
    encoder_layers: int | None = None
    mlp_ratio: int = 2
    scaled: bool = True
    init_scale: float = 1.0
    optimizer: str = "adam"
    lr: float | None = None
    batch_size: int = 64
    steps: int | None = None
    snapshots: int = 30
    eval_size: int = 256
    seed: int = 0

    def resolved(self) -> LearnConfig:
        """This config with every None replaced by the task's default, after checking every field."""
        if self.task not in TASK_NAMES:
            raise ValueError(f"task must be one of {TASK_NAMES}, got {self.task!r}")
        defaults = dict(TASK_DEFAULTS[self.task])
        if isinstance(self.d_model, int) and self.d_model > LR_WIDTH:
            defaults["lr"] *= LR_WIDTH / self.d_model
        cfg = replace(self, **{k: v for k, v in defaults.items() if getattr(self, k) is None})
        _validate(cfg)
        return cfg

    @property
    def d_k(self) -> int:
        return self.d_model // self.num_heads


def _validate(cfg: LearnConfig) -> None:
    check_int("d_model", cfg.d_model, minimum=2, maximum=MAX_D_MODEL)
    check_int("num_heads", cfg.num_heads, minimum=1, maximum=4)
    if cfg.d_model % 2 or cfg.d_model % cfg.num_heads:
        raise ValueError(
            f"d_model must be even (sin/cos positions) and divisible by num_heads={cfg.num_heads}, got {cfg.d_model}"
        )
    check_int("layers", cfg.layers, minimum=1, maximum=2)
    check_int("encoder_layers", cfg.encoder_layers, minimum=0, maximum=2)
    check_int("mlp_ratio", cfg.mlp_ratio, minimum=1, maximum=4)
    if not isinstance(cfg.scaled, bool):
        raise ValueError(f"scaled must be True or False, got {cfg.scaled!r}")
    if check_positive("init_scale", cfg.init_scale) > 10:
        raise ValueError(f"init_scale must be a number in (0, 10], got {cfg.init_scale!r}")
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {cfg.optimizer!r}")
    if check_positive("lr", cfg.lr) > 1:
        raise ValueError(f"lr must be a number in (0, 1], got {cfg.lr!r}")
    check_int("batch_size", cfg.batch_size, minimum=1, maximum=512)
    check_int("steps", cfg.steps, minimum=1, maximum=MAX_STEPS)
    check_int("snapshots", cfg.snapshots, minimum=2, maximum=64)
    check_int("eval_size", cfg.eval_size, minimum=1, maximum=2048)
    check_int("seed", cfg.seed, minimum=0, maximum=2**63 - 1)
    task = build_task(cfg)
    n = task.source_len + task.target_len
    layers = cfg.layers + cfg.encoder_layers
    work = 6 * cfg.steps * cfg.batch_size * n * layers * (4 + 2 * cfg.mlp_ratio) * cfg.d_model**2
    if work > MAX_WORK_FLOPS:
        raise ValueError(
            f"steps x batch_size x d_model^2 is too much work for one run (about {work:.2g} flops, the cap is "
            f"{MAX_WORK_FLOPS:.0g}): lower steps, batch_size or d_model"
        )


def build_task(cfg: LearnConfig) -> Task:
    return make_task(cfg.task, length=cfg.length, vocab_size=cfg.vocab_size, offset=cfg.offset)


def build_model(cfg: LearnConfig, task: Task) -> TinyAttentionModel:
    """The untrained model of a resolved config, initialised from its seed."""
    return TinyAttentionModel(
        task.vocab_size,
        task.source_len,
        task.target_len,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        layers=cfg.layers,
        encoder_layers=cfg.encoder_layers,
        scaled=cfg.scaled,
        init_scale=cfg.init_scale,
        mlp_ratio=cfg.mlp_ratio,
        generator=torch.Generator().manual_seed(cfg.seed),
    )


@dataclass
class Snapshot:
    """The state of training after `step` updates.

    train_loss, train_accuracy, grad_norm_q, grad_norm_k: means over the training batches since the last
    snapshot (grad norms of cross1's W_Q and W_K weights). heldout_*: on the fixed held-out probe batch.
    attention: {name: (H, n_q, n_k)} averaged over the probe batch; example_attention: probe sequence 0.
    alignment_mass: {cross name: (H,)} mean weight each head puts on the right source position;
    best_alignment_mass: its largest entry. entropy (nats), max_weight: of cross1, mean over heads and rows.
    qk_var: Var(q.k) of cross1's unscaled learned q, k over the probe batch; qk_var_iid: d_k Var(q_i) Var(k_i),
    what independent components of the measured variances would give (d_k for unit variances).
    logit_std: the standard deviation of the logits q.k * scale that the softmax actually sees.
    diverged: training stopped here because a weight ran past MAX_WEIGHT or this step's loss or gradient
    was not finite (lower lr or init_scale); the window means then cover the finite steps only (NaN if none).
    """

    step: int
    train_loss: float
    train_accuracy: float
    heldout_loss: float
    heldout_accuracy: float
    heldout_sequence_accuracy: float
    grad_norm_q: float
    grad_norm_k: float
    attention: dict[str, torch.Tensor]
    example_attention: dict[str, torch.Tensor]
    alignment_mass: dict[str, torch.Tensor]
    best_alignment_mass: float
    entropy: float
    max_weight: float
    qk_var: float
    qk_var_iid: float
    logit_std: float
    diverged: bool = False


@dataclass
class TrainResult:
    config: LearnConfig
    task: Task
    model: TinyAttentionModel
    snapshots: list[Snapshot] = field(default_factory=list)
    stopped: bool = False  # ended before config.steps: keep_going said stop, or training diverged
    seconds: float = 0.0  # wall time of the training (the only number that differs between reruns)

    @property
    def diverged(self) -> bool:
        return self.final.diverged

    @property
    def final(self) -> Snapshot:
        return self.snapshots[-1]

    def curve(self, name: str) -> list[float]:
        """One scalar field of every snapshot, e.g. curve("heldout_accuracy")."""
        return [getattr(s, name) for s in self.snapshots]


def snapshot_steps(steps: int, count: int) -> list[int]:
    """`count` steps spread evenly over 0..steps (fewer when steps is small), always 0 and steps."""
    return sorted({round(i * steps / (count - 1)) for i in range(count)})


def _accuracy(logits: torch.Tensor, target: torch.Tensor) -> tuple[float, float]:
    right = logits.argmax(dim=-1) == target  # (B, n_t)
    return float(right.float().mean()), float(right.all(dim=1).float().mean())


@torch.no_grad()
def _probe(model: TinyAttentionModel, probe, window: dict[str, list[float]], step: int, diverged: bool) -> Snapshot:
    """Measure the model on the probe batch; `window` holds the per-step training numbers since the last one."""
    model.eval()
    logits, weights, qk = model(probe.source, probe.query, with_qk=True)
    model.train()
    acc, seq_acc = _accuracy(logits, probe.target)
    mass = {n: (w * probe.alignment[:, None]).sum(-1).mean(dim=(0, 2)) for n, w in weights.items() if "cross" in n}
    cross = weights["cross1"]  # (B, H, n_t, n_s)
    q, k = qk["cross1"]  # (B, H, n, d_k)
    dots = q @ k.transpose(-2, -1)  # (B, H, n_t, n_s), unscaled
    iid = model.d_k * float(q.var()) * float(k.var())
    return Snapshot(
        step=step,
        train_loss=_mean(window["loss"]),
        train_accuracy=_mean(window["accuracy"]),
        heldout_loss=float(F.cross_entropy(logits.flatten(0, 1), probe.target.flatten())),
        heldout_accuracy=acc,
        heldout_sequence_accuracy=seq_acc,
        grad_norm_q=_mean(window["grad_q"]),
        grad_norm_k=_mean(window["grad_k"]),
        attention={n: w.mean(dim=0).float() for n, w in weights.items()},
        example_attention={n: w[0].float() for n, w in weights.items()},
        alignment_mass=mass,
        best_alignment_mass=max(float(m.max()) for m in mass.values()),
        entropy=float(entropy(cross).mean()),
        max_weight=float(cross.amax(dim=-1).mean()),
        qk_var=float(dots.var()),
        qk_var_iid=iid,
        logit_std=float(dots.std()) * model.scale,
        diverged=diverged,
    )


def initial_snapshot(config: LearnConfig) -> Snapshot:
    """The step-0 snapshot of train(config) without its training batch: every number measured on the probe is the one
    train reports at step 0 (that batch's forward and backward change no weight), at ~60 % of the cost; the fields
    of the training batch (train_loss, train_accuracy, grad_norm_q, grad_norm_k) are NaN."""
    cfg = config.resolved()
    task = build_task(cfg)
    return _probe(build_model(cfg, task), _probe_batch(cfg, task), _window(), 0, False)


def _probe_batch(cfg: LearnConfig, task: Task):
    """The fixed held-out batch every snapshot is measured on (its own generator: seed + 2)."""
    return task.sample(cfg.eval_size, torch.Generator().manual_seed(cfg.seed + 2), "heldout")


def _window() -> dict[str, list[float]]:
    """The per-step training numbers a snapshot averages, none yet."""
    return {"loss": [], "accuracy": [], "grad_q": [], "grad_k": []}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _runaway(params: list[torch.Tensor]) -> bool:
    """A weight beyond MAX_WEIGHT (or not finite): training has blown up. Below it, every logit stays finite."""
    # one foreach reduction over all tensors: a Python loop of abs().max() per tensor cost ~5% of a default run
    return not bool(torch.nn.utils.get_total_norm(params, norm_type=math.inf) <= MAX_WEIGHT)


def _grad_norm(params: list[torch.Tensor]) -> float:
    """The L2 norm of all gradients together (clip_grad_norm_ with no limit also multiplied every gradient by 1)."""
    return float(torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]))


def _optimizer(cfg: LearnConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    # foreach: one call per step for all tensors instead of a Python loop over them (the same arithmetic)
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, foreach=True)


def train_iter(
    config: LearnConfig,
    *,
    keep_going: Callable[[int], bool] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    model: TinyAttentionModel | None = None,
) -> Iterator[tuple[TinyAttentionModel, Snapshot]]:
    """Train, yielding (model, snapshot) at each snapshot step; see `train` for the callbacks.

    model: an untrained model from build_model(config) to train in place (default: a fresh one).
    """
    cfg = config.resolved()
    task = build_task(cfg)
    if model is not None and not isinstance(model, TinyAttentionModel):
        raise ValueError(f"model must be a TinyAttentionModel from build_model, got {type(model).__name__}")
    model = build_model(cfg, task) if model is None else model
    data_gen = torch.Generator().manual_seed(cfg.seed + 1)  # the model's own init used generator(seed)
    probe = _probe_batch(cfg, task)
    # made at the first update: constructing a torch optimizer imports torch._dynamo (~1.3 s of CPU, once per
    # process), which a run that stops at step 0 (a page's untrained view) never needs; Adam's state starts empty
    opt = None
    params = [p for p in model.parameters()]
    w_q, w_k = model.decoder[0].attn.w_q.weight, model.decoder[0].attn.w_k.weight
    marks = set(snapshot_steps(cfg.steps, cfg.snapshots))
    window = _window()
    runaway = False
    # step t: the loss and gradient at the state after t updates, then update t+1 (none after the last)
    for step in range(cfg.steps + 1):
        stop = keep_going is not None and not keep_going(step)
        batch = task.sample(cfg.batch_size, data_gen)
        logits, _ = model(batch.source, batch.query)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.target.flatten())
        model.zero_grad(set_to_none=True)  # the optimizer's parameters are the model's
        loss.backward()
        loss_value = float(loss.detach())
        # an update from a non-finite loss or gradient would poison every weight: stop before it
        grad_norm = _grad_norm(params)
        diverged = runaway or not (math.isfinite(loss_value) and math.isfinite(grad_norm))
        if not diverged:
            window["loss"].append(loss_value)
            window["accuracy"].append(_accuracy(logits.detach(), batch.target)[0])
            window["grad_q"].append(float(w_q.grad.norm()))
            window["grad_k"].append(float(w_k.grad.norm()))
        if step in marks or stop or diverged:
            yield model, _probe(model, probe, window, step, diverged)
            window = _window()
        if stop or diverged or step == cfg.steps:
            return
        if opt is None:
            opt = _optimizer(cfg, model)
        opt.step()
        runaway = _runaway(params)
        if progress is not None:
            progress(step + 1, cfg.steps, loss_value)


def train(
    config: LearnConfig,
    *,
    keep_going: Callable[[int], bool] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainResult:
    """Train a fresh model from `config`; return it with its snapshots.

    keep_going(step) is asked before each step; returning False stops training there (a last snapshot
    is still taken, and result.stopped is True). progress(done, total, loss) is called after each update.
    A weight past MAX_WEIGHT or a non-finite loss or gradient also stops it (result.diverged).
    """
    cfg = config.resolved()
    task = build_task(cfg)
    result = TrainResult(cfg, task, build_model(cfg, task))
    start = time.perf_counter()
    for _, snap in train_iter(cfg, keep_going=keep_going, progress=progress, model=result.model):
        result.snapshots.append(snap)
    result.stopped = result.final.step < cfg.steps
    result.seconds = time.perf_counter() - start
    return result


@dataclass(frozen=True)
class Prediction:
    """The model's answer to one input: tokens (ids and names), attention {name: (H, n_q, n_k)}, and
    the task's right answer and alignment for comparison."""

    tokens: list[int]
    words: list[str]
    expected: list[int]
    attention: dict[str, torch.Tensor]
    alignment: torch.Tensor


@torch.no_grad()
def predict(result: TrainResult, tokens) -> Prediction:
    """Run a trained model on one typed input: token ids or names (or a string of names), task.input_len long."""
    if not isinstance(result, TrainResult):
        raise ValueError(f"result must be a TrainResult from train(), got {type(result).__name__}")
    task, model = result.task, result.model
    source, query = task.encode(tokens)
    batch = task.label(source, query)
    was_training = model.training
    model.eval()
    logits, weights = model(source, query)
    model.train(was_training)
    out = logits[0].argmax(dim=-1).tolist()
    return Prediction(
        tokens=out,
        words=task.decode(out),
        expected=batch.target[0].tolist(),
        attention={n: w[0].float() for n, w in weights.items()},
        alignment=batch.alignment[0],
    )
