"""flash_attention compiled on a CUDA GPU against an fp32 reference, forward and backward (skipped without CUDA).

FlashAttention's criterion: in fp16/bf16, each of out, dq, dk, dv may err at most twice as much as
PyTorch's own attention in that dtype (SDPA), plus one rounding of the result. The cases (odd and
even lengths, head dims 16..128, causal or not, cross attention) are tools.gpu_check's sweep.

Triton picks interpreter or compiler when it is first imported, and test_flash_triton.py imports it
under TRITON_INTERPRET=1: so the compiled kernels run in one fresh subprocess (tools.gpu_check
correctness, launch settings untuned), and each test below reads its case's result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tools.gpu_check import case_id, correctness_cases

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    pytest.importorskip("triton")
    out = tmp_path_factory.mktemp("gpu_check")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env["ATTN_CORE_FLASH_AUTOTUNE"] = "0"  # the first candidate: the per-candidate sweep is gpu_check's job
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "tools.gpu_check", "correctness", "--quick", "--out", str(out)]
    done = subprocess.run([*cmd, "--json", str(out / "results.json")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-4000:]  # 1: some case failed, reported per test below
    return {r["id"]: r for r in json.loads((out / "results.json").read_text())["cases"]}


@pytest.mark.parametrize("case", correctness_cases(), ids=case_id)
def test_error_at_most_twice_sdpas(results, case):
    got = results[case_id(case)]
    for name in ("out", "dq", "dk", "dv"):
        assert got[name]["ok"], (name, got[name])
