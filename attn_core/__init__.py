"""attn_core: exact, tested attention in PyTorch, and the analysis helpers of Attention Explorer.

The names below load from their modules on first use (PEP 562) instead of all at once here. A package whose
`__init__` imports its submodules takes its own import lock and then theirs, while a thread that imports a
submodule directly (`from attn_core.stats import entropy`) takes that submodule's lock first and the package's
second: two Streamlit script threads importing both ways at once deadlocked (`_DeadlockError`, "cannot import
name ... from partially initialized module"). Importing nothing here keeps every lock order one way. flash_attention
and flash_available load lazily anyway: importing triton is slow, and triton is optional.
"""

import importlib

# module -> the public names it gives the package
_EXPORTS: dict[str, tuple[str, ...]] = {
    "backward": ("AttentionGrads", "attention_backward", "attention_backward_autograd"),
    "bilinear": ("asymmetry", "projected_scores"),
    "learn": (
        "SCORES",
        "TASK_NAMES",
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
    ),
    "masks": (
        "block_causal_mask",
        "causal_mask",
        "future_keys",
        "hierarchical_causal_mask",
        "padding_mask",
        "sliding_window_mask",
    ),
    "multihead": ("MultiHeadAttention",),
    "naive": ("masked_softmax", "naive_attention", "renormalise"),
    "positional": ("frequencies", "shift_matrix", "single_period_encoding", "sinusoidal_encoding"),
    "regression": ("AdditiveAttention", "kernel_weights", "nadaraya_watson", "parameter_count"),
    "stats": (
        "cosine_similarity_samples",
        "entropy",
        "jacobian_norm",
        "normal_mass",
        "random_logits",
        "sample_score_prefixes",
        "sample_scores",
        "saturation_summary",
        "score_mass",
        "score_statistics",
        "share_within",
        "softmax_jacobian",
        "theoretical_score_kurtosis",
        "theoretical_score_mean",
        "theoretical_score_variance",
    ),
    "symmetry": ("equivariance_error", "make_permutation", "parse_permutation", "permutation_matrix"),
    "tiled": ("TiledTrace", "TileStep", "tiled_attention", "tiled_attention_trace"),
    "flash_triton": ("flash_attention", "flash_available", "flash_compiled"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """A public name, imported from its module on first use and then kept here."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'attn_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"attn_core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
