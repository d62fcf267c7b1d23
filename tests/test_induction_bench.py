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


def test_choices_time_both_adams_and_both_attentions_which_agree():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        adam, attention = induction_bench.choices(rounds=1, steps=2)
    finally:
        torch.set_num_threads(before)
    assert set(adam["step_ms"]) == {"foreach", "fused"} and set(attention["layer_ms"]) == {"fused_kernel", "explicit"}
    assert all(ms > 0 for row in (adam["step_ms"], attention["layer_ms"]) for pair in row.values() for ms in pair)
    assert attention["max_diff"] < 1e-6  # the explicit attention computes what torch's fused kernel does
