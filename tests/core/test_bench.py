"""The benchmark harness: rows, statuses, real CPU memory measurements, the budget, the CLI.

Memory thresholds come from theory with margins (the measurements are real, not formulas);
no test looks at wall-clock time beyond "positive" (a stopped run is checked by counting its calls).
"""

import csv
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import attn_core.bench as bench
from attn_core.bench import (
    ROW_FIELDS,
    BenchConfig,
    LiveTensorBytes,
    attention_flops,
    estimated_bytes,
    hardware_info,
    markdown_table,
    run_benchmark,
)
from attn_core.tiled import tiled_working_bytes

REPO = Path(__file__).resolve().parents[2]
CPU_METHODS = ("naive", "naive_masked", "tiled", "sdpa")


def small(**overrides) -> BenchConfig:
    """A config that runs in well under a second."""
    kwargs = dict(ns=(64, 128), d=16, heads=2, repeats=2, warmup=1, block_q=32, block_k=32)
    return BenchConfig(**{**kwargs, **overrides})


@pytest.fixture(scope="module")
def small_rows():
    return run_benchmark(small())


def test_one_ok_row_per_method_and_n(small_rows):
    assert [(r["n"], r["method"]) for r in small_rows] == [(n, m) for n in (64, 128) for m in CPU_METHODS]
    for r in small_rows:
        assert set(r) == set(ROW_FIELDS)
        assert r["status"] == "ok", r
        assert 0 < r["time_ms_min"] <= r["time_ms_p10"] <= r["time_ms_median"] <= r["time_ms_p90"]
        assert r["tflops"] > 0
        assert r["peak_mem_bytes"] > 0
        assert r["peak_mem_total_bytes"] == r["peak_mem_bytes"] + r["input_bytes"]
        assert r["theory_scores_bytes"] == 2 * r["n"] ** 2 * 4


def test_causal_field_says_what_each_row_computed():
    rows = run_benchmark(small(ns=(64,), causal=True, repeats=1))
    assert {r["method"]: r["causal"] for r in rows} == {
        "naive": False,
        "naive_masked": True,
        "tiled": True,
        "sdpa": True,
    }
    tiled = next(r for r in rows if r["method"] == "tiled")
    assert (tiled["block_q"], tiled["block_k"]) == (32, 32)
    # the mask is an input of naive_masked: q, k, v (3 x 2*64*16*4 bytes) plus 64*64 bools
    masked = next(r for r in rows if r["method"] == "naive_masked")
    assert masked["input_bytes"] == 3 * 2 * 64 * 16 * 4 + 64 * 64


def test_progress_callback_counts_every_entry():
    calls = []
    run_benchmark(small(ns=(64,), repeats=1), progress=lambda *a: calls.append(a))
    assert [done for done, _, _ in calls] == [0, 1, 2, 3, 4]
    assert all(total == 4 for _, total, _ in calls)
    assert calls[0][2] == "naive n=64" and calls[-1][2] == "done"


def test_cpu_peak_memory_naive_quadratic_tiled_small():
    """Naive holds 3 score copies (B*H*n*n*4 bytes each); tiled holds (n, d) arrays and tiles."""
    b, h, d, blk = 1, 2, 32, 64
    rows = run_benchmark(
        BenchConfig(
            ns=(256, 512),
            d=d,
            heads=h,
            batch=b,
            methods=("naive", "tiled"),
            repeats=1,
            warmup=0,
            block_q=blk,
            block_k=blk,
        )
    )
    peak = {(r["method"], r["n"]): r["peak_mem_bytes"] for r in rows}
    scores = {n: b * h * n * n * 4 for n in (256, 512)}
    for n in (256, 512):
        assert 3 * scores[n] <= peak["naive", n] <= 3.1 * scores[n]  # 3 copies and the (n, d) output
    assert peak["naive", 512] > 3.9 * peak["naive", 256]  # 4x in theory
    # tiled: scaled q, output blocks, their concatenation (b*h*n*d*4 each) and a few tiles
    n = 512
    assert b * h * n * d * 4 <= peak["tiled", n] <= tiled_working_bytes(b * h, n, n, d, d, torch.float32, blk, blk)
    assert peak["tiled", n] < peak["naive", n] / 4


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_budget_estimate_bounds_what_each_entry_measured(dtype, causal):
    config = BenchConfig(
        ns=(48, 160), d=24, heads=3, batch=2, dtype=dtype, causal=causal, repeats=1, warmup=0, block_q=64, block_k=32
    )
    for r in run_benchmark(config):
        assert r["status"] == "ok", r
        assert r["peak_mem_total_bytes"] <= estimated_bytes(r["method"], config, r["n"]), r


def test_live_tensor_bytes_counts_new_storage_not_views_or_in_place():
    x = torch.ones(1000)  # 4000 bytes, allocated before: never counted
    with LiveTensorBytes() as counter:
        y = x * 2  # new: 4000
        view = y[10:].view(-1, 10)  # a view: nothing
        y.add_(1).mul_(3)  # in place: nothing
        torch.mul(x, 2, out=y)  # out=: nothing
        z = torch.cat([y, x])  # new: 8000, live 12000
        assert (counter.live, counter.peak) == (12000, 12000)
        del y  # the view still holds y's storage
        assert counter.live == 12000
        del view
        assert counter.live == 8000
        del z
        w = x.exp()  # 4000 again: the peak stays
    assert (counter.live, counter.peak) == (4000, 12000)
    del w
    assert counter.live == 0


def test_live_tensor_bytes_sees_every_tile_of_a_loop_without_growing():
    q = torch.randn(64, 16, generator=torch.Generator().manual_seed(0))
    with LiveTensorBytes() as counter:
        for _ in range(1000):
            s = q @ q.T  # 16 KiB, the previous one freed once s is rebound
        del s
    assert counter.peak == 2 * 64 * 64 * 4  # the new tile exists before the old one is released
    assert counter.live == 0 and not counter._refs  # one reference per live storage, none left


def test_the_memory_measurement_costs_a_small_fraction_of_what_it_measures():
    """Peak RSS of a process running one tiled entry with small tiles (4096 tile steps, about 100 000 ops per
    call) grows by the algorithm's measured peak plus little. torch.profiler's memory events, used before,
    added about 700 MB to this entry (3 GB at n = 2048)."""
    script = (
        "import re, torch\n"
        "from attn_core.bench import BenchConfig, run_benchmark\n"
        "torch.set_num_threads(1)  # a shared machine's busy cores slow down multi-threaded small ops most\n"
        "def kib(field):\n"
        "    return int(re.search(field + r':\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "config = BenchConfig(ns=(64, 1024), d=32, heads=2, methods=('tiled',), repeats=1, warmup=0, block_q=16,"
        " block_k=16)\n"
        "run_benchmark(BenchConfig(ns=(64,), methods=('tiled',), repeats=1))  # first-use allocations settle\n"
        "before = kib('VmRSS')\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # reset the high-water mark to the current RSS\n"
        "row = run_benchmark(config)[-1]\n"
        "print(row['status'], row['peak_mem_total_bytes'], before * 1024, kib('VmHWM') * 1024)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", script]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    status, algorithm, before, high = done.stdout.split()
    assert status == "ok"
    algorithm, growth = int(algorithm), int(high) - int(before)
    # inputs (768 KiB), the scaled q, the output blocks and their concatenation, tiles: what the row says
    assert 1 * 2**20 < algorithm < 4 * 2**20
    assert growth <= 1.5 * algorithm + 8 * 2**20, (growth, algorithm)


def test_budget_skips_naive_and_runs_the_rest():
    # naive at n=128, H=2 needs 3 * 2*128*128*4 B = 384 KiB; naive_masked 512 KiB
    rows = run_benchmark(small(ns=(128,), repeats=1, memory_budget_mb=0.25))
    status = {r["method"]: r["status"] for r in rows}
    assert status["naive"].startswith("skipped: naive holds ~3 score copies")
    assert status["naive_masked"].startswith("skipped:")
    assert status["tiled"] == status["sdpa"] == "ok"
    skipped = next(r for r in rows if r["method"] == "naive")
    assert skipped["time_ms_median"] is None and skipped["peak_mem_bytes"] is None


def test_an_entry_that_raises_becomes_an_error_row(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise RuntimeError("DefaultCPUAllocator: not enough memory\nsecond line")

    monkeypatch.setattr(bench, "tiled_attention", out_of_memory)
    rows = run_benchmark(small(ns=(64,), repeats=1))
    status = {r["method"]: r["status"] for r in rows}
    assert status["tiled"] == "error: RuntimeError: DefaultCPUAllocator: not enough memory"
    assert status["naive"] == status["sdpa"] == "ok"


def test_triton_on_cpu_is_skipped_not_imported():
    rows = run_benchmark(small(ns=(64,), methods=("triton", "sdpa"), repeats=1))
    assert rows[0]["status"] == "skipped: triton needs a CUDA device"
    assert rows[1]["status"] == "ok"


def test_flops_halved_when_causal():
    assert attention_flops(1, 1, 4, 2, False) == 4 * 16 * 2
    assert attention_flops(2, 3, 4, 2, True) == 2 * 3 * 4 * 16 * 2 // 2


def test_entries_over_the_budget_with_their_inputs_are_skipped_and_inputs_not_made(monkeypatch):
    # q, k, v at n = 4096, H = 2, d = 16: 1.5 MiB, over a 1 MiB budget for every method
    made, make = [], bench._inputs
    monkeypatch.setattr(bench, "_inputs", lambda config, n: made.append(n) or make(config, n))
    rows = run_benchmark(small(ns=(4096,), repeats=1, memory_budget_mb=1.0))
    assert made == []
    assert all(r["status"].startswith("skipped: ") and "> memory budget 1 MiB" in r["status"] for r in rows)
    assert all(r["input_bytes"] == 3 * 2 * 4096 * 16 * 4 for r in rows)


class Tight(bench.Host):
    """A host with 2 MiB left that records when it was asked (by how many n's inputs were made then) and what
    happened between and around the entries."""

    def __init__(self, made: list):
        self.made, self.asked, self.between, self.turns = made, [], 0, 0

    def room(self):
        self.asked.append(len(self.made))
        return 2 * 2**20

    def between_entries(self):
        self.between += 1

    def turn(self):
        self.turns += 1
        return super().turn()


def test_entries_that_do_not_fit_in_the_processs_headroom_are_skipped_and_inputs_not_made(monkeypatch):
    """host.room() is asked once per n, before its inputs: with 2 MiB left, n = 64 fits for every method, n = 1024
    (inputs 0.375 MiB, naive's three score copies 24 MiB) for tiled and SDPA only, n = 4096 for none."""
    made, make = [], bench._inputs
    monkeypatch.setattr(bench, "_inputs", lambda config, n: made.append(n) or make(config, n))
    host = Tight(made)
    rows = run_benchmark(small(ns=(64, 1024, 4096), repeats=1), host=host)
    asked = host.asked
    status = {(r["method"], r["n"]): r["status"] for r in rows}
    assert asked == [0, 1, 2] and made == [64, 1024]
    assert all(status[(m, 64)] == "ok" for m in ("naive", "naive_masked", "tiled", "sdpa"))
    assert status[("tiled", 1024)] == status[("sdpa", 1024)] == "ok"
    for key in [("naive", 1024), ("naive_masked", 1024)] + [(m, 4096) for m in ("naive", "tiled", "sdpa")]:
        assert status[key].startswith(bench.HEADROOM_STATUS) and "~2 MiB left" in status[key]
    assert run_benchmark(small(ns=(64,), repeats=1), host=bench.Host())[0]["status"] == "ok"  # room None: no bound
    assert host.between == len(rows) and host.turns == 1  # after every entry; one turn for the whole run


def test_the_library_keeps_no_server_policy_of_its_own(monkeypatch):
    """Without a host the run collects no garbage, trims no heap and takes no process-wide lock (a server's line
    does, explorer.ui.heavy.ServerHost); `hosting` lends a host to every run inside it, host= overrides it."""
    collected = []
    monkeypatch.setattr("gc.collect", lambda *a: collected.append(a) or 0)
    assert not hasattr(bench, "_ONE_AT_A_TIME") and not hasattr(bench, "_release")
    rows = run_benchmark(small(ns=(64,), repeats=1))
    assert collected == [] and all(r["status"] == "ok" for r in rows)
    outer, inner = Tight([]), Tight([])
    with bench.hosting(outer):
        run_benchmark(small(ns=(64,), repeats=1))
        run_benchmark(small(ns=(64,), repeats=1), host=inner)
    run_benchmark(small(ns=(64,), repeats=1))
    assert (outer.turns, len(outer.asked), inner.turns) == (1, 1, 1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("device", "tpu"),
        ("ns", ()),
        ("ns", (64, 0)),
        ("ns", "64"),
        ("d", 0),
        ("heads", -1),
        ("batch", 1.5),
        ("dtype", "float8"),
        ("causal", "yes"),
        ("methods", ("naive", "fast")),
        ("methods", ()),
        ("repeats", 0),
        ("warmup", -1),
        ("memory_budget_mb", 0),
        ("block_q", 0),
        ("block_k", True),
        ("seed", -1),
        ("mode", "bwd"),
        ("tokens", 0),
    ],
)
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        BenchConfig(**{field: value})


def test_config_defaults_and_normalisation():
    config = BenchConfig(ns=[64], methods=["sdpa"])
    assert config.ns == (64,) and config.methods == ("sdpa",)
    assert BenchConfig().methods == CPU_METHODS  # no triton on the CPU


def test_hardware_info_and_markdown(small_rows):
    info = hardware_info()
    for key in ("device_name", "cpu_count", "torch", "python", "platform", "cuda_device_name"):
        assert key in info
    table = markdown_table(small_rows).splitlines()
    assert len(table) == 2 + len(small_rows)
    assert table[2].startswith("| naive | 64 | 1 | False | fwd |")


def test_cli_writes_csv_and_json(tmp_path):
    out_csv, out_json = tmp_path / "tmp.csv", tmp_path / "tmp.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "attn_core.bench",
        "--n",
        "64",
        "128",
        "--heads",
        "2",
        "--d",
        "16",
        "--repeats",
        "1",
        "--csv",
        str(out_csv),
        "--json",
        str(out_json),
    ]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "8/8 done" in done.stderr  # the progress bar
    lines = out_csv.read_text().splitlines()
    header = [line for line in lines if line.startswith("# ")]
    assert any(line.startswith("# torch: ") for line in header)
    assert any(line.startswith("# command: python -m attn_core.bench --n 64 128") for line in header)
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert tuple(rows[0]) == ROW_FIELDS
    assert [r["method"] for r in rows] == list(CPU_METHODS) * 2
    assert all(r["status"] == "ok" for r in rows)
    assert len(json.loads(out_json.read_text())["rows"]) == 8


def test_cli_rejects_bad_config():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "attn_core.bench", "--n", "0"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "ns must be an integer >= 1" in done.stderr


def test_forward_backward_mode_counts_three_and_a_half_forwards():
    rows = run_benchmark(small(ns=(64,), repeats=1, mode="fwd_bwd", causal=True))
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert {r["mode"] for r in rows} == {"fwd_bwd"}
    for r in rows:
        flops = attention_flops(r["batch"], r["heads"], 64, 16, r["causal"], "fwd_bwd")
        assert flops == 7 * attention_flops(r["batch"], r["heads"], 64, 16, r["causal"]) // 2
        assert r["tflops"] == pytest.approx(flops / (r["time_ms_median"] * 1e-3) / 1e12)
    # the fixed output gradient (q's shape and dtype) is an input of every fwd_bwd entry
    assert rows[0]["input_bytes"] == 4 * 2 * 64 * 16 * 4


def test_forward_backward_call_returns_the_gradients():
    config = small(mode="fwd_bwd")
    q, k, v = bench._inputs(config, 32)
    call, extra = bench._make_call("tiled", q, k, v, config)
    with torch.no_grad():  # as the harness times it
        dq, dk, dv = call()
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert extra == q.numel() * q.element_size()
    assert not q.requires_grad  # the harness's inputs are left alone


def test_tokens_fix_batch_times_n_and_rows_compare_with_sdpa():
    rows = run_benchmark(small(ns=(32, 64), tokens=128, repeats=1, methods=("tiled", "sdpa")))
    assert [(r["n"], r["batch"]) for r in rows] == [(32, 4), (32, 4), (64, 2), (64, 2)]
    for r in rows:
        assert r["theory_scores_bytes"] == r["batch"] * 2 * r["n"] ** 2 * 4
        sdpa = next(s for s in rows if s["method"] == "sdpa" and s["n"] == r["n"])
        assert r["tflops_vs_sdpa"] == pytest.approx(r["tflops"] / sdpa["tflops"])
    assert BenchConfig(tokens=100).at_length(1000).batch == 1  # never below one sequence


def test_cli_fa2_convention(tmp_path):
    out_json = tmp_path / "fa2.json"
    bench.main(["--fa2", "--d", "512", "--n", "16", "32", "--methods", "sdpa", "--repeats", "1", "--no-progress",
                "--mode", "fwd_bwd", "--json", str(out_json)])  # fmt: skip
    data = json.loads(out_json.read_text())
    assert [(r["n"], r["batch"], r["heads"], r["mode"]) for r in data["rows"]] == [
        (16, 1024, 4, "fwd_bwd"),
        (32, 512, 4, "fwd_bwd"),
    ]
    assert json.loads(data["header"]["config"])["tokens"] == 16384


def test_cli_fa2_needs_a_head_dim_dividing_2048(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--fa2", "--d", "48"])
    assert "divides 2048" in capsys.readouterr().err


def test_budget_counts_the_backwards_score_copies():
    # fwd_bwd: naive holds ~6 score matrices, naive_masked ~7 (measured); 2*128*128*4 B = 128 KiB each. The budget
    # sits between the two entries' whole needs (inputs and working memory), which differ by one score matrix + mask.
    config = small(ns=(128,), repeats=1, mode="fwd_bwd")
    naive_need, masked_need = (bench.estimated_bytes(m, config, 128) for m in ("naive", "naive_masked"))
    assert masked_need - naive_need == 2 * 128 * 128 * 4 + 128 * 128  # one more score matrix and the bool mask
    assert naive_need - bench.estimated_bytes("naive", small(ns=(128,), repeats=1), 128) == 3 * 2 * 128 * 128 * 4
    rows = run_benchmark(dataclasses.replace(config, memory_budget_mb=(naive_need + masked_need) / 2 / 2**20))
    status = {r["method"]: r["status"] for r in rows}
    assert status["naive"] == "ok"
    assert status["naive_masked"].startswith("skipped: naive_masked holds ~7 score copies")


class _Stopped(Exception):
    pass


def test_stop_is_asked_before_every_call_and_inside_the_counting_call():
    """warm-up 1 + repeats 2 + 1 before the counting call: the 5th stop() is asked at an op of the counting call."""
    asked = []

    def stop():
        asked.append(len(asked))
        if len(asked) == 5:
            raise _Stopped

    config = BenchConfig(ns=(64,), d=16, heads=1, methods=("naive",), repeats=2, warmup=1)
    with pytest.raises(_Stopped):
        run_benchmark(config, stop=stop)
    assert len(asked) == 5
    assert len(run_benchmark(config, stop=lambda: None)) == 1  # a stop() that never raises changes nothing


def test_a_stopped_run_ends_within_one_call_not_one_entry(monkeypatch):
    """An entry of 50 calls asked to stop during its third: no attention call starts after the request (stop() is
    asked before each), long before the entry would have ended. Counted, not timed."""
    wanted, calls = [], []
    make = bench._make_call

    def counted(method, q, k, v, config):
        fn, extra = make(method, q, k, v, config)

        def call():
            calls.append(bool(wanted))
            if len(calls) == 3:
                wanted.append(True)  # the request arrives while the third call runs
            return fn()

        return call, extra

    def stop():
        if wanted:
            raise _Stopped

    monkeypatch.setattr(bench, "_make_call", counted)
    config = BenchConfig(ns=(64,), d=16, heads=1, methods=("naive",), repeats=50, warmup=1)
    with pytest.raises(_Stopped):
        run_benchmark(config, stop=stop)
    assert len(calls) == 3 and not any(calls)  # none after the request; the entry had 52 to make


def test_every_status_the_harness_writes_reads_back_into_its_kind_and_numbers():
    """status_parts is what a page translates: each status form the harness writes must read back, numbers and all."""
    tight = small(ns=(64, 1024), methods=("naive", "tiled"), memory_budget_mb=1.0)
    over = bench._entry(tight.at_length(1024), "naive", 1024, None)
    need = f"{estimated_bytes('naive', tight.at_length(1024), 1024) / 2**20:.0f}"
    assert bench.status_parts(over["status"]) == (
        "budget",
        {"method": "naive", "copies": "3", "need": need, "budget": "1"},
    )
    sdpa = bench._entry(small(memory_budget_mb=1.0).at_length(4096), "sdpa", 4096, None)
    assert bench.status_parts(sdpa["status"])[1]["copies"] is None
    full = bench._entry(small().at_length(128), "tiled", 128, None, room=0)
    kind, fields = bench.status_parts(full["status"])
    assert kind == "headroom" and fields["room"] == "0" and int(fields["need"]) >= 0
    late = bench._out_of_time(small(time_limit_s=2.5), "naive", 128, 3.25)
    assert bench.status_parts(late["status"]) == ("time_limit", {"limit": "2.5", "spent": "3.2"})
    assert bench.status_parts(run_benchmark(small(ns=(64,)))[0]["status"]) == ("ok", {})
    assert bench.status_parts("error: RuntimeError: out of memory") == (
        "error",
        {"what": "RuntimeError: out of memory"},
    )
    assert bench.status_parts("something older") == ("other", {"what": "something older"})
