"""Tables for "Watch an induction head form": the page's two models (2 layers and 1 layer, trained by one click),
checked against the page's work cap, and their snapshots laid out as tidy DataFrames: losses on first-seen and
repeated tokens, the layer x head grid of head scores, each head's map on the probe sequence, knockouts.

Training, the scores, the phase change and the knockouts are attn_core.learn's (induction.py, heads.py); this
module only picks the configs and turns results into rows and the few numbers the page's sentences are made of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attn_core.learn.induction import (
    PHASE_MIN_RISE,
    InductionConfig,
    InductionResult,
    InductionSnapshot,
    heldout_batch,
    knockout_losses,
    phase_change,
    probe_sequence,
    restore,
    train_induction_iter,
    work,
)
from attn_core.learn.threads import one_thread
from explorer.tables.learning import TooMuchWork
from explorer.ui.cache import cached

STEPS = (40, 100, 200, 300, 400, 600, 800, 1000)
DEFAULT_STEPS = InductionConfig().steps  # the library's measured recipe (400): an induction head forms by then
MODELS = ("two", "one")  # the 2-layer model, then the 1-layer one beside it
LAYERS = {"two": 2, "one": 1}
SPLITS = ("first_seen", "repeated")  # split_losses' keys the page draws ("all" is in the tables)
GRID_SCORES = ("previous_token", "induction", "duplicate_token", "first_token")  # shares of weight, 0..1
MODES = ("zero", "mean")
PHASE_RISE = PHASE_MIN_RISE  # nats the loss gap must open for a phase change; the loss caption states it
SNAPSHOTS = 30  # about this many per run: enough to see the phase change, few enough to play through
# Above this score a head is called an induction (previous-token) head on the page. The untrained models score
# below 0.1 on both, and trained 2-layer runs above 0.5 (attn_core's tests and the measurements), so 0.3
# separates them with room on both sides; the page states the threshold beside every verdict.
FORMED = 0.3
# One click trains both models. Measured with one torch thread on the shared 2-core machine (load ~12, see
# benchmarks/induction_page.md): 400 steps (the default) 8.6 s of CPU, 1000 steps, the page's largest, 22-24 s
# (60-71 s of wall time on the busy machine).
# The cap leaves room for that and refuses anything larger (no control asks for more today).
PAGE_MAX_WORK_FACTOR = 1.5  # times the work of the pair at the page's largest step count
TIME_BUDGET_S = 90.0  # wall-clock for the pair: a click still training after this stops and shows what it has


@dataclass(frozen=True)
class Pair:
    """The page's two models, trained by one click with the same data, seed and steps: `two` has 2 layers."""

    two: object
    one: object

    def __iter__(self):
        return iter((self.two, self.one))


def base_config(steps: int, seed: int, layers: int = 2) -> InductionConfig:
    every = max(1, steps // SNAPSHOTS)
    return InductionConfig(layers=layers, steps=steps, seed=seed, snapshot_every=every)


def pair_work(pair: Pair) -> float:
    return work(pair.two) + work(pair.one)


def max_work() -> float:
    return PAGE_MAX_WORK_FACTOR * pair_work(Pair(base_config(max(STEPS), 0, 2), base_config(max(STEPS), 0, 1)))


def pair_config(steps: int, seed: int) -> Pair:
    """The configs of one click: the 2-layer model and the 1-layer one; TooMuchWork beyond the page's cap."""
    if steps not in STEPS:
        raise ValueError(f"steps must be one of {STEPS}, got {steps!r}")
    pair = Pair(base_config(steps, seed, 2), base_config(steps, seed, 1))
    if pair_work(pair) > max_work():
        raise TooMuchWork(pair_work(pair) / max_work())
    return pair


def memory_mb(pair: Pair) -> float:
    """What one click may add to the server's resident memory at its peak, in MiB: each model's parameters with
    their gradients and Adam's two moments, the activations of a batch (attention maps dominate), and the
    snapshots kept (probe maps in fp16), above a small base. Measured peak growth of a click (one torch thread, after
    the server's warm-up): 9.1-15.7 MiB at 400-1000 steps; this gives 23 MiB for each (benchmarks/
    induction_page.md): 1.5-2.6 times as much."""
    total = 0.0
    for cfg in pair:
        d, n = cfg.d_model, cfg.seq_len
        params = cfg.layers * 4 * d * d + (cfg.vocab + n) * d + cfg.vocab * d
        activations = cfg.batch * cfg.layers * (cfg.num_heads * n * n * 3 + n * d * 12)
        snapshots = (cfg.steps // cfg.snapshot_every + 2) * cfg.layers * cfg.num_heads * n * n * 2
        total += 16 * params + 4 * activations + snapshots
    return 8 + total / 2**20


def step_share(pair: Pair) -> float:
    """The work of a 1-layer step in 2-layer steps (about 0.55): a click counts its progress in 2-layer steps, so
    that the pace the line measures on the 2-layer model, trained first, holds for the cheaper 1-layer steps that
    follow (counted as steps, the first estimates were 1.44x too long: benchmarks/induction_page.md)."""
    return (work(pair.one) / pair.one.steps) / (work(pair.two) / pair.two.steps)


def cost(pair: Pair) -> tuple[int, float, float]:
    """(training steps, flops per step, memory in MiB) of one click: what the training line's estimates and its
    memory check are computed from (explorer.ui.training.Cost); steps counted in 2-layer steps (step_share)."""
    steps = pair.two.steps + round(pair.one.steps * step_share(pair))
    return steps, pair_work(pair) / steps, memory_mb(pair)


def _train_one(
    cfg: InductionConfig, keep_going, progress, done: int, total: int, share: float = 1.0
) -> InductionResult:
    result = None
    for item in train_induction_iter(cfg, stop=lambda *_: keep_going is not None and not keep_going(done)):
        if isinstance(item, InductionSnapshot):
            if progress is not None:
                progress(done + round(item.step * share), total, item.losses["all"])
        else:
            result = item
    return result


def train_pair(pair: Pair, *, keep_going=None, progress=None) -> Pair:
    """Train both models, the 2-layer one first; the training line's run(config, keep_going=, progress=), its
    progress counted in 2-layer steps as cost() counts them."""
    total = cost(pair)[0]
    two = _train_one(pair.two, keep_going, progress, 0, total)
    one = _train_one(pair.one, keep_going, progress, pair.two.steps, total, step_share(pair))
    return Pair(two, one)


def untrained_pair(pair: Pair) -> Pair:
    """Both models at initialisation: a step-0 snapshot each, no update (what a plain view shows).

    One torch thread, like training: small matrices gain nothing from two, and on a busy server OpenMP's second
    thread spinning for a core made these forwards ten times slower (measured on the shared 2-core machine)."""
    with one_thread():
        return Pair(*(_train_one(cfg, lambda _: False, None, 0, 1) for cfg in pair))


def _reproducible(pair: Pair) -> tuple:
    """What a rebuilt pair reproduces: all but its seconds."""
    return tuple((run.config, run.snapshots, run.state, run.stopped) for run in pair)


@cached(16, compared=_reproducible)  # per entry two step-0 models: well under a megabyte
def untrained(steps: int, seed: int) -> Pair:
    """untrained_pair of the page's settings, shared (read-only), with the cache_key of its settings so that
    @cached tables functions take it like a trained pair."""
    pair = untrained_pair(pair_config(steps, seed))
    object.__setattr__(pair, "cache_key", ("untrained", steps, seed))  # frozen: set once, before it is shared
    return pair


def complete(pair: Pair) -> bool:
    return not (pair.two.stopped or pair.one.stopped)


def run_steps(result: InductionResult) -> list[int]:
    return [s.step for s in result.snapshots]


def index_at(result: InductionResult, step: int) -> int:
    """The last snapshot at or before `step` (the 1-layer run may have been cut shorter than the 2-layer one)."""
    steps = run_steps(result)
    return max(0, int(np.searchsorted(steps, step, side="right")) - 1)


def loss_curves(pair: Pair) -> pd.DataFrame:
    """Long rows: step, model, split, loss (nats) of every snapshot of both models."""
    rows = [
        {"step": s.step, "model": model, "split": split, "loss": s.losses[split]}
        for model, result in zip(MODELS, pair, strict=True)
        for s in result.snapshots
        for split in SPLITS
    ]
    return pd.DataFrame(rows, columns=["step", "model", "split", "loss"])


@cached(32)
def loss_view(pair: Pair) -> tuple[pd.DataFrame, dict, dict]:
    """What the loss chart and its caption show of a trained (cache_key) pair: loss_curves, phase_changes,
    phase_falls."""
    return loss_curves(pair), phase_changes(pair), phase_falls(pair)


def phase_changes(pair: Pair) -> dict[str, int | None]:
    """{model: the step where its repeated-token loss falls away from its first-seen loss (attn_core's phase_change),
    or None}."""
    found = {}
    for model, result in zip(MODELS, pair, strict=True):
        steps = run_steps(result)
        curves = [[s.losses[split] for s in result.snapshots] for split in ("repeated", "first_seen")]
        found[model] = phase_change(steps, *curves) if len(steps) > 2 else None
    return found


def phase_falls(pair: Pair) -> dict[str, tuple[float, float, float, float] | None]:
    """{model: (repeated-token loss before, after, first-seen loss before, after) its phase change, or None}: the
    snapshots a twentieth of the run before and after the step (phase_change looks within a tenth of the run)."""
    falls = {}
    for model, step in phase_changes(pair).items():
        result = getattr(pair, model)
        steps = run_steps(result)
        if step is None:
            falls[model] = None
            continue
        half = (steps[-1] - steps[0]) / 20
        before = result.snapshots[index_at(result, step - half)].losses
        after = result.snapshots[min(len(steps) - 1, int(np.searchsorted(steps, step + half)))].losses
        falls[model] = (before["repeated"], after["repeated"], before["first_seen"], after["first_seen"])
    return falls


@cached(64)
def score_cells(pair: Pair, step: int) -> pd.DataFrame:
    """The layer x head grid of both models at the snapshot at or before `step`: model, layer, head, row, score,
    value (row: the model and layer, as the chart's y axis)."""
    rows = []
    for model, result in zip(MODELS, pair, strict=True):
        snap = result.snapshots[index_at(result, step)]
        for score in GRID_SCORES:
            grid = np.asarray(snap.scores[score], dtype=float)
            for layer, head in np.ndindex(grid.shape):
                row = f"{model}:{layer}"
                rows.append((model, layer, head, row, score, float(grid[layer, head]), snap.step))
    return pd.DataFrame(rows, columns=["model", "layer", "head", "row", "score", "value", "step"])


def probe_tokens(cfg: InductionConfig) -> list[int]:
    return [int(x) for x in probe_sequence(cfg, seed=cfg.seed)[0]]


def map_cells(result: InductionResult, index: int, layer: int) -> pd.DataFrame:
    """Each head's attention on the probe sequence at snapshot `index`, layer `layer`: head, query, key, q_token,
    k_token, weight (rows = queries, columns = keys; the causal upper triangle, all zeros, left out)."""
    maps = np.asarray(result.snapshots[index].probe_maps[layer], dtype=np.float32)  # (H, n, n)
    heads, n, _ = maps.shape
    tokens = np.asarray(probe_tokens(result.config))
    q, k = np.tril_indices(n)
    frames = [
        pd.DataFrame(
            {"head": h, "query": q, "key": k, "q_token": tokens[q], "k_token": tokens[k], "weight": maps[h, q, k]}
        )
        for h in range(heads)
    ]
    return pd.concat(frames, ignore_index=True)


@cached(64)
def probe_cells(pair: Pair, model: str, index: int, layer: int) -> pd.DataFrame:
    """map_cells of the model `model` ("two" or "one") of a trained (cache_key) pair."""
    return map_cells(getattr(pair, model), index, layer)


def head_label(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def head_options(cfg: InductionConfig) -> list[str]:
    return [head_label(layer, head) for layer in range(cfg.layers) for head in range(cfg.num_heads)]


def parse_heads(labels) -> frozenset[tuple[int, int]]:
    return frozenset((int(x[1 : x.index("H")]), int(x[x.index("H") + 1 :])) for x in labels)


def knockout_table(result: InductionResult, labels: tuple[str, ...], mode: str) -> pd.DataFrame:
    """Losses of the intact model and with the heads `labels` removed: split, intact, knocked_out (nats)."""
    model, tokens = restore(result), heldout_batch(result.config)
    with one_thread():  # see untrained_pair
        intact = knockout_losses(model, frozenset(), mode, tokens=tokens)
        removed = knockout_losses(model, parse_heads(labels), mode, tokens=tokens) if labels else intact
    return pd.DataFrame(
        [{"split": s, "intact": intact[s], "knocked_out": removed[s]} for s in (*SPLITS, "all")],
        columns=["split", "intact", "knocked_out"],
    )


def single_knockouts(result: InductionResult, mode: str) -> pd.DataFrame:
    """Each head removed alone: head, layer, split, loss (nats), and the intact model's loss as head "none"."""
    model, tokens = restore(result), heldout_batch(result.config)  # once: rebuilding costs more than a forward
    rows = []
    with one_thread():  # see untrained_pair
        for label in ["none", *head_options(result.config)]:
            heads = parse_heads([label]) if label != "none" else frozenset()
            losses = knockout_losses(model, heads, mode, tokens=tokens)
            rows += [{"head": label, "split": s, "loss": losses[s]} for s in SPLITS]
    return pd.DataFrame(rows, columns=["head", "split", "loss"])


@cached(32)
def knockouts(pair: Pair, labels: tuple[str, ...], mode: str) -> pd.DataFrame:
    """knockout_table of the pair's 2-layer model (the one with heads to remove)."""
    return knockout_table(pair.two, labels, mode)


@cached(32)
def knockout_rows(pair: Pair, labels: tuple[str, ...], mode: str, names: Mapping[str, str]) -> pd.DataFrame:
    """knockouts as the page's table shows them: to 3 decimals, each split by its name in `names`."""
    table = knockouts(pair, labels, mode)
    return table.round(3).assign(split=table["split"].map(names))


@cached(64)
def score_rows(pair: Pair, step: int) -> pd.DataFrame:
    """score_cells as the grid's CSV exports them: model, layer, head, score, value."""
    return score_cells(pair, step)[["model", "layer", "head", "score", "value"]]


@cached(16)
def head_knockouts(pair: Pair, mode: str) -> pd.DataFrame:
    """single_knockouts of the pair's 2-layer model."""
    return single_knockouts(pair.two, mode)


def best_head(result: InductionResult, index: int, score: str, layer: int | None = None) -> tuple[int, int, float]:
    """(layer, head, value) of the highest `score` at snapshot `index`, in `layer` or in any layer."""
    grid = np.nan_to_num(np.asarray(result.snapshots[index].scores[score], dtype=float), nan=-math.inf)
    if layer is not None:
        masked = np.full_like(grid, -math.inf)
        masked[layer] = grid[layer]
        grid = masked
    layer_, head = np.unravel_index(int(np.argmax(grid)), grid.shape)
    return int(layer_), int(head), float(grid[layer_, head])


def sink_share(result: InductionResult, index: int) -> tuple[float, float]:
    """(mean first-token score of the last layer's heads, 1/mean number of keys a query sees): weight on token 0
    against what uniform rows would give it."""
    grid = np.asarray(result.snapshots[index].scores["first_token"], dtype=float)
    n = result.config.seq_len
    uniform = float(np.mean([1 / (i + 1) for i in range(1, n)]))
    return float(grid[-1].mean()), uniform


def facts(pair: Pair, step: int) -> dict:
    """The numbers the page's sentences are made of, at the snapshot at or before `step` of each model."""
    i2, i1 = index_at(pair.two, step), index_at(pair.one, step)
    s2, s1 = pair.two.snapshots[i2], pair.one.snapshots[i1]
    ind = best_head(pair.two, i2, "induction")
    prev = best_head(pair.two, i2, "previous_token")
    one_ind = best_head(pair.one, i1, "induction")
    sink, uniform = sink_share(pair.two, i2)
    return {
        "step": s2.step,
        "ind_layer": ind[0],
        "ind_head": ind[1],
        "ind": ind[2],
        "prev_layer": prev[0],
        "prev_head": prev[1],
        "prev": prev[2],
        "one_ind": one_ind[2],
        "one_head": one_ind[1],
        "rep_two": s2.losses["repeated"],
        "rep_one": s1.losses["repeated"],
        "first_two": s2.losses["first_seen"],
        "sink": sink,
        "uniform": uniform,
        "threshold": FORMED,
    }
