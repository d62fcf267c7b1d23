"""Measure attn_core.learn: each task's default run on one thread, and scaled vs unscaled logits over d_k.

    python -m tools.learn_scaling --out benchmarks/learn_scaling.md

Part 1 trains every task's default config `--repeats` times (CPU time and wall time, min and median; the
numbers are the same each time, only the clock varies). Part 2 runs compare_scaling on `--task` for every
d_k x init_scale x seed and tabulates run_summary: step 0, the snapshot nearest a tenth of training, the end.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import torch

from attn_core.bench import hardware_info
from attn_core.learn import TASK_NAMES, LearnConfig, compare_scaling, run_summary, train


def _timings(repeats: int) -> list[str]:
    lines = [
        "| task | steps | lr | CPU s min / median | wall s min / median | held-out accuracy | whole sequences | "
        "alignment mass |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task in TASK_NAMES:
        cpu, wall = [], []
        for _ in range(repeats):
            c, w = time.process_time(), time.perf_counter()
            result = train(LearnConfig(task=task))
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
        f, cfg = result.final, result.config
        lines.append(
            f"| {task} | {cfg.steps} | {cfg.lr:g} | {min(cpu):.2f} / {statistics.median(cpu):.2f} | "
            f"{min(wall):.2f} / {statistics.median(wall):.2f} | {f.heldout_accuracy:.3f} | "
            f"{f.heldout_sequence_accuracy:.3f} | {f.best_alignment_mass:.3f} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def _grid(task: str, d_ks: list[int], inits: list[float], seeds: list[int]) -> list[str]:
    lines = [
        "| d_k | init | seed | logits | step 0: logit sd | max w | ‖∇W_Q‖ | step ~30: loss | entropy | logit sd "
        "| ‖∇W_Q‖ | 95% at step | final acc | mass | logit sd | Var(q·k) / d_k |",
        "|" + "---|" * 16,
    ]
    for d_k in d_ks:
        for init in inits:
            for seed in seeds:
                both = compare_scaling(LearnConfig(task=task, init_scale=init, seed=seed), d_k=d_k)
                for name, run in (("scaled", both.scaled), ("unscaled", both.unscaled)):
                    s = run_summary(run)
                    lines.append(
                        f"| {d_k} | {init:g} | {seed} | {name} | {s['init_logit_std']:.2f} | "
                        f"{s['init_max_weight']:.2f} | {s['init_grad_norm_q']:.3f} | {s['early_loss']:.2f} | "
                        f"{s['early_entropy']:.2f} | {s['early_logit_std']:.1f} | {s['early_grad_norm_q']:.3f} | "
                        f"{s['steps_to_accuracy'] if s['steps_to_accuracy'] is not None else 'never'} | "
                        f"{s['final_accuracy']:.3f} | {s['final_alignment_mass']:.2f} | "
                        f"{s['final_logit_std']:.1f} | {s['final_qk_var'] / d_k:.1f} |"
                    )
                    print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.learn_scaling", description=__doc__.splitlines()[0])
    p.add_argument("--out", help="Markdown file to write (default: stdout)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--task", choices=TASK_NAMES, default="reverse")
    p.add_argument("--d-k", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--init-scale", type=float, nargs="+", default=[1.0, 2.0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    started, load = datetime.datetime.now(datetime.UTC), os.getloadavg()
    command = " ".join(["python -m tools.learn_scaling", *(sys.argv[1:] if argv is None else argv)])
    timings = _timings(args.repeats)
    grid = _grid(args.task, args.d_k, args.init_scale, args.seeds)
    text = "\n".join(
        [
            "# attn_core.learn: default runs, and 1/sqrt(d_k) under training",
            "",
            f"- date: {started:%Y-%m-%d %H:%M} UTC; command: `{command}`",
            f"- machine: {hardware_info()['cpu_model']}, {os.cpu_count()} CPUs, "
            f"{torch.get_num_threads()} torch thread, "
            f"python {platform.python_version()}, torch {torch.__version__}",
            f"- load average (1 min) at the start {load[0]:.1f}, at the end {os.getloadavg()[0]:.1f}: wall times "
            "depend on what else runs on the machine; CPU time is the process's own",
            "",
            "## Each task's default run (LearnConfig(task=...), seed 0, one thread)",
            "",
            *timings,
            "",
            f"## Scaled vs unscaled: {args.task}, Adam, the default lr (x 64 / d_model above 64), 300 steps",
            "",
            "Same seed, init and data in both runs of a row pair. ‖∇W_Q‖: mean gradient norm at cross1's W_Q over "
            "the steps since the previous snapshot. 'step ~30' is the snapshot nearest a tenth of training.",
            "",
            *grid,
            "",
        ]
    )
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
