"""The Learning pages say what their numbers show, at settings drawn from the controls' ranges (issue 25).

The maps are one held-out sequence and the entropy beside them is that map's; the formula drops 1/√d_k when the
scale is off; the step-0 point of "what to notice" is chosen by the step-0 numbers; a green box only for a run
that reaches the stated accuracy.
"""

import json
import math
import random
import re

import numpy as np
import pyarrow as pa
import pytest
from app_helpers import assert_clean, metric, open_link

from attn_core.learn import train
from explorer.tables import learning as tables

PAGE = "views/learning.py"
SCALE = "views/learning_scale.py"
SQRT = r"\sqrt{d_k}"


def drawn_settings(count: int, seed: int) -> list[dict]:
    """Settings of the learning page drawn from the controls' ranges, always with the two ends of d_model."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        out.append(
            {
                "learn_task": rng.choice(tables.TASKS),
                "learn_d_model": str(tables.D_MODELS[-1] if i == 0 else rng.choice(tables.D_MODELS)),
                "learn_heads": str(1 if i == 0 else rng.choice(tables.HEADS)),
                "learn_layers": str(rng.choice(tables.LAYERS)),
                "learn_steps": "20",
                "learn_scaled": "false" if i % 2 == 0 else "true",
                "seed": str(rng.randrange(1000)),
                "lang": rng.choice(("en", "zh")),
            }
        )
    return out


def step0(params: dict):
    """The step-0 snapshot of these settings, from attn_core (not through the page)."""
    cfg = tables.learn_config(
        params["learn_task"],
        int(params["learn_d_model"]),
        int(params["learn_heads"]),
        int(params["learn_layers"]),
        tables.AUTO,
        int(params["learn_steps"]),
        params["learn_scaled"] == "true",
        int(params["seed"]),
    )
    return train(cfg, keep_going=lambda step: step < 0).snapshots[0]


def chart_cells(at, title_start: str):
    """The data of the chart whose title starts with `title_start`, as a DataFrame."""
    for chart in at.get("vega_lite_chart"):
        title = json.loads(chart.proto.spec).get("title", "")
        if str(title).startswith(title_start):
            return pa.ipc.open_stream(chart.proto.datasets[0].data.data).read_pandas()
    raise AssertionError(f"no chart titled {title_start!r}")


def notice_points(at) -> list[str]:
    text = next(m.value for m in at.markdown if m.value.startswith(("**What to notice**", "**请注意**")))
    return [line[2:] for line in text.splitlines()[1:]]


@pytest.mark.parametrize("params", drawn_settings(6, seed=25), ids=lambda p: "-".join(p.values()))
def test_the_untrained_view_says_what_its_numbers_show(params):
    at = open_link(PAGE, params)
    assert_clean(at)
    scaled = params["learn_scaled"] == "true"
    attention = at.latex[0].value
    assert (SQRT in attention) == scaled, attention  # the formula is the one computed

    snap = step0(params)
    first = notice_points(at)[0]
    shown = float(re.search(r"\d\.\d\d", first).group())
    assert shown == pytest.approx(snap.max_weight, abs=0.005)  # the batch's mean largest weight, as computed
    peaked = snap.max_weight > tables.PEAKED
    assert ("peaked" in first or "尖锐" in first) == peaked and ("blur" in first or "模糊" in first) == (not peaked)

    # the map shown is one held-out sequence, and the entropy metric is that map's
    title = "Cross-attention 1" if params["lang"] == "en" else "交叉注意力 1"
    cells = chart_cells(at, title)
    heads = cells[cells.panel != tables.RIGHT]
    example = snap.example_attention["cross1"].double().numpy()  # (H, n_q, n_k)
    got = heads.sort_values(["panel", "query", "key"]).weight.to_numpy().reshape(example.shape)
    np.testing.assert_allclose(got, example, atol=1e-6)
    p = np.clip(got, 1e-300, None)
    entropy = float((-(got * np.log(p)).sum(-1)).mean())
    label = "cross-attention 1 entropy (nats)" if params["lang"] == "en" else "交叉注意力 1 的熵（奈特）"
    assert float(metric(at, label)) == pytest.approx(entropy, abs=0.005 + 1e-9)


def test_unscaled_at_256_the_map_shows_the_one_hot_rows_its_entropy_reports():
    """The reviewer's case: entropy ~0 beside a pale map, because the map was the batch average."""
    params = {"learn_d_model": "256", "learn_scaled": "false", "seed": "0"}
    at = open_link(PAGE, params)
    cells = chart_cells(at, "Cross-attention 1")
    rows = cells[cells.panel == "1"].groupby("query").weight.max()
    assert float(metric(at, "cross-attention 1 entropy (nats)")) < 0.2 and rows.mean() > 0.9
    assert any("one held-out sequence" in c.value for c in at.caption)


def test_a_run_gets_a_green_box_only_from_the_stated_accuracy(monkeypatch):
    tiny = {"learn_d_model": "16", "learn_steps": "20", "seed": "108"}
    at = open_link(PAGE, tiny)
    at.button(key="learn_train").click().run()
    assert_clean(at)
    accuracy = float(metric(at, "held-out accuracy").rstrip("%")) / 100
    assert accuracy < tables.LEARNED and not at.success  # 20 steps at d_model 16 do not learn reverse
    warning = next(w.value for w in at.warning if w.value.startswith("Not learned"))
    assert f"{tables.LEARNED:.0%}" in warning and f"{accuracy:.1%}" in warning

    monkeypatch.setattr(tables, "LEARNED", 0.0)  # every run reaches it: the same run now earns the green box
    again = open_link(PAGE, tiny)  # the shelf keeps the run: no training
    assert_clean(again)
    assert any(s.value.startswith("Trained: held-out accuracy") and "at least 0%" in s.value for s in again.success)


@pytest.mark.parametrize(("d_k", "init"), [("8", "0.5"), ("8", "1.0"), ("64", "2.0"), ("256", "0.5")])
def test_the_scale_page_step_zero_point_matches_its_largest_weights(d_k, init):
    at = open_link(SCALE, {"scale_d_k": d_k, "scale_init": init, "seed": "3"})
    assert_clean(at)
    unscaled = float(metric(at, "largest weight, unscaled"))
    scaled = float(metric(at, "largest weight, scaled"))
    first = notice_points(at)[0]
    assert f"{unscaled:.2f}" in first and f"{scaled:.2f}" in first
    assert ("already peaked" in first) == (unscaled > tables.PEAKED), first
    assert "close to 1" not in first
    assert math.isfinite(unscaled)
