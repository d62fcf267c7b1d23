"""Run JSON jobs in worker subprocesses that may crash, hang or poison their GPU context.

A job is a JSON-able dict with an "id"; a worker process reads one job a line on stdin and writes
one result (a dict) a line on stdout. Triton's compiler can abort the whole process (a C++
assertion in MLIR, a segfault) and a bad kernel can leave the CUDA context unusable, so each
worker is observed from a thread of this process: a worker that dies or overruns its job's time
turns that job into a failed result with the tail of the worker's stderr, and the next job gets a
fresh worker. Workers live as long as the pool, so Python, torch and CUDA start once per slot.

    with Pool([sys.executable, "-m", "tools.gpu_check", "--worker"], workers=16, env=env, logs=dir) as pool:
        results = pool.map(jobs, deadline=time.monotonic() + 120)

The worker side is `serve(handler)`: it keeps stdout for results only (everything else printed,
by Python or by a compiler writing to file descriptor 1, goes to stderr, the worker's log).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

STDERR_TAIL = 3000  # characters of a dead worker's stderr kept in its job's result


def serve(handler: Callable[[dict], dict]) -> int:
    """The worker's loop: result = handler(job) for each job line; stop after a result marked "fatal"."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # ptxas, Triton and print() write to fd 1: route them to the log, keep stdout for replies
    sys.stdout = sys.stderr
    for line in sys.stdin:
        job = json.loads(line)
        print(f"--- job {job['id']}", file=sys.stderr, flush=True)  # where each job's log begins
        result = handler(job)
        replies.write(json.dumps(result, default=str) + "\n")
        if result.get("fatal"):  # e.g. an illegal memory access: the CUDA context is gone, start afresh
            return 3
    return 0


class _Worker:
    """One worker process, its stderr appended to `log`."""

    def __init__(self, command: list[str], env: dict, cwd: Path, log: Path):
        self.log = log
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                bufsize=1,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, job: dict, timeout: float) -> dict:
        """The job's result, or a failed one saying how the worker died (it is then not alive)."""
        offset = self.log.stat().st_size
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            self.proc.kill()

        timer = threading.Timer(max(timeout, 0.1), kill)
        timer.start()
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        finally:
            timer.cancel()
        if line:
            return json.loads(line)
        code = self.proc.wait()
        how = f"killed after {timeout:.0f} s (its time limit or its step's end)" if timed_out.is_set() else _death(code)
        return {"id": job["id"], "ok": False, "status": f"worker {how}", "stderr_tail": self._tail(offset)}

    def _tail(self, offset: int) -> str:
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")[-STDERR_TAIL:]

    def stop(self) -> None:
        """Ask the worker to end: its loop ends at the end of its input."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def wait(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _death(code: int) -> str:
    if code < 0:
        try:
            return f"crashed ({signal.Signals(-code).name})"
        except ValueError:
            return f"crashed (signal {-code})"
    return f"exited with code {code}"


class Pool:
    """`workers` slots, each running jobs one at a time in its own (restarted when dead) worker process."""

    def __init__(self, command: list[str], workers: int, env: dict, logs: Path, cwd: Path | None = None):
        self.command, self.env, self.logs, self.cwd = command, env, Path(logs), cwd or Path.cwd()
        self.logs.mkdir(parents=True, exist_ok=True)
        self.slots: list[_Worker | None] = [None] * max(1, workers)
        self.started = 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def map(
        self,
        jobs: list[dict],
        deadline: float,
        hard_end: float | None = None,
        job_timeout: float = 600.0,
        on_result: Callable[[dict, dict], None] | None = None,
    ) -> list[dict]:
        """One result per job, in the jobs' order. No job starts after `deadline` (time.monotonic());
        those are returned with status "skipped: ...". A job still running at `hard_end` (default:
        deadline) or after job_timeout seconds is killed with its worker. on_result(job, result) is
        called as each finishes, one call at a time (a caller can save what it has so far)."""
        hard_end = deadline if hard_end is None else hard_end
        queue, lock, results = deque(jobs), threading.Lock(), {}

        def slot(i: int) -> None:
            while True:
                with lock:
                    if not queue or time.monotonic() > deadline:
                        return
                    job = queue.popleft()
                result = self._run(i, job, min(job_timeout, hard_end - time.monotonic()))
                with lock:
                    results[job["id"]] = result
                    if on_result is not None:
                        on_result(job, result)

        threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(len(self.slots))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        skipped = {"ok": None, "status": "skipped: past the step's deadline"}
        return [results.get(job["id"]) or {"id": job["id"], **skipped} for job in jobs]

    def _run(self, i: int, job: dict, timeout: float) -> dict:
        worker = self.slots[i]
        if worker is None or not worker.alive():
            worker = self.slots[i] = _Worker(self.command, self.env, self.cwd, self.logs / f"worker{i}.log")
            self.started += 1
        start = time.monotonic()
        result = worker.run(job, timeout)
        if result.get("fatal"):  # the worker ends after this reply: let it, so the next job gets a fresh one
            worker.wait(30.0)
        result.setdefault("id", job["id"])
        result.setdefault("wall_s", round(time.monotonic() - start, 2))
        return result

    def close(self, timeout: float = 10.0) -> None:
        """End every worker: all asked at once (each tears down its CUDA context), killed after `timeout`."""
        workers = [w for w in self.slots if w is not None]
        for worker in workers:
            worker.stop()
        end = time.monotonic() + timeout
        for worker in workers:
            worker.wait(end - time.monotonic())
        self.slots = [None] * len(self.slots)
