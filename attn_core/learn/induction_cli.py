"""python -m attn_core.learn induction --layers 2 --steps 400 --seed 0: train on repeated random segments (one torch
thread) and print the losses, the phase-change step, the layer x head score grid and what knocking out each head does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

import numpy as np

from attn_core.learn.decoder import KNOCKOUT_MODES, POSITIONS
from attn_core.learn.heads import SCORES
from attn_core.learn.induction import (
    InductionConfig,
    InductionResult,
    InductionSnapshot,
    knockout_losses,
    phase_change,
    train_induction_iter,
)
from attn_core.learn.threads import one_thread

ROW = "{:>5}  {:>8.3f}  {:>10.3f}  {:>8.3f}  {:>8.3f}  {:>8.2f}  {:>9.2f}"
HEADER = " step     train  first_seen  repeated       all  prev(L0)  ind(last)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m attn_core.learn induction", description=__doc__.splitlines()[0])
    default = InductionConfig()
    for f in fields(InductionConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "mlp":
            p.add_argument(flag, action="store_true", help="an MLP after each attention layer")
        elif f.name == "positions":
            p.add_argument(flag, choices=POSITIONS, default=default.positions)
        else:
            p.add_argument(flag, type=type(getattr(default, f.name)), default=getattr(default, f.name))
    p.add_argument("--mode", choices=KNOCKOUT_MODES, default="zero", help="knockout: zero or mean ablation")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))
    mode = args.pop("mode")
    try:
        cfg = InductionConfig(**args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"config: {cfg}\n{HEADER}")
    with one_thread():
        for item in train_induction_iter(cfg):
            if isinstance(item, InductionSnapshot):
                print(_row(item), flush=True)
            else:
                result = item
    _print_summary(result, mode)
    return 0


def _row(s: InductionSnapshot) -> str:
    prev, ind = s.scores["previous_token"][0].max(), s.scores["induction"][-1].max()
    return ROW.format(s.step, s.train_loss, s.losses["first_seen"], s.losses["repeated"], s.losses["all"], prev, ind)


def _print_summary(result: InductionResult, mode: str) -> None:
    snaps = result.snapshots
    curves = ([s.step for s in snaps], [s.losses["repeated"] for s in snaps], [s.losses["first_seen"] for s in snaps])
    step = phase_change(*curves) if len(snaps) > 1 else None
    print(
        "\nphase change (the repeated-token loss falls away from the first-seen loss): "
        f"{step if step is not None else 'none'}"
    )
    print(f"trained in {result.seconds:.1f} s wall, {result.cpu_seconds:.1f} s CPU (one thread)")
    final = snaps[-1]
    print(f"\nhead scores at step {final.step} (rows: layers, columns: heads)")
    for name in SCORES:
        grid = np.array2string(final.scores[name], precision=2, suppress_small=True, separator=" ")
        print(f"{name}:\n{grid}")
    _print_knockouts(result, mode)


def _print_knockouts(result: InductionResult, mode: str) -> None:
    cfg = result.config
    intact = knockout_losses(result, frozenset(), mode)
    print(f"\nknockout ({mode}), losses in nats on the held-out batch: first_seen  repeated")
    print(f"  none          {intact['first_seen']:>10.3f}  {intact['repeated']:>8.3f}")
    for layer in range(cfg.layers):
        for head in range(cfg.num_heads):
            out = knockout_losses(result, frozenset({(layer, head)}), mode)
            print(f"  L{layer}H{head}          {out['first_seen']:>10.3f}  {out['repeated']:>8.3f}")
        whole = knockout_losses(result, frozenset((layer, h) for h in range(cfg.num_heads)), mode)
        print(f"  all of L{layer}    {whole['first_seen']:>10.3f}  {whole['repeated']:>8.3f}")
