"""Time tiled_attention's tile sizes against SDPA and naive attention, interleaved: the data behind
attn_core.tiled.default_blocks.

    python -m tools.tile_sweep [--n 4096] [--blocks 128x512 256x512 ...] [--rounds 7]

On a shared machine a slow moment hits whatever runs then, so every round times each candidate once, in a
fresh random order, and the figures are medians over rounds, with each candidate's time divided by SDPA's of
the same round (the ratio is steadier than either time). With two cores, one busy core stalls every
parallel op at its barrier: a round during which other processes used more than 5 % of the machine
(/proc/stat minus this process's CPU time) is thrown away and run again, up to 4 x --rounds rounds.
Inputs: (B, H, n, d) fp32 from a fixed seed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import time

import torch
import torch.nn.functional as F

from attn_core.budget import memory_budget
from attn_core.naive import naive_attention
from attn_core.tiled import default_blocks, tiled_attention

DEFAULT_BLOCKS = ("64x64", "128x512", "256x256", "256x512", "512x512", "256x1024", "512x1024")


def _parse_block(text: str) -> tuple[int, int]:
    bq, _, bk = text.partition("x")
    return int(bq), int(bk)


def candidates(q, k, v, blocks, causal: bool, with_naive: bool) -> dict:
    calls = {"sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)}
    calls["tiled default"] = lambda: tiled_attention(q, k, v, causal=causal)
    for bq, bk in blocks:
        calls[f"tiled {bq}x{bk}"] = lambda bq=bq, bk=bk: tiled_attention(q, k, v, causal=causal, block_q=bq, block_k=bk)
    if with_naive and not causal:
        calls["naive"] = lambda: _unbudgeted(naive_attention, q, k, v)
    return calls


def _unbudgeted(fn, *args):
    with memory_budget(1e9):  # a measurement tool: naive may hold its n x n scores here
        return fn(*args)


def _ticks() -> tuple[int, int]:
    """(all cores' ticks, their idle ticks) so far, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    return sum(values), values[3] + values[4]  # idle + iowait


def _own_ticks() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * os.sysconf("SC_CLK_TCK")


def foreign_share(fn) -> float:
    """Run fn(); return the share of all cores' time that other processes used meanwhile (0 where unknown)."""
    try:
        (t0, i0), own0 = _ticks(), _own_ticks()
        fn()
        (t1, i1), own1 = _ticks(), _own_ticks()
    except OSError:
        fn()
        return 0.0
    return max(0.0, (t1 - t0) - (i1 - i0) - (own1 - own0)) / max(t1 - t0, 1)


def _one_round(calls: dict, order: list[str], into: dict) -> None:
    for name in order:
        t0 = time.perf_counter()
        calls[name]()
        into[name] = (time.perf_counter() - t0) * 1e3


def sweep(calls: dict, rounds: int, seed: int = 0, quiet: float = 0.05, max_rounds: int = 0) -> tuple[dict, int]:
    """(name -> [(ms, ms / SDPA's ms in the same round)] over `rounds` quiet rounds, rounds thrown away).

    A round is quiet when other processes used at most `quiet` of the machine while it ran; at most
    max_rounds (default 4 x rounds) are tried, so on a busy machine fewer than `rounds` may come back.
    After one untimed warm-up call each."""
    order, rng, thrown = list(calls), random.Random(seed), 0
    times = {name: [] for name in calls}
    with torch.no_grad():
        for fn in calls.values():
            fn()
        for _ in range(max_rounds or 4 * rounds):
            if len(times["sdpa"]) == rounds:
                break
            rng.shuffle(order)
            this = {}
            if foreign_share(lambda this=this: _one_round(calls, order, this)) > quiet:
                thrown += 1
                continue
            for name, ms in this.items():
                times[name].append((ms, ms / this["sdpa"]))
    return times, thrown


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[4096])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--blocks", nargs="+", default=list(DEFAULT_BLOCKS), help="block_q x block_k, e.g. 256x512")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-naive", action="store_true", help="leave naive attention out (it holds n x n scores)")
    args = p.parse_args()
    blocks = [_parse_block(b) for b in args.blocks]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; B={args.batch} H={args.heads} d={args.d}")
    for n in args.n:
        gen = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(args.batch, args.heads, n, args.d, generator=gen) for _ in range(3))
        calls = candidates(q, k, v, blocks, args.causal, not args.no_naive)
        times, thrown = sweep(calls, args.rounds)
        print(
            f"\nn={n} causal={args.causal} default blocks {default_blocks(n, n, causal=args.causal)}; medians over "
            f"{len(times['sdpa'])} quiet rounds ({thrown} rounds thrown away: other processes busy)"
        )
        print("| candidate | min ms | median ms | median / SDPA (same round) |\n|---|---:|---:|---:|")
        if not times["sdpa"]:
            print("no quiet round: nothing to report")
            continue
        for name, rows in sorted(times.items(), key=lambda kv: statistics.median(r for _, r in kv[1])):
            ms = [t for t, _ in rows]
            ratio = statistics.median(r for _, r in rows)
            print(f"| {name} | {min(ms):.1f} | {statistics.median(ms):.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
