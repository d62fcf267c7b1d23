"""Watch attention learn: toy tasks with a known right alignment, a tiny model, and a training loop with snapshots."""

from attn_core.learn.decoder import CausalDecoder
from attn_core.learn.heads import SCORES, head_scores, split_losses
from attn_core.learn.induction import (
    InductionConfig,
    InductionResult,
    InductionSnapshot,
    knockout_losses,
    phase_change,
    probe_sequence,
    repeated_batch,
    train_induction,
    train_induction_iter,
    work,
)
from attn_core.learn.model import TinyAttentionModel
from attn_core.learn.scaling import ScalingComparison, compare_scaling, run_summary
from attn_core.learn.tasks import TASK_NAMES, Batch, Task, make_task, parse_tokens
from attn_core.learn.threads import one_thread
from attn_core.learn.train import (
    LearnConfig,
    Prediction,
    Snapshot,
    TrainResult,
    predict,
    snapshot_steps,
    train,
    train_iter,
)

__all__ = [
    "SCORES",
    "TASK_NAMES",
    "Batch",
    "CausalDecoder",
    "InductionConfig",
    "InductionResult",
    "InductionSnapshot",
    "LearnConfig",
    "Prediction",
    "ScalingComparison",
    "Snapshot",
    "Task",
    "TinyAttentionModel",
    "TrainResult",
    "compare_scaling",
    "head_scores",
    "knockout_losses",
    "make_task",
    "one_thread",
    "parse_tokens",
    "phase_change",
    "predict",
    "probe_sequence",
    "repeated_batch",
    "run_summary",
    "snapshot_steps",
    "split_losses",
    "train",
    "train_induction",
    "train_induction_iter",
    "train_iter",
    "work",
]
