"""The frame's chart path: specs built once per input, data Arrow-encoded for Streamlit, plain again for SVG."""

import pandas as pd
import pyarrow as pa

from explorer.charts import sqrt_dk as charts
from explorer.charts.common import to_spec
from explorer.ui.frame import _json_data, spec_of, wire

ROW = pd.DataFrame({"key": [0, 1, 2], "weight": [0.5, 0.3, 0.2], "series": ["scaled"] * 3})
TEXT = {"title": "t", "x": "key", "y": "weight", "legend": "logits", "uniform": "1/n"}
NAMES = {"scaled": "scaled", "unscaled": "unscaled"}


def _rows(spec: dict) -> list[dict]:
    (data,) = spec["datasets"].values()
    return pa.ipc.open_stream(data).read_all().to_pylist()


def test_spec_of_is_the_chart_with_its_data_as_arrow():
    spec = spec_of(charts.softmax_bars, ROW, TEXT, NAMES)
    plain = to_spec(charts.softmax_bars(ROW, TEXT, NAMES))
    assert {k: v for k, v in spec.items() if k != "datasets"} == {k: v for k, v in plain.items() if k != "datasets"}
    assert _rows(spec) == list(plain["datasets"].values())[0]
    assert _json_data(spec)["datasets"] == plain["datasets"]  # what the SVG export renders
    assert wire(spec) is spec  # already encoded: nothing to do on a rerun


def test_spec_of_follows_its_inputs():
    other = ROW.assign(weight=[0.2, 0.3, 0.5])
    assert _rows(spec_of(charts.softmax_bars, other, TEXT, NAMES)) != _rows(
        spec_of(charts.softmax_bars, ROW, TEXT, NAMES)
    )
    assert spec_of(charts.softmax_bars, ROW, {**TEXT, "title": "u"}, NAMES) != spec_of(
        charts.softmax_bars, ROW, TEXT, NAMES
    )


def test_a_data_key_stands_in_for_the_frames():
    """Equal keys are the caller's promise of equal frames: the frame is not hashed, the key is."""
    first = spec_of(charts.softmax_bars, ROW, TEXT, NAMES, data_key=("row", 1))
    changed = ROW.assign(weight=[0.2, 0.3, 0.5])
    assert _rows(spec_of(charts.softmax_bars, changed, TEXT, NAMES, data_key=("row", 1))) == _rows(first)
    assert _rows(spec_of(charts.softmax_bars, changed, TEXT, NAMES, data_key=("row", 2))) != _rows(first)
