"""Watch attention learn: toy tasks with a known right alignment, a tiny model, and a training loop with snapshots."""

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
    "TASK_NAMES",
    "Batch",
    "LearnConfig",
    "Prediction",
    "ScalingComparison",
    "Snapshot",
    "Task",
    "TinyAttentionModel",
    "TrainResult",
    "compare_scaling",
    "make_task",
    "one_thread",
    "parse_tokens",
    "predict",
    "run_summary",
    "snapshot_steps",
    "train",
    "train_iter",
]
