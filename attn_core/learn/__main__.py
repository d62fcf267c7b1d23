"""python -m attn_core.learn --task reverse --steps 300 --seed 0: train, print progress and the final numbers.

With --compare, train the same model with and without the 1/sqrt(d_k) scale and print both side by side.
`python -m attn_core.learn induction ...` trains the causal decoder on repeated segments instead (induction_cli).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

import torch

from attn_core._checks import check_int
from attn_core.learn.scaling import compare_scaling
from attn_core.learn.tasks import TASK_NAMES
from attn_core.learn.train import OPTIMIZERS, LearnConfig, Snapshot, TrainResult, train

ROW = "{step:>5}  {train_loss:>8.4f}  {heldout_accuracy:>7.3f}  {best_alignment_mass:>6.3f}  {entropy:>7.3f}  "
ROW += "{max_weight:>6.3f}  {grad_norm_q:>9.2e}  {grad_norm_k:>9.2e}  {qk_var:>10.1f}  {logit_std:>7.2f}"
HEADER = " step      loss  heldout    mass  entropy   max_w     grad_Wq    grad_Wk    Var(q.k)  logit_sd"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m attn_core.learn", description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=TASK_NAMES, default="reverse")
    p.add_argument("--length", type=int, help="sequence length (recall: key-value pairs); default: the task's")
    p.add_argument("--vocab-size", type=int, help="symbols (recall: keys); default: the task's")
    p.add_argument("--offset", type=int, help="copy_offset's shift (default min(3, length - 1))")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--layers", type=int, default=1, help="cross-attention layers")
    p.add_argument("--encoder-layers", type=int, help="causal self-attention layers over the source")
    p.add_argument("--unscaled", action="store_true", help="logits q.k instead of q.k / sqrt(d_k)")
    p.add_argument("--init-scale", type=float, default=1.0, help="std multiplier of W_Q, W_K at initialisation")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    p.add_argument("--lr", type=float)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int)
    p.add_argument("--snapshots", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compare", action="store_true", help="train scaled and unscaled, print both")
    p.add_argument("--d-k", type=int, help="with --compare: d_k per head (d_model = d_k x heads)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (tiny matrices: 1 is fastest)")
    return p


def _config(args: argparse.Namespace) -> LearnConfig:
    return LearnConfig(
        task=args.task,
        length=args.length,
        vocab_size=args.vocab_size,
        offset=args.offset,
        d_model=args.d_model,
        num_heads=args.heads,
        layers=args.layers,
        encoder_layers=args.encoder_layers,
        scaled=not args.unscaled,
        init_scale=args.init_scale,
        optimizer=args.optimizer,
        lr=args.lr,
        batch_size=args.batch_size,
        steps=args.steps,
        snapshots=args.snapshots,
        seed=args.seed,
    )


def _row(s: Snapshot) -> str:
    return ROW.format(**{f.name: getattr(s, f.name) for f in fields(s)})


def _print_run(title: str, result: TrainResult) -> None:
    print(f"{title}: {result.config}\n{HEADER}")
    for s in result.snapshots:
        print(_row(s))
    f = result.final
    print(
        f"final: held-out accuracy {f.heldout_accuracy:.3f} (whole sequences {f.heldout_sequence_accuracy:.3f}), "
        f"alignment mass {f.best_alignment_mass:.3f}, trained in {result.seconds:.1f} s\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["induction"]:
        from attn_core.learn.induction_cli import main as induction_main

        return induction_main(argv[1:])
    args = _parser().parse_args(argv)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(check_int("threads", args.threads, minimum=1, maximum=64))
        return _run(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> int:
    cfg = _config(args).resolved()
    if args.compare:
        both = compare_scaling(cfg, d_k=args.d_k)
        for name, run in (("scaled (1/sqrt(d_k))", both.scaled), ("unscaled", both.unscaled)):
            _print_run(name, run)
        return 0

    def progress(done: int, total: int, loss: float) -> None:
        if done % max(1, total // 10) == 0:
            print(f"  step {done}/{total}  loss {loss:.4f}", file=sys.stderr, flush=True)

    result = train(cfg, progress=progress)
    _print_run("trained", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
