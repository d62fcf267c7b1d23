"""What 1/sqrt(d_k) does to training: the same model, same seed, same data, trained with and without it.

With unit-variance q and k components, Var(q.k) = d_k, so unscaled logits start with a spread of
sqrt(d_k) init_scale^2 instead of init_scale^2: the softmax starts peaked on arbitrary source positions.
Under Adam, an update of W_Q or W_K also moves unscaled logits sqrt(d_k) times further.

Measured (reverse, Adam, 300 steps, seeds 0-2; benchmarks/learn_scaling.md, `python -m tools.learn_scaling`):
every scaled run learns (95% held-out by step 31-114). Unscaled: d_k = 16, all learn, somewhat later;
d_k = 64, 2 of 3 (init_scale 1) and 1 of 3 (init_scale 2); d_k = 256, none: within ~30 steps their logits
spread to hundreds (against tens scaled), entropy ~0, the loss stays at chance, and they never leave the
wrong positions. At step 0 the unscaled gradient at W_Q is *larger* (17 of 18 pairs): the missing
1/sqrt(d_k) factor outweighs the flatter softmax Jacobian. Later both gradients can be small; the scaled
run's milder saturation is the one it recovers from. So the effect needs d_k >= 64 or a larger init_scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from attn_core._checks import check_int
from attn_core.learn.train import MAX_D_MODEL, LearnConfig, TrainResult, train


@dataclass
class ScalingComparison:
    scaled: TrainResult
    unscaled: TrainResult

    def summary(self) -> dict[str, dict[str, float | int | None]]:
        """Per run ("scaled", "unscaled"): the numbers the comparison is about."""
        return {"scaled": run_summary(self.scaled), "unscaled": run_summary(self.unscaled)}


def run_summary(result: TrainResult, *, accuracy: float = 0.95) -> dict[str, float | int | None]:
    """Step 0, an early snapshot (about a tenth of the way) and the end of one run, in a flat dict.

    steps_to_accuracy: the first snapshot step with held-out accuracy >= `accuracy` (None: never).
    """
    snaps = result.snapshots
    first, last = snaps[0], snaps[-1]
    early = min(snaps[1:] or snaps, key=lambda s: abs(s.step - last.step / 10))
    hit = next((s.step for s in snaps if s.heldout_accuracy >= accuracy), None)
    return {
        "d_k": result.config.d_k,
        "init_logit_std": first.logit_std,
        "init_entropy": first.entropy,
        "init_max_weight": first.max_weight,
        "init_grad_norm_q": first.grad_norm_q,
        "init_grad_norm_k": first.grad_norm_k,
        "init_qk_var": first.qk_var,
        "early_step": early.step,
        "early_loss": early.train_loss,
        "early_entropy": early.entropy,
        "early_logit_std": early.logit_std,
        "early_grad_norm_q": early.grad_norm_q,
        "early_grad_norm_k": early.grad_norm_k,
        "steps_to_accuracy": hit,
        "final_accuracy": last.heldout_accuracy,
        "final_alignment_mass": last.best_alignment_mass,
        "final_loss": last.train_loss,
        "final_entropy": last.entropy,
        "final_logit_std": last.logit_std,
        "final_qk_var": last.qk_var,
    }


def compare_scaling(
    config: LearnConfig,
    *,
    d_k: int | None = None,
    keep_going: Callable[[int], bool] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> ScalingComparison:
    """Train `config` twice, scaled=True then scaled=False, everything else (seed, data, init) equal.

    d_k: the width of each head; sets d_model = d_k x num_heads (None keeps config.d_model).
    keep_going and progress are passed to both runs; progress counts 2 x steps in all.
    """
    if d_k is not None:
        check_int("num_heads", config.num_heads, minimum=1, maximum=4)
        check_int("d_k", d_k, minimum=2, maximum=MAX_D_MODEL // config.num_heads)
        config = replace(config, d_model=d_k * config.num_heads)
    config = config.resolved()
    steps = config.steps
    both = []
    for i, scaled in enumerate((True, False)):

        def shifted(done: int, total: int, loss: float, offset: int = i * steps) -> None:
            if progress is not None:
                progress(offset + done, 2 * steps, loss)

        both.append(train(replace(config, scaled=scaled), keep_going=keep_going, progress=shifted))
    return ScalingComparison(*both)
