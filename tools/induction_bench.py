"""What the page "Watch an induction head form" costs: one Train click, and its warm reruns.

    python -m tools.induction_bench click 400 0   # in a fresh process: seconds of each model, peak RSS growth (JSON)
    python -m tools.induction_bench rerun         # warm rerun CPU of the plain and the trained view (JSON lines)
    python -m tools.induction_bench parts 400 0   # where a click's CPU goes: per step and per snapshot (JSON lines)
    python -m tools.induction_bench choices       # alternatives for a training step, interleaved (JSON lines)

Recorded in benchmarks/induction_page.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import time


def _kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(re.search(rf"^{field}:\s+(\d+) kB", status.read(), re.M)[1])


def click(steps: int, seed: int) -> dict:
    """One click as the training line runs it (one torch thread), after the server's warm-up: the untrained view
    and a 40-step click of another seed (torch's first allocations belong to the server, not to the click)."""
    from attn_core.learn import one_thread
    from explorer.tables import induction as tables
    from explorer.ui.heavy import settle_allocator

    settle_allocator()
    pair = tables.pair_config(steps, seed)
    with one_thread():
        tables.untrained_pair(pair)
        tables.train_pair(tables.pair_config(40, seed + 1))
        gc.collect()
        before = _kib("VmRSS")
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")  # the peak-RSS mark back to the RSS now
        start, cpu = time.perf_counter(), time.thread_time()
        result = tables.train_pair(pair)
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu
        peak, after = _kib("VmHWM"), _kib("VmRSS")
    f = tables.facts(result, steps)
    return {
        "steps": steps, "seed": seed, "wall_s": wall, "cpu_s": cpu,
        "wall_s_each": [r.seconds for r in result], "cpu_s_each": [r.cpu_seconds for r in result],
        "peak_mib": (peak - before) / 1024, "kept_mib": (after - before) / 1024, "estimate_mib": tables.cost(pair)[2],
        "phase": tables.phase_changes(result), "induction": [f["ind"], f["one_ind"]],
        "repeated": [f["rep_two"], f["rep_one"]],
    }  # fmt: skip


def _cpu_ms(fn, repeats: int) -> float:
    """Median CPU ms of the calling thread per call of fn, over `repeats` calls after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        times.append(1000 * (time.thread_time() - start))
    return statistics.median(times)


def parts(steps: int, seed: int, repeats: int = 30) -> list[dict]:
    """One click's work split as train_induction_iter does it, per model (one torch thread): a training step's
    batch, forward (with the loss), forward and backward, and Adam step; a snapshot's forward of the held-out batch,
    the probe's forward, head_scores and split_losses; and the click's CPU estimated from them."""
    from attn_core.learn import one_thread
    from explorer.tables import induction as tables

    with one_thread():
        return [_model_parts(cfg, repeats) for cfg in tables.pair_config(steps, seed)]


def _model_parts(cfg, repeats: int) -> dict:
    import torch

    from attn_core.learn import head_scores, repeated_batch, split_losses
    from attn_core.learn.induction import build_model, heldout_batch, next_token_loss, optimizer, probe_sequence

    model, data = build_model(cfg), torch.Generator().manual_seed(cfg.seed + 1)
    opt = optimizer(model, cfg)
    x, held, probe = repeated_batch(cfg, cfg.batch, data), heldout_batch(cfg), probe_sequence(cfg, cfg.seed)

    def loss():
        return next_token_loss(model(x, maps=False)[0], x)

    def backward():
        opt.zero_grad(set_to_none=True)
        loss().backward()

    backward()
    step = {"batch": _cpu_ms(lambda: repeated_batch(cfg, cfg.batch, data), repeats)}
    with torch.no_grad():
        logits, maps = model(held)
        step["forward"] = _cpu_ms(loss, repeats)
        snap = {
            "forward": _cpu_ms(lambda: model(held), repeats),
            "probe": _cpu_ms(lambda: model(probe), repeats),
            "scores": _cpu_ms(lambda: head_scores(maps, held), repeats),
            "losses": _cpu_ms(lambda: split_losses(logits, held), repeats),
        }
    step["forward_backward"] = _cpu_ms(backward, repeats)
    step["adam"] = _cpu_ms(opt.step, repeats)
    n_snap = len(range(0, cfg.steps, cfg.snapshot_every)) + 1  # train_induction_iter's: every k steps and the end
    per_step = step["batch"] + step["forward_backward"] + step["adam"]
    estimate = {"steps": cfg.steps * per_step / 1000, "snapshots": n_snap * sum(snap.values()) / 1000}
    return {"layers": cfg.layers, "steps": cfg.steps, "snapshots": n_snap, "step_ms": step, "snapshot_ms": snap,
            "click_estimate_s": estimate}  # fmt: skip


def choices(rounds: int = 7, steps: int = 30) -> list[dict]:
    """Alternatives for a training step of the recipe (2 layers, one torch thread), each measured in turns with
    the other so that a busy machine slows both alike: [median, min] CPU ms over `rounds` rounds.
    Adam: a whole step with the foreach optimizer against the fused one (kept: induction.optimizer).
    Attention: one layer's forward and backward in torch's fused causal kernel against the explicit
    softmax(q k^T scale + causal -inf bias) v (not kept: no faster at n = 32); `max_diff` is their largest gap."""
    from attn_core.learn import one_thread

    with one_thread():
        return [_adam_choice(rounds, steps), _attention_choice(rounds, steps)]


def _interleaved(fns: dict, rounds: int, calls: int) -> dict:
    """{fn: [median, min]} of the CPU ms per call, the fns taking turns in every round (after a call each to warm
    up); the minimum is the round least slowed by the rest of a shared machine."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.thread_time()
            for _ in range(calls):
                fn()
            times[name].append(1000 * (time.thread_time() - start) / calls)
    return {name: [statistics.median(t), min(t)] for name, t in times.items()}


def _adam_choice(rounds: int, steps: int) -> dict:
    import torch

    from attn_core.learn.induction import InductionConfig, _update, build_model, repeated_batch

    cfg = InductionConfig()
    data = torch.Generator().manual_seed(1)
    batches = [repeated_batch(cfg, cfg.batch, data) for _ in range(steps)]

    def run(kind: str):
        model = build_model(cfg)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, **{kind: True})
        return lambda: [_update(model, opt, x) for x in batches]

    ms = _interleaved({kind: run(kind) for kind in ("foreach", "fused")}, rounds, 1)
    return {"choice": "adam", "step_ms": {kind: [x / steps for x in v] for kind, v in ms.items()}}


def _attention_choice(rounds: int, calls: int) -> dict:
    import torch
    import torch.nn.functional as F

    from attn_core.learn.induction import InductionConfig

    cfg = InductionConfig()
    b, h, n, d_k = cfg.batch, cfg.num_heads, cfg.seq_len, cfg.d_model // cfg.num_heads
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, n, h, d_k, generator=gen).transpose(1, 2).requires_grad_() for _ in range(3))
    bias, scale = torch.full((n, n), float("-inf")).triu(1), d_k**-0.5
    grad = torch.randn(b, h, n, d_k, generator=gen)

    def fused():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)

    def explicit():
        flat = [x.reshape(b * h, n, d_k) for x in (q, k, v)]  # the heads' views are not contiguous: copies
        weights = torch.softmax(torch.baddbmm(bias, flat[0], flat[1].transpose(1, 2), alpha=scale), dim=-1)
        return torch.bmm(weights, flat[2]).view(b, h, n, d_k)

    def step(fn):
        return lambda: torch.autograd.backward(fn(), grad)

    ms = _interleaved({"fused_kernel": step(fused), "explicit": step(explicit)}, rounds, calls)
    with torch.no_grad():
        gap = float((fused() - explicit()).abs().max())
    return {"choice": "attention", "layer_ms": ms, "max_diff": gap}


def _summary(view: str, out: dict) -> dict:
    from tools.page_rerender import _p90

    warm, first = out["warm_cpu"], out["first_cpu"]
    return {
        "view": view, "warm_runs": len(warm), "warm_cpu_median_ms": statistics.median(warm),
        "warm_cpu_p90_ms": _p90(warm), "first_cpu_median_ms": statistics.median(first),
        "warm_wall_median_ms": statistics.median(out["warm_wall"]),
    }  # fmt: skip


def trained_reruns() -> dict:
    """The default click of seed 0 on the shelf, then each control of the trained view set, set back, set again.
    (tools.page_rerender's loop cannot: the snapshot slider it lists is gone once it has changed the steps.)"""
    from streamlit.testing.v1 import AppTest

    from attn_core.learn import one_thread
    from explorer.tables import induction as tables
    from explorer.ui import training
    from tools.page_rerender import ROOT, RUN_CPU

    with one_thread():
        pair = tables.train_pair(tables.pair_config(tables.DEFAULT_STEPS, 0))
        training.shelve(("induction", tables.DEFAULT_STEPS, 0), pair)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page("views/induction.py")
    at.run()
    out = {"first_cpu": [], "first_wall": [], "warm_cpu": [], "warm_wall": []}

    def run(kind: str) -> None:
        start = time.perf_counter()
        at.run()
        if at.exception:
            raise SystemExit(at.exception[0].message)
        out[f"{kind}_cpu"].append(at.session_state[RUN_CPU])
        out[f"{kind}_wall"].append(1000 * (time.perf_counter() - start))

    steps = [int(o) for o in at.select_slider(key="ind_snapshot").options]
    changes = [("select_slider", "ind_snapshot", steps[-1], s) for s in (steps[5], steps[10], steps[20])]
    changes += [("button_group", "ind_map", "two:1", m) for m in ("two:0", "one:0")]
    changes += [("multiselect", "ind_knockout", [], h) for h in (["L0H0"], ["L0H0", "L1H3"])]
    changes += [("radio", "ind_mode", "zero", "mean")]
    for kind, key, back, value in changes:
        for state, what in ((value, "first"), (back, "warm"), (value, "warm")):
            getattr(at, kind)(key=key).set_value(state)
            run(what)
        getattr(at, kind)(key=key).set_value(back)
        run("warm")
    return _summary(f"trained ({tables.DEFAULT_STEPS} steps): snapshot, maps, knockout, mode", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("click")
    one.add_argument("steps", type=int)
    one.add_argument("seed", type=int)
    sub.add_parser("rerun")
    split = sub.add_parser("parts")
    split.add_argument("steps", type=int)
    split.add_argument("seed", type=int)
    sub.add_parser("choices")
    args = parser.parse_args()
    if args.what == "click":
        print(json.dumps(click(args.steps, args.seed)))
        return
    if args.what in ("parts", "choices"):
        for row in parts(args.steps, args.seed) if args.what == "parts" else choices():
            print(json.dumps(row))
        return
    from tools.page_rerender import measure

    print(json.dumps(_summary("untrained (plain view)", measure("views/induction.py", 2, 0))), flush=True)
    print(json.dumps(trained_reruns()))


if __name__ == "__main__":
    main()
