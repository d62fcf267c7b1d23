"""tools.gpu_check without a GPU: its --smoke run (every step, Triton's interpreter, tiny shapes) and a
worker that dies mid-job, which must cost that job only; plus the summary it prints last, from known rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.gpu_check import bench_groups, candidate_label, summary_lines
from tools.job_pool import Pool

REPO = Path(__file__).resolve().parents[1]


def _gpu_check(*args: str, tmp_path: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    pytest.importorskip("triton")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}  # --smoke sets it itself
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(env_extra or {})
    paths = ["--out", str(tmp_path), "--results", str(tmp_path), "--logs", str(tmp_path / "logs")]
    cmd = [sys.executable, "-m", "tools.gpu_check", *args, "--smoke", *paths]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _json(tmp_path: Path, step: str) -> dict:
    return json.loads((tmp_path / f"gpu_check_{step}.json").read_text())


def test_smoke_runs_every_step_and_ends_with_the_summary(tmp_path):
    done = _gpu_check(tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for step in ("candidates", "correctness", "bench", "overhead"):
        assert (tmp_path / f"gpu_check_{step}.json").exists(), step
    candidates = _json(tmp_path, "candidates")
    assert candidates["jobs"] and all(job["ok"] for job in candidates["jobs"])
    assert all(job["nan_filled"] and job["checks"] for job in candidates["jobs"])  # outputs NaN-filled, then checked
    assert _json(tmp_path, "correctness")["failures"] == 0
    rows = _json(tmp_path, "bench")["rows"]
    assert {r["method"] for r in rows if r["status"] == "ok"} == {"triton", "sdpa"}
    assert {r["backend"] for r in rows if r["method"] == "sdpa"} == {"default", "cudnn", "flash"}  # refused ones too
    report = (tmp_path / "gpu_attention.md").read_text()
    assert "## Summary" in report and "## Candidates" in report and (tmp_path / "gpu_attention.csv").exists()
    tail = done.stdout.strip().splitlines()
    assert tail[-1].startswith("steps: ") and any(line.startswith("| fwd_bwd |") for line in tail[-12:])


def test_a_worker_that_aborts_fails_its_job_only(tmp_path):
    """os.abort() in the first job (as Triton's compiler does on a failed C++ assertion): that job fails with
    the worker's stderr, a fresh worker runs the next one, and the step still writes its JSON."""
    crash = "float16-d16-full-f0"
    done = _gpu_check(
        "candidates", "--head-dims", "16", "--workers", "1", tmp_path=tmp_path, env_extra={"GPU_CHECK_ABORT_JOB": crash}
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # a failed candidate, not a crash
    jobs = {job["id"]: job for job in _json(tmp_path, "candidates")["jobs"]}
    assert jobs[crash]["ok"] is False and "SIGABRT" in jobs[crash]["status"]
    assert f"--- job {crash}" in jobs[crash]["stderr_tail"]
    assert jobs["float16-d16-causal-f0"]["ok"] is True
    assert "candidates: 1 ok, 1 failed, 0 skipped: float16-d16-full-f0 (worker crashed (SIGABRT))" in done.stdout


_TOY_WORKER = """
import os, sys, time
sys.path.insert(0, os.getcwd())
from tools.job_pool import serve
serve(lambda job: time.sleep(job["sleep"]) or {"ok": True, "pid": os.getpid(), "fatal": job["id"] == "fatal"})
"""


def test_the_pool_replaces_a_worker_after_a_fatal_result_a_timeout_and_skips_past_its_deadline(tmp_path):
    jobs = [dict(id=i, sleep=s) for i, s in (("a", 0), ("fatal", 0), ("b", 0), ("hangs", 30), ("c", 0), ("late", 0))]
    with Pool([sys.executable, "-c", _TOY_WORKER], 1, dict(os.environ), tmp_path, cwd=REPO) as pool:
        start = time.monotonic()
        done = {r["id"]: r for r in pool.map(jobs[:5], deadline=start + 60, job_timeout=3)}
        (late,) = pool.map(jobs[5:], deadline=time.monotonic() - 1)
    assert done["a"]["pid"] == done["fatal"]["pid"] != done["b"]["pid"]  # a fresh worker after a fatal result
    assert done["hangs"]["ok"] is False and "killed after 3 s" in done["hangs"]["status"]
    assert done["c"]["ok"] and done["c"]["pid"] != done["b"]["pid"] and pool.started == 3
    assert late["ok"] is None and late["status"].startswith("skipped")
    assert time.monotonic() - start < 30


def _row(mode, n, method, tflops, candidate=None, backend=None):
    return dict(
        mode=mode,
        dtype="float16",
        d=64,
        causal=True,
        n=n,
        method=method,
        candidate=candidate,
        backend=backend,
        status="ok",
        tflops=tflops,
    )


def test_summary_shows_the_worst_length_against_the_best_sdpa_backend():
    rows = []
    for n, (ours_a, ours_b, default, cudnn) in {2048: (300, 310, 320, 350), 4096: (340, 330, 330, 360)}.items():
        rows += [_row("fwd", n, "triton", ours_a, "f0:128/64/w4/s3"), _row("fwd", n, "triton", ours_b, "f1:x")]
        rows += [_row("fwd", n, "sdpa", default, backend="default"), _row("fwd", n, "sdpa", cudnn, backend="cudnn")]
    rows.append(_row("fwd", 1024, "triton", 1.0, "f0:128/64/w4/s3"))  # below summary_min_n: not in the summary
    groups = {g["n"]: g for g in bench_groups(rows)}
    assert groups[2048]["winner"] == "f1:x" and groups[2048]["best_sdpa"] == "cudnn"
    assert groups[4096]["x_default_sdpa"] == pytest.approx(340 / 330)
    found = {"bench": {"rows": rows, "failed_groups": [], "summary_min_n": 2048}}
    (line,) = [line for line in summary_lines(found) if line.startswith("| fwd |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[4:12] == ["2048", "310.0", "350.0 cudnn", "0.89", "0.97", "0.9", "NO", "f1:x (1/2)"]
    assert "- fwd float16 d64: f1 0.99, f0 0.98" in summary_lines(found)  # (1 + 330/340) / 2, (300/310 + 1) / 2


def test_candidate_labels_name_true_flags_and_skip_false_ones():
    fwd = dict(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3, DESC=True, WARP_SPEC=False)
    assert candidate_label("f", 2, fwd) == "f2:128/64/w4/s3/DESC"
