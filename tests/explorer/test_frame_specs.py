"""The frame's chart path: specs built once per input, data Arrow-encoded for Streamlit, plain again for SVG."""

import json

import pandas as pd
import pyarrow as pa
import pytest

from explorer.charts import sqrt_dk as charts
from explorer.charts.common import to_spec
from explorer.ui import frame
from explorer.ui.frame import _json_data, spec_of, wire

ROW = pd.DataFrame({"key": [0, 1, 2], "weight": [0.5, 0.3, 0.2], "series": ["scaled"] * 3})
TEXT = {"title": "t", "x": "key", "y": "weight", "legend": "logits", "uniform": "1/n"}
NAMES = {"scaled": "scaled", "unscaled": "unscaled"}


def _rows(spec: dict) -> list[dict]:
    (data,) = spec["datasets"].values()
    return pa.ipc.open_stream(data).read_all().to_pylist()


def _by_place(spec: dict):
    """The spec with every reference to a named dataset replaced by that dataset's rows: two specs that differ only
    in how they name (or share) their datasets compare equal."""
    datasets = spec.get("datasets") or {}

    def inline(node):
        if isinstance(node, dict):
            ref = node.get("name") if set(node) == {"name"} else None
            if isinstance(ref, str) and ref in datasets:
                return {"values": datasets[ref]}
            return {k: inline(v) for k, v in node.items() if k != "datasets"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(spec)


def _equivariance_charts() -> list:
    from explorer.charts import equivariance as eq_charts
    from explorer.tables import equivariance as eq

    errors = eq.variant_errors(6, 8, (1, 0, 2, 3, 5, 4), 0, "float64")
    cells, _ = eq.weights_views(6, 8, (1, 0, 2, 3, 5, 4), True, False, 0, "float64")
    text = {k: k for k in ("title", "x", "y", "weight", "query_token", "key_token", "variant", "verdict", "error")}
    return [
        eq_charts.variant_errors_log(
            errors,
            "plain",
            eq.LOG_FLOOR,
            {**text, "tolerance": "tol", "zero": "0"},
            {v: v.upper() for v in errors.variant},
            {"equivariant": "same", "broken": "not"},
        ),
        eq_charts.weights_heatmap(cells, "A", text, 0.5),
    ]


@pytest.mark.parametrize("which", ["bars", "layered", "heatmap"])
def test_the_servers_arrow_path_draws_exactly_what_altairs_own_path_draws(which):
    """wire() names each frame by its place and encodes it to Arrow from pandas (no rows of JSON, no SHA-256 of
    them); read back, every dataset has the rows Altair's own path makes, and the rest of the spec is the same."""
    figure = {"bars": lambda: charts.softmax_bars(ROW, TEXT, NAMES)}.get(which) or (
        lambda: _equivariance_charts()[0 if which == "layered" else 1]
    )
    fast, plain = wire(figure()), to_spec(figure())
    assert all(isinstance(v, bytes) for v in fast["datasets"].values())
    assert _by_place(_json_data(fast)) == _by_place(plain)  # what the browser and the SVG export get
    assert wire(fast) is fast  # already encoded: nothing to do on a rerun


def test_spec_of_is_the_chart_with_its_data_as_arrow():
    spec = spec_of(charts.softmax_bars, ROW, TEXT, NAMES)
    plain = to_spec(charts.softmax_bars(ROW, TEXT, NAMES))
    assert _by_place(_json_data(spec)) == _by_place(plain)
    assert _rows(spec) == list(plain["datasets"].values())[0]


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


# --- keys without hashing: frames by origin, small frames by a digest, the rest by Streamlit -------------------------

BUILDS: list[tuple] = []


def counted_bars(row: pd.DataFrame, text: dict, names: dict, marker=None):
    """softmax_bars, counting its builds (spec_of builds a chart only for a key it has not seen)."""
    BUILDS.append((len(row), marker))
    return charts.softmax_bars(row, text, names)


def weights_table(n: int, shift: float = 0.0) -> pd.DataFrame:
    """A table function as the pages' tables are: a frame from plain arguments."""
    return pd.DataFrame({"key": range(n), "weight": [1 / n + shift] * n, "series": ["scaled"] * n})


def test_keys_keep_types_apart_and_follow_values():
    assert frame._key(1) != frame._key(1.0) != frame._key(True)
    assert frame._key((1, 2)) != frame._key([1, 2])
    assert frame._key({"a": "x"}) == frame._key({"a": "x"}) != frame._key({"a": "y"})
    small = ROW.copy()
    assert frame._key(small) == frame._key(ROW.copy())  # equal values: equal keys
    assert frame._key(ROW.assign(weight=[0.2, 0.3, 0.5])) != frame._key(ROW)
    assert frame._key(ROW.astype({"key": "float64"})) != frame._key(ROW)  # same numbers, other type
    with pytest.raises(TypeError):
        frame._key(object())
    big = pd.DataFrame({"x": range(frame.SMALL_FRAME + 1)})
    with pytest.raises(TypeError):  # too large to digest on every run: spec_of hands it to Streamlit's hashing
        frame._key(big)


def test_a_table_frame_is_keyed_by_its_origin_and_a_frame_made_from_it_is_not():
    table = frame.table(weights_table, 8)
    first, again = table(4), table(4)
    assert first is again  # the server's store answers with the frame it keeps: no copy, no hashing
    assert frame.origin(first) == frame.origin(again) != frame.origin(table(5))
    assert frame.origin(first[first.key > 0]) is None  # filtered: a new frame with no origin of its own
    assert frame._key(first) == frame._key(again)


def test_spec_of_builds_once_per_key_and_never_confuses_two_frames():
    BUILDS.clear()
    table = frame.table(weights_table, 8)
    a = spec_of(counted_bars, table(3), TEXT, NAMES, marker="origin")
    assert spec_of(counted_bars, table(3), TEXT, NAMES, marker="origin") is a  # the server-wide store answers
    b = spec_of(counted_bars, table(3, shift=0.1), TEXT, NAMES, marker="origin")
    assert BUILDS.count((3, "origin")) == 2 and _rows(a) != _rows(b)
    filtered = table(3)[lambda f: f.key < 2]  # no origin: keyed by its values
    c = spec_of(counted_bars, filtered, TEXT, NAMES, marker="values")
    assert len(_rows(c)) == 2 and spec_of(counted_bars, filtered.copy(), TEXT, NAMES, marker="values") is c


def test_memo_and_shared_answer_from_the_store():
    calls = []

    @frame.shared
    def doubled(rows: pd.DataFrame, factor: int) -> pd.DataFrame:
        calls.append(factor)
        return rows.assign(weight=rows.weight * factor)

    assert doubled(ROW, 2) is doubled(ROW.copy(), 2)
    assert doubled(ROW, 3).weight.tolist() == (ROW.weight * 3).tolist()
    assert calls == [2, 3]
    with pytest.raises(TypeError):  # an argument with no exact key is a programming error, not a silent miss
        frame.memo(("x", object()), dict)


def test_the_store_drops_the_least_recently_used():
    store = frame.Store(2)
    store.get("a", lambda: {"a": 1})
    store.get("b", lambda: {"b": 1})
    store.get("a", lambda: {"a": 2})  # a is used again: b is now the oldest
    store.get("c", lambda: {"c": 1})
    assert store.get("a", lambda: {"a": 3}) == {"a": 1} and store.get("b", lambda: {"b": 2}) == {"b": 2}


def test_a_run_asks_a_table_once_and_the_next_run_asks_again(monkeypatch):
    """Within one run the same call answers with the same objects; a new run (new cursors) starts afresh."""
    from explorer.ui import i18n, internals

    class Context:
        cursors: dict = {}

    ctx = Context()
    monkeypatch.setattr(internals, "get_script_run_ctx", lambda suppress_warning=False: ctx)
    table = frame.table(weights_table, 8)
    ctx.cursors = {}
    first = table(4)
    assert table(4) is first and table(5) is not first
    assert i18n.this_run() is i18n.this_run()  # one dict for the whole run
    ctx.cursors = {}  # Streamlit's next run
    assert "tables" not in i18n.this_run()
    assert table(4) is first  # from the server's store this time


def test_a_table_computes_each_call_once_for_the_server_and_keeps_its_last_entries():
    calls = []

    def counted(n: int, shift: float = 0.0) -> pd.DataFrame:
        calls.append((n, shift))
        return weights_table(n, shift)

    table = frame.table(counted, 2)
    assert table(3) is table(3)
    assert table(3, shift=0.5) is not table(3)  # (3, 0.0) used last
    assert calls == [(3, 0.0), (3, 0.5)]
    table(4)  # a third entry: (3, 0.5), the least recently used, is dropped
    assert table(3) is table(3) and calls == [(3, 0.0), (3, 0.5), (4, 0.0)]
    assert table(3, shift=0.5).equals(weights_table(3, 0.5)) and calls[-1] == (3, 0.5)  # made again
    assert table(3, 0.5).equals(table(3, shift=0.5))  # a positional and a named argument: two keys, both right


def test_a_class_asking_a_missing_table_at_once_computes_it_once():
    import threading
    import time

    started, release, calls = threading.Event(), threading.Event(), []

    def slow(n: int) -> pd.DataFrame:
        calls.append(n)
        started.set()
        release.wait(5)
        return weights_table(n, 0.0)

    table, results = frame.table(slow, 4), []
    students = [threading.Thread(target=lambda: results.append(table(3))) for _ in range(4)]
    students[0].start()
    started.wait(5)
    for student in students[1:]:
        student.start()
    time.sleep(0.2)  # the others ask while the first still computes (a fresh server's first visits)
    release.set()
    for student in students:
        student.join(5)
    assert calls == [3] and len(results) == 4 and all(r is results[0] for r in results)


def test_a_table_argument_with_no_exact_key_goes_to_streamlits_cache():
    def rows_of(frame_: pd.DataFrame) -> int:
        return len(frame_)

    big = pd.DataFrame({"x": range(frame.SMALL_FRAME + 1)})
    assert frame.table(rows_of, 2)(big) == frame.SMALL_FRAME + 1


def test_get_once_builds_once_for_callers_who_arrive_together_and_keeps_only_what_it_should():
    import threading

    store, started, release, builds = frame.Store(4), threading.Event(), threading.Event(), []

    def slow():
        builds.append(1)
        started.set()
        release.wait(5)
        return {"rows": len(builds)}

    results = []
    first = threading.Thread(target=lambda: results.append(store.get_once("k", slow)))
    first.start()
    started.wait(5)
    second = threading.Thread(target=lambda: results.append(store.get_once("k", slow)))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert builds == [1] and results[0] is results[1]  # the second caller waited for the first one's value
    assert store.get_once("cut", lambda: {"short": True}, keep=lambda v: not v["short"]) == {"short": True}
    assert store.peek("cut") is None and store.peek("k") is results[0]


def test_a_known_frame_is_keyed_by_what_it_was_made_from():
    rows = known_rows = frame.known(ROW.copy(), "made", 1)
    assert frame._key(rows) == frame._key(frame.known(ROW.assign(weight=[0.0, 0.0, 1.0]), "made", 1))  # a promise
    assert frame._key(known_rows) != frame._key(frame.known(ROW.copy(), "made", 2))
    assert frame.store("test.once", 3) is frame.store("test.once", 3)


def test_a_facet_header_quotes_its_word_as_a_string_literal():
    from explorer.charts.common import prefixed_header

    word = 'head\'s "n" 头'  # a quote in a locale string once ended the literal early (language_model's maps)
    literal, rest = prefixed_header(word).rsplit(" + ", 1)
    assert json.loads(literal) == word + " " and rest == "datum.value"
