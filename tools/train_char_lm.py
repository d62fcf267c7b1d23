"""Train the character-level model of "Inside a small language model" and write its fp16 checkpoint.

    python -m tools.train_char_lm --out explorer/data/char_lm.pt

One torch thread (the CPU time it prints is one core's). Every option defaults to the shipped recipe
(attn_core.learn.charlm.CharLMConfig); the numbers it prints go into benchmarks/char_lm.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import fields

import torch

from attn_core.learn import charlm


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="checkpoint path (.pt)")
    for f in fields(charlm.CharLMConfig):
        kind = (lambda s: s.lower() in ("1", "true", "yes")) if f.type in ("bool", bool) else type(f.default)
        p.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=f.default)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    cfg = charlm.CharLMConfig(**{f.name: getattr(args, f.name) for f in fields(charlm.CharLMConfig)})
    corpus = charlm.corpus_text()
    print(f"corpus: pydoc_data.topics, {len(corpus):,} characters, sha256 {charlm.corpus_sha256(corpus)[:16]}")
    wall = time.perf_counter()
    history, model = [], None
    for item in charlm.train_iter(cfg):
        if isinstance(item, charlm.Evaluation):
            history.append(item)
            print(
                f"step {item.step:>5}  cpu {item.seconds:7.1f} s  train {item.train_loss:.3f}  "
                f"held-out text {item.text_loss:.3f}  repeated {item.repeat_loss:.3f}",
                flush=True,
            )
        else:
            model = item
    last = history[-1]
    measured = {
        "cpu_seconds": round(last.seconds, 1),
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "text_loss": round(last.text_loss, 4),
        "repeat_loss": round(last.repeat_loss, 4),
        "torch": str(torch.__version__),
        "python": sys.version.split()[0],
    }
    size = charlm.save_checkpoint(model, cfg, args.out, corpus=corpus, measured=measured)
    probe = charlm.probe_scores(model)
    print(json.dumps(measured | {"bytes": size}))
    print("scores on the probe text (layer x head):")
    for name, grid in probe.items():
        print(f"  {name:>15}: " + " | ".join(" ".join(f"{v:.2f}" for v in row) for row in grid.tolist()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
