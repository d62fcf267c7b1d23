"""tools.induction_bench's split of a click (benchmarks/induction_page.md) must keep working as attn_core.learn
changes."""

import torch

from tools import induction_bench


def test_parts_split_each_models_click_into_steps_and_snapshots():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = induction_bench.parts(40, 0, repeats=2)
    finally:
        torch.set_num_threads(before)
    assert [r["layers"] for r in rows] == [2, 1]
    for row in rows:
        assert row["steps"] == 40 and row["snapshots"] == 41  # every step (40 // 30 = 1) and the end
        assert set(row["step_ms"]) == {"batch", "forward", "forward_backward", "adam"}
        assert set(row["snapshot_ms"]) == {"forward", "probe", "scores", "losses"}
        assert all(v > 0 for part in ("step_ms", "snapshot_ms") for v in row[part].values())
        per_step = row["step_ms"]["batch"] + row["step_ms"]["forward_backward"] + row["step_ms"]["adam"]
        assert row["click_estimate_s"]["steps"] == 40 * per_step / 1000
