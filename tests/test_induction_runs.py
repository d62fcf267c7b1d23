"""tools.induction_runs writes benchmarks/induction.md: its report must keep working as attn_core.learn changes."""

import pytest
import torch

import tools.induction_runs as runs
from attn_core.learn import InductionConfig

TINY = dict(d_model=16, num_heads=2, vocab=12, seq_len=16, min_segment=2, max_segment=6, batch=4, steps=6)


@pytest.fixture
def tiny(monkeypatch):
    """The tool trains InductionConfig's defaults; a tiny config keeps this test to a second."""
    monkeypatch.setattr(runs, "InductionConfig", lambda: InductionConfig(**TINY, snapshot_every=2))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_report_has_a_row_per_run_the_threshold_facts_and_seed_0s_grids(tiny, tmp_path):
    out = tmp_path / "induction.md"
    assert runs.main(["--seeds", "2", "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.splitlines() if "| zero: prev head" in line]
    assert [r.split("|")[1:3] for r in rows] == [[" 2 ", " 0 "], [" 2 ", " 1 "], [" 1 ", " 0 "], [" 1 ", " 1 "]]
    assert "shared by 8 engineers" in text and "CPU s" in text and "torch " + torch.__version__ in text
    assert "## What the tests rely on" in text and "2 layers, seeds 0-1" in text
    assert text.count("| induction | 1 |") == 1 and "| previous_token | 0 |" in text
    assert "| 6 |" in text  # the curve reaches the last step
