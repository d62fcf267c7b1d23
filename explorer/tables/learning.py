"""Tables for "Watch attention learn" and "√d_k under training": settings checked, runs laid out as tidy DataFrames.

Training itself is attn_core.learn's; this module builds the configs the pages may ask for (within a work cap
smaller than the library's), and turns a TrainResult's snapshots into rows: curves over steps, attention
heatmap cells per head beside the right alignment, the model's answer to one typed input.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd
import torch

from attn_core._checks import check_int
from attn_core.learn import LearnConfig, TrainResult, make_task, predict, train
from attn_core.learn import compare_scaling as compare_scaling  # the √d_k page's trainer, re-exported for its view
from attn_core.learn.scaling import ScalingComparison
from attn_core.learn.tasks import BLANK, SOURCE_ROLES, TARGET_ROLES, parse_tokens
from attn_core.learn.train import MAX_STEPS, Snapshot, build_task, initial_snapshot
from attn_core.stats import entropy
from explorer.ui.cache import cached

TASKS = ("reverse", "reorder", "copy_offset", "recall")
D_MODELS = (16, 32, 64, 128, 256)
HEADS = (1, 2, 4)
LAYERS = (1, 2)
AUTO = "auto"
LRS = (AUTO, 0.001, 0.003, 0.01, 0.03, 0.1)
STEPS = (20, 50, 100, 200, 300, 500, 1000)
D_KS = (8, 16, 32, 64, 128, 256)
INIT_SCALES = (0.5, 1.0, 2.0, 4.0)
SCALE_STEPS = (20, 60, 100, 200, 300)
SNAPSHOTS = 30
SUMMARY_SHOWN = (  # the √d_k page's summary table: run_summary's numbers at step 0, early and at the end
    "series",
    "init_logit_std",
    "init_max_weight",
    "init_grad_norm_q",
    "early_step",
    "early_loss",
    "early_entropy",
    "early_logit_std",
    "early_grad_norm_q",
    "steps_to_accuracy",
    "final_accuracy",
    "final_alignment_mass",
    "final_logit_std",
    "final_qk_var",
)
# The pages' cap on one run's work, in the library's flop estimate (the library allows 2e12). Measured on one
# core (shared machine): reverse at d_model 64, 300 steps (6e10) 3.7 s; at d_model 256, 100 steps (3.2e11) 4.8 s.
# 1e12 is then some 15 s, d_model 256 for 300 steps; the √d_k page trains two such runs per click.
PAGE_MAX_WORK = 1e12
TIME_BUDGET_S = 60.0  # wall-clock: a run still going after this stops and shows what it learned so far
RIGHT = "right"  # the panel of the right alignment beside the heads'
LEARNED = 0.95  # held-out accuracy from which a page calls a run learned (run_summary's threshold too)
PEAKED = 0.5  # a mean largest weight above this: rows put most of their weight on one position, not a blur
LOSSES = ["train_loss", "heldout_loss"]  # the learning page's loss chart
SCORES = ["train_accuracy", "heldout_accuracy", "best_alignment_mass"]  # and its accuracy chart


def work(cfg: LearnConfig) -> float:
    """The library's flop estimate of one run (attn_core.learn.train._validate's), for the page's own cap."""
    task = build_task(cfg)
    n = task.source_len + task.target_len
    layers = cfg.layers + cfg.encoder_layers
    return 6 * cfg.steps * cfg.batch_size * n * layers * (4 + 2 * cfg.mlp_ratio) * cfg.d_model**2


# What a click adds to the server's resident memory at its peak, fitted to real runs in fresh warmed processes
# (python -m tools.train_memory, benchmarks/load_test_train.md): 2.9 MiB at d_model 16 to 59 MiB at 256, about
# 0.22 MiB per unit of d_model, a tenth more per further layer or run; then a quarter more (two measurements of one
# setting differed by up to 30 %).
MEMORY_BASE_MB, MEMORY_PER_WIDTH_MB, MEMORY_MARGIN = 2.0, 0.22, 1.25


def memory_mb(cfg: LearnConfig, runs: int = 1) -> float:
    """What a click that trains `cfg` `runs` times may add to the server's resident memory at its peak, in MiB."""
    more = cfg.layers + cfg.encoder_layers + runs - 2
    return MEMORY_MARGIN * (MEMORY_BASE_MB + MEMORY_PER_WIDTH_MB * cfg.d_model * (1 + 0.1 * more))


def cost(cfg: LearnConfig, runs: int = 1) -> tuple[int, float, float]:
    """(training steps, flops per step, memory in MiB) of a click that trains `cfg` `runs` times: what the training
    line's time estimate and memory check are computed from (explorer.ui.training)."""
    return runs * cfg.steps, work(cfg) / cfg.steps, memory_mb(cfg, runs)


class TooMuchWork(ValueError):
    """Settings beyond the page's budget; `factor` says how far."""

    def __init__(self, factor: float):
        super().__init__(f"the settings ask for {factor:.1f} x the page's budget of work")
        self.factor = factor


@dataclass(frozen=True)
class LearnSettings:
    """The learning page's controls and seed: one run's settings, a cache key by its fields (key_of)."""

    task: str
    d_model: int
    heads: int
    layers: int
    lr: object  # AUTO or a learning rate
    steps: int
    scaled: bool
    seed: int

    def config(self) -> LearnConfig:
        """learn_config of these settings; ValueError (TooMuchWork) beyond the page's budget."""
        return learn_config(
            self.task, self.d_model, self.heads, self.layers, self.lr, self.steps, self.scaled, self.seed
        )


@dataclass(frozen=True)
class ScaleSettings:
    """The √d_k page's controls and seed, a cache key by its fields (key_of)."""

    task: str
    d_k: int
    init_scale: float
    steps: int
    seed: int

    def config(self) -> LearnConfig:
        """scale_config of these settings; ValueError (TooMuchWork) beyond the page's budget."""
        return scale_config(self.task, self.d_k, self.init_scale, self.steps, self.seed)


def learn_config(task: str, d_model: int, heads: int, layers: int, lr, steps: int, scaled: bool, seed: int):
    """The resolved config of the learning page's controls; ValueError (TooMuchWork) beyond the page's budget."""
    cfg = LearnConfig(
        task=task,
        d_model=d_model,
        num_heads=heads,
        layers=layers,
        lr=None if lr == AUTO else float(lr),
        steps=steps,
        scaled=scaled,
        snapshots=SNAPSHOTS,
        seed=seed,
    )
    return _within_budget(cfg)


def scale_config(task: str, d_k: int, init_scale: float, steps: int, seed: int) -> LearnConfig:
    """The config of the √d_k page: one head of width d_k, scaled (compare_scaling trains both)."""
    cfg = LearnConfig(task=task, d_model=d_k, init_scale=init_scale, steps=steps, snapshots=SNAPSHOTS, seed=seed)
    return _within_budget(cfg)  # each of the two runs


def _within_budget(cfg: LearnConfig) -> LearnConfig:
    """cfg resolved, after checking the page's cap (before the library's larger one, whose message is generic)."""
    steps = check_int("steps", cfg.steps, minimum=1, maximum=MAX_STEPS)
    estimate = work(replace(cfg, steps=1).resolved()) * steps
    if estimate > PAGE_MAX_WORK:
        raise TooMuchWork(estimate / PAGE_MAX_WORK)
    return cfg.resolved()


def untrained(cfg: LearnConfig) -> TrainResult:
    """The model at initialisation with its step-0 snapshot: one batch forward and backward, no update."""
    return train(cfg, keep_going=lambda step: step < 0)


def _reproducible(result: TrainResult) -> tuple:
    """What a rebuilt run reproduces: all but its model and task objects and its seconds."""
    return result.config, result.snapshots, result.stopped


# Check mode compares _reproducible of the kept and a rebuilt run. A model of d_model 256 and 2 layers holds ~4 MB.
@cached(8, compared=_reproducible)
def untrained_run(settings: LearnSettings) -> TrainResult:
    """untrained(settings.config()) for the learning page's settings, shared (read-only), with the cache_key of its
    settings so that @cached tables functions take it like a trained run."""
    result = untrained(settings.config())
    result.cache_key = ("untrained", settings)
    return result


def curves(result: TrainResult, series: str = "") -> pd.DataFrame:
    """One row per snapshot: step, the losses, accuracies, alignment mass and the √d_k page's statistics."""
    columns = [
        "train_loss",
        "heldout_loss",
        "train_accuracy",
        "heldout_accuracy",
        "best_alignment_mass",
        "entropy",
        "max_weight",
        "grad_norm_q",
        "grad_norm_k",
        "qk_var",
        "qk_var_iid",
        "logit_std",
    ]
    df = pd.DataFrame({"step": result.curve("step"), **{c: result.curve(c) for c in columns}})
    return df.assign(series=series) if series else df


def long_curves(df: pd.DataFrame, columns: list[str], id_columns=("step",)) -> pd.DataFrame:
    """curves() melted to step, metric, value (NaN rows dropped: a window with no finite step)."""
    out = df.melt(id_vars=list(id_columns), value_vars=columns, var_name="metric", value_name="value")
    return out.dropna(subset=["value"]).reset_index(drop=True)


@cached(32)
def curve_frames(result: TrainResult) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The learning page's curves of a run: long for the loss and the accuracy charts (LOSSES, SCORES), and wide
    as each chart's CSV columns."""
    df = curves(result)
    return long_curves(df, LOSSES), long_curves(df, SCORES), df[["step", *LOSSES]], df[["step", *SCORES]]


@functools.lru_cache(maxsize=64)  # drawn on every rerun otherwise (labels, caption, example input): ~1 ms each
def probe_example(cfg: LearnConfig):
    """The first sequence of the run's held-out probe batch (train_iter draws it from seed + 2): source, alignment.

    Shared between calls: read the tensors, never change them."""
    task = build_task(cfg)
    probe = task.sample(cfg.eval_size, torch.Generator().manual_seed(cfg.seed + 2), "heldout")
    return probe.source[0], probe.query[0], probe.alignment[0]


def axis_labels(cfg: LearnConfig) -> tuple[list[str], list[str]]:
    """Labels of the source (keys) and target (queries) positions in the heatmaps: the shown sequence's words."""
    task = build_task(cfg)
    source, query, _ = probe_example(cfg)
    words = task.decode(source)
    if cfg.task == "reorder":
        return [f"{i} {r} {w}" for i, (r, w) in enumerate(zip(SOURCE_ROLES, words, strict=True))], [
            f"{i} {r}" for i, r in enumerate(TARGET_ROLES)
        ]
    if cfg.task == "recall":
        return [f"{i} {w}" for i, w in enumerate(words)], [f"0 {task.decode(query)[0]}?"]
    return [f"x{i} {w}" for i, w in enumerate(words)], [f"y{i}" for i in range(task.target_len)]


def uses_example(cfg: LearnConfig) -> bool:
    """Recall's right alignment differs per sequence: the shown sequence's, not one for the whole task."""
    return cfg.task == "recall"


def right_alignment(cfg: LearnConfig) -> torch.Tensor:
    """(n_t, n_s): the alignment a trained model should find (fixed for the permutations; recall: the example's)."""
    if uses_example(cfg):
        return probe_example(cfg)[2]
    task = build_task(cfg)
    source = torch.zeros(1, task.source_len, dtype=torch.long)
    return task.label(source, task.blank_query(1)).alignment[0]


def attention_cells(
    weights: dict[str, torch.Tensor], cfg: LearnConfig, name: str, alignment: torch.Tensor | None
) -> pd.DataFrame:
    """Heatmap cells of one attention (H, n_q, n_k) per head, plus the right alignment as one more panel.

    Columns: panel ("1".."H" or RIGHT), query, key, q_label, k_label, weight.
    """
    keys, queries = axis_labels(cfg)
    if name.startswith("self"):  # the source attending to itself: both axes are source positions
        queries = keys
    mats = [(str(h + 1), w) for h, w in enumerate(weights[name])]
    if alignment is not None and name.startswith("cross"):
        mats.append((RIGHT, alignment))
    rows = []
    for panel, m in mats:
        n_q, n_k = m.shape
        q, k = torch.meshgrid(torch.arange(n_q), torch.arange(n_k), indexing="ij")
        rows.append(
            pd.DataFrame(
                {
                    "panel": panel,
                    "query": q.flatten().numpy(),
                    "key": k.flatten().numpy(),
                    "q_label": [queries[i] for i in q.flatten().tolist()],
                    "k_label": [keys[j] for j in k.flatten().tolist()],
                    "weight": m.flatten().double().numpy(),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def map_names(result: TrainResult) -> list[str]:
    """The attentions of a run's model, in the order the page shows them: self-attention first, by layer."""
    return sorted(result.snapshots[0].example_attention, key=lambda n: (n.startswith("cross"), n))


@cached(64)
def snapshot_cells(result: TrainResult, index: int, name: str) -> pd.DataFrame:
    """attention_cells of the attention `name` at snapshot `index`, beside the right alignment."""
    return attention_cells(snapshot_weights(result, index), result.config, name, right_alignment(result.config))


def snapshot_weights(result: TrainResult, index: int) -> dict[str, torch.Tensor]:
    """The attention maps a page shows at snapshot `index`: one held-out sequence (the probe's first).

    Not the probe average: rows that are one-hot on different wrong positions average to a blur, so the mean
    map would contradict the entropy of the rows it is made of.
    """
    return result.snapshots[index].example_attention


def map_stats(weights: dict[str, torch.Tensor]) -> dict[str, float]:
    """Entropy (nats) and largest weight of the shown cross-attention 1 (H, n_q, n_k), means over heads and rows."""
    cross = weights["cross1"].double()
    return {"entropy": float(entropy(cross).mean()), "max_weight": float(cross.amax(dim=-1).mean())}


def chance_accuracy(cfg: LearnConfig) -> float:
    """1 / number of answers: the accuracy of uniform guessing (chance_loss's counterpart)."""
    return 1 / _answers(cfg)


def learned(result: TrainResult) -> bool:
    """Whether the run earns the word "trained": its final held-out accuracy reaches LEARNED."""
    return result.final.heldout_accuracy >= LEARNED


def snapshot_row(result: TrainResult, index: int) -> dict[str, float]:
    s = result.snapshots[index]
    return {
        "step": s.step,
        "heldout_accuracy": s.heldout_accuracy,
        "alignment_mass": s.best_alignment_mass,
        "heldout_loss": s.heldout_loss,
        "entropy": s.entropy,
    }


def example_input(cfg: LearnConfig) -> str:
    """A valid input for the task, as a student would type it (the probe's first held-out sequence)."""
    task = build_task(cfg)
    source, query, _ = probe_example(cfg)
    words = task.decode(source) + (task.decode(query) if cfg.task == "recall" else [])
    return " ".join(words)


def task_words(cfg: LearnConfig) -> str:
    return build_task(cfg).words()


def input_problem(cfg: LearnConfig, text: str) -> tuple[str, dict] | None:
    """What keeps a typed input from the task, as (problem, fields) for the page to word, or None.

    Problems: "chars" (not words of letters and digits), "count" (n expected, got), "unknown" (token). The
    task's own rules beyond these (recall's distinct keys, say) are left to attn_core's ValueError.
    """
    task = build_task(cfg)
    try:
        tokens = parse_tokens(text)
    except ValueError:
        return "chars", {}
    if len(tokens) != task.input_len:
        return "count", {"n": task.input_len, "got": len(tokens)}
    unknown = next((w for w in tokens if w not in task.index or w == BLANK), None)
    if unknown is not None:
        return "unknown", {"token": unknown[:20]}
    return None


def own_input(result: TrainResult, text: str) -> tuple[pd.DataFrame, dict[str, torch.Tensor], torch.Tensor]:
    """The trained model on one typed input: (answer table, attention {name: (H, n_q, n_k)}, right alignment).

    The table has position, expected, answer, right. ValueError (from attn_core) on input the task cannot read.
    """
    p = predict(result, text)
    task = result.task
    expected = task.decode(p.expected)
    table = pd.DataFrame(
        {
            "position": range(len(p.words)),
            "expected": expected,
            "answer": p.words,
            "right": [a == e for a, e in zip(p.words, expected, strict=True)],
        }
    )
    return table, p.attention, p.alignment


@cached(32)
def own_answer(result: TrainResult, text: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """own_input's answer table and its attention as own_cells; ValueError on input the task cannot read."""
    table, attention, alignment = own_input(result, text)
    return table, own_cells(result, text, attention, alignment)


def own_labels(result: TrainResult, text: str) -> tuple[list[str], list[str]]:
    """Axis labels of a typed input: the source words by position, the target positions (recall: the query)."""
    task = result.task
    source, query = task.encode(text)
    keys = [f"{i} {w}" for i, w in enumerate(task.decode(source[0]))]
    if result.config.task == "recall":
        return keys, [f"0 {task.decode(query[0])[0]}?"]
    if result.config.task == "reorder":
        return keys, [f"{i} {r}" for i, r in enumerate(TARGET_ROLES)]
    return keys, [f"y{i}" for i in range(task.target_len)]


def own_cells(result: TrainResult, text: str, attention, alignment) -> pd.DataFrame:
    """attention_cells for a typed input, labelled with its words."""
    keys, queries = own_labels(result, text)
    rows = []
    for panel, m in [(str(h + 1), w) for h, w in enumerate(attention["cross1"])] + [(RIGHT, alignment)]:
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                rows.append((panel, i, j, queries[i], keys[j], float(m[i, j])))
    return pd.DataFrame(rows, columns=["panel", "query", "key", "q_label", "k_label", "weight"])


def _answers(cfg: LearnConfig) -> int:
    """How many answers the task allows at one position (recall: the values)."""
    task = make_task(cfg.task, length=cfg.length, vocab_size=cfg.vocab_size, offset=cfg.offset)
    return task.n_values if cfg.task == "recall" else sum(1 for t in task.vocab if t != BLANK)


def chance_loss(cfg: LearnConfig) -> float:
    """ln(number of answers): the loss of a model that guesses uniformly among the task's symbols."""
    return math.log(_answers(cfg))


@cached(16)
def untrained_pair(settings: ScaleSettings) -> tuple[Snapshot, Snapshot]:
    """The √d_k page's two models at initialisation (identical weights; only the scale differs): their step-0
    snapshots, measured on the probe alone (initial_snapshot: no training batch, whose fields the page does not show),
    cheap (a pair is ~130 kB at d_k 256)."""
    cfg = settings.config()
    return initial_snapshot(cfg), initial_snapshot(replace(cfg, scaled=False))


@cached(16)
def scale_frames(both: ScalingComparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both runs' curves (long by series, with qk_var / d_k) and their summary (scale_summary)."""
    df = pd.concat([curves(both.scaled, "scaled"), curves(both.unscaled, "unscaled")])
    df = df.assign(qk_var_per_d_k=df["qk_var"] / both.scaled.config.d_k).reset_index(drop=True)
    return df, scale_summary(both.scaled, both.unscaled)


@cached(64)
def scale_columns(both: ScalingComparison, columns: tuple[str, ...]) -> pd.DataFrame:
    """scale_frames' curves cut to step, series and `columns`: one chart's CSV."""
    df, _ = scale_frames(both)
    return df[["step", "series", *columns]]


@cached(16)
def summary_shown(both: ScalingComparison, names: Mapping[str, str]) -> pd.DataFrame:
    """scale_frames' summary as the page's table shows it: SUMMARY_SHOWN's columns, each run by its name in `names`."""
    _, summary = scale_frames(both)
    return summary[list(SUMMARY_SHOWN)].assign(series=summary["series"].map(names))


def scale_summary(scaled: TrainResult, unscaled: TrainResult) -> pd.DataFrame:
    """Step 0, about a tenth of the way, and the end of both runs (attn_core.learn.run_summary), one row each."""
    from attn_core.learn import run_summary

    rows = [{"series": "scaled", **run_summary(scaled)}, {"series": "unscaled", **run_summary(unscaled)}]
    return pd.DataFrame(rows)


@cached(8)
def init_variance(d_ks: tuple[int, ...], init_scale: float, task: str, seed: int) -> pd.DataFrame:
    """Var(q·k) of the untrained model's cross-attention against d_k, beside the i.i.d. prediction d_k init_scale⁴.

    Cheap: one forward of the probe per d_k (initial_snapshot). Columns d_k, empirical, iid, theory.
    """
    rows = []
    for d_k in d_ks:
        cfg = LearnConfig(task=task, d_model=d_k, init_scale=init_scale, steps=1, snapshots=2, seed=seed)
        s = initial_snapshot(cfg)
        rows.append({"d_k": d_k, "empirical": s.qk_var, "iid": s.qk_var_iid, "theory": d_k * init_scale**4})
    return pd.DataFrame(rows)


@cached(16)
def variance_points(init_scale: float, task: str, seed: int, d_k: int, both: ScalingComparison | None) -> pd.DataFrame:
    """init_variance over D_KS as series "untrained", and with a trained pair at d_k, each run's final Var(q·k)
    beside the i.i.d. prediction (series trained_scaled, trained_unscaled)."""
    variance = init_variance(D_KS, init_scale, task, seed).assign(series="untrained")
    if both is None:
        return variance
    finals = [
        {"d_k": d_k, "series": f"trained_{s}", "empirical": r.final.qk_var, "theory": d_k * init_scale**4}
        for s, r in (("scaled", both.scaled), ("unscaled", both.unscaled))
    ]
    return pd.concat([variance, pd.DataFrame(finals)], ignore_index=True)
