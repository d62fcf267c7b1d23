"""attn_core: exact, tested attention in PyTorch, and the analysis helpers of Attention Explorer."""

from attn_core.backward import AttentionGrads, attention_backward, attention_backward_autograd
from attn_core.bilinear import asymmetry, projected_scores
from attn_core.learn import (
    TASK_NAMES,
    LearnConfig,
    Prediction,
    ScalingComparison,
    Snapshot,
    Task,
    TinyAttentionModel,
    TrainResult,
    compare_scaling,
    make_task,
    predict,
    run_summary,
    snapshot_steps,
    train,
    train_iter,
)
from attn_core.masks import (
    block_causal_mask,
    causal_mask,
    future_keys,
    hierarchical_causal_mask,
    padding_mask,
    sliding_window_mask,
)
from attn_core.multihead import MultiHeadAttention
from attn_core.naive import masked_softmax, naive_attention, renormalise
from attn_core.positional import frequencies, shift_matrix, single_period_encoding, sinusoidal_encoding
from attn_core.regression import AdditiveAttention, kernel_weights, nadaraya_watson, parameter_count
from attn_core.stats import (
    cosine_similarity_samples,
    entropy,
    jacobian_norm,
    normal_mass,
    random_logits,
    sample_score_prefixes,
    sample_scores,
    saturation_summary,
    score_mass,
    score_statistics,
    share_within,
    softmax_jacobian,
    theoretical_score_kurtosis,
    theoretical_score_mean,
    theoretical_score_variance,
)
from attn_core.symmetry import (
    equivariance_error,
    make_permutation,
    parse_permutation,
    permutation_matrix,
)
from attn_core.tiled import TiledTrace, TileStep, tiled_attention, tiled_attention_trace

__all__ = [
    "TASK_NAMES",
    "AdditiveAttention",
    "AttentionGrads",
    "LearnConfig",
    "MultiHeadAttention",
    "Prediction",
    "ScalingComparison",
    "Snapshot",
    "Task",
    "TileStep",
    "TiledTrace",
    "asymmetry",
    "attention_backward",
    "attention_backward_autograd",
    "TinyAttentionModel",
    "TrainResult",
    "block_causal_mask",
    "causal_mask",
    "compare_scaling",
    "cosine_similarity_samples",
    "entropy",
    "equivariance_error",
    "flash_attention",
    "flash_available",
    "frequencies",
    "future_keys",
    "hierarchical_causal_mask",
    "jacobian_norm",
    "kernel_weights",
    "make_permutation",
    "make_task",
    "masked_softmax",
    "nadaraya_watson",
    "naive_attention",
    "normal_mass",
    "padding_mask",
    "parameter_count",
    "parse_permutation",
    "permutation_matrix",
    "projected_scores",
    "random_logits",
    "renormalise",
    "predict",
    "random_logits",
    "run_summary",
    "sample_score_prefixes",
    "sample_scores",
    "saturation_summary",
    "score_mass",
    "score_statistics",
    "share_within",
    "shift_matrix",
    "single_period_encoding",
    "sinusoidal_encoding",
    "sliding_window_mask",
    "snapshot_steps",
    "softmax_jacobian",
    "theoretical_score_kurtosis",
    "theoretical_score_mean",
    "theoretical_score_variance",
    "tiled_attention",
    "tiled_attention_trace",
    "train",
    "train_iter",
]


def __getattr__(name: str):
    """flash_attention/flash_available load on first use: importing triton is slow, and triton is optional."""
    if name in ("flash_attention", "flash_available"):
        from attn_core import flash_triton

        return getattr(flash_triton, name)
    raise AttributeError(f"module 'attn_core' has no attribute {name!r}")
