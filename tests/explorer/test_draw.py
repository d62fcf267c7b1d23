"""explorer.ui.draw: a chart's spec built once per input for the server, its data Arrow-encoded for Streamlit, plain
again for SVG; check mode rebuilds a kept spec and compares."""

import json

import pandas as pd
import pyarrow as pa
import pytest

from explorer.charts import sqrt_dk as charts
from explorer.charts.common import to_spec
from explorer.ui.cache import CacheKeyError, cached, check
from explorer.ui.draw import json_data, spec_for, wire

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
    cells, _ = eq.weights_views(eq.Variant(6, 8, (1, 0, 2, 3, 5, 4), True, False, 0, "float64"))
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
    assert _by_place(json_data(fast)) == _by_place(plain)  # what the browser and the SVG export get
    assert wire(fast) is fast  # already encoded: nothing to do on a rerun


def spec_of(builder, *args, properties=None, **kwargs) -> dict:
    return spec_for(builder, args, kwargs, properties or {})


def test_a_spec_is_the_chart_with_its_data_as_arrow():
    spec = spec_of(charts.softmax_bars, ROW, TEXT, NAMES)
    plain = to_spec(charts.softmax_bars(ROW, TEXT, NAMES))
    assert _by_place(json_data(spec)) == _by_place(plain)
    assert _rows(spec) == list(plain["datasets"].values())[0]


def test_a_spec_follows_its_inputs():
    other = ROW.assign(weight=[0.2, 0.3, 0.5])
    assert _rows(spec_of(charts.softmax_bars, other, TEXT, NAMES)) != _rows(
        spec_of(charts.softmax_bars, ROW, TEXT, NAMES)
    )
    assert spec_of(charts.softmax_bars, ROW, {**TEXT, "title": "u"}, NAMES) != spec_of(
        charts.softmax_bars, ROW, TEXT, NAMES
    )


BUILDS: list[tuple] = []


def counted_bars(row: pd.DataFrame, text: dict, names: dict, marker=None):
    """softmax_bars, counting its builds (a chart is built only for a key the store has not seen)."""
    BUILDS.append((len(row), marker))
    return charts.softmax_bars(row, text, names)


def weights_table(n: int, shift: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame({"key": range(n), "weight": [1 / n + shift] * n, "series": ["scaled"] * n})


def test_a_spec_is_built_once_per_key_and_never_confuses_two_frames():
    BUILDS.clear()
    table = cached(8)(weights_table)
    a = spec_of(counted_bars, table(3), TEXT, NAMES, marker="origin")
    assert spec_of(counted_bars, table(3), TEXT, NAMES, marker="origin") is a  # the server-wide store answers
    b = spec_of(counted_bars, table(3, shift=0.1), TEXT, NAMES, marker="origin")
    assert BUILDS.count((3, "origin")) == 2 and _rows(a) != _rows(b)
    filtered = table(3)[lambda f: f.key < 2]  # no origin: keyed by its values
    c = spec_of(counted_bars, filtered, TEXT, NAMES, marker="values")
    assert len(_rows(c)) == 2 and spec_of(counted_bars, filtered.copy(), TEXT, NAMES, marker="values") is c
    d = spec_of(counted_bars, table(3), TEXT, NAMES, marker="origin", properties={"width": 200})
    assert d is not a and d["width"] == 200


def test_a_chart_argument_with_no_key_raises_a_type_error():
    with pytest.raises(TypeError, match="no cache key"):
        spec_of(counted_bars, pd.DataFrame({"key": range(600), "weight": 0.0, "series": "s"}), TEXT, NAMES)


TITLE = ["weights"]  # an input a careless chart builder reads without naming it


def titled_bars(row: pd.DataFrame, text: dict, names: dict):
    return charts.softmax_bars(row, {**text, "title": TITLE[0]}, names)


def test_check_mode_catches_a_chart_key_that_misses_an_input():
    spec_of(titled_bars, ROW, TEXT, NAMES)
    TITLE[0] = "other"
    try:
        with check(), pytest.raises(CacheKeyError, match=r"chart .*titled_bars"):
            spec_of(titled_bars, ROW, TEXT, NAMES)
    finally:
        TITLE[0] = "weights"
    with check():
        assert spec_of(titled_bars, ROW, TEXT, NAMES) is spec_of(titled_bars, ROW, TEXT, NAMES)


def popping_bars(row: pd.DataFrame, text: dict, names: dict):
    return charts.softmax_bars(row, {**text, "title": text.pop("title")}, names)  # the caller's dict loses its title


def test_check_mode_catches_a_chart_builder_that_changes_its_arguments():
    with check(), pytest.raises(CacheKeyError, match="changed one of its arguments in place"):
        spec_of(popping_bars, ROW, dict(TEXT), NAMES)


def untitled_legend(row: pd.DataFrame):
    import altair as alt

    return alt.Chart(row).mark_bar().encode(x="key:O", y="weight:Q", color=alt.Color("series:N", title=None))


def _draw_twice():
    import pandas as pd

    from explorer.ui.draw import chart
    from tests.explorer.test_draw import untitled_legend

    row = pd.DataFrame({"key": [0, 1], "weight": [0.5, 0.5], "series": ["a", "b"]})
    chart(untitled_legend, row, name="first", data=row)
    chart(untitled_legend, row, name="second", data=row)


def test_drawing_a_chart_leaves_its_stored_spec_as_it_was_built():
    """Streamlit patches a null legend title in the spec it is handed; the spec every session shares stays as built
    (the second drawing is a hit, rebuilt and compared in check mode)."""
    from streamlit.testing.v1 import AppTest

    with check():
        at = AppTest.from_function(_draw_twice, default_timeout=30)
        at.run()
    assert not at.exception, at.exception[0].message
    assert len(at.get("vega_lite_chart")) == 2


def test_chart_takes_a_builder_not_a_built_chart():
    from explorer.ui.draw import chart

    with pytest.raises(TypeError, match="chart builder"):  # the spec would be built on every run, keyed by nothing
        chart(charts.softmax_bars(ROW, TEXT, NAMES), name="bars")


def titled(title: str):
    def bars(row: pd.DataFrame, text: dict, names: dict):
        return charts.softmax_bars(row, {**text, "title": title}, names)

    return bars


def test_a_builder_without_a_name_of_its_own_is_refused():
    """Specs are kept by the builder's module and __qualname__: two closures of one function (or two lambdas) share
    it, so the second would be answered with the first one's chart."""
    with pytest.raises(TypeError, match="top of a module"):
        spec_of(titled("first"), ROW, TEXT, NAMES)
    with pytest.raises(TypeError, match="top of a module"):
        spec_of(lambda row, text, names: charts.softmax_bars(row, text, names), ROW, TEXT, NAMES)
    assert spec_of(titled_bars, ROW, TEXT, NAMES)["datasets"]  # a function of a module is drawn


def test_a_facet_header_quotes_its_word_as_a_string_literal():
    from explorer.charts.common import prefixed_header

    word = 'head\'s "n" 头'  # a quote in a locale string once ended the literal early (language_model's maps)
    literal, rest = prefixed_header(word).rsplit(" + ", 1)
    assert json.loads(literal) == word + " " and rest == "datum.value"


def test_a_spec_is_one_key_whatever_order_its_keyword_arguments_come_in():
    """chart(b, x, marker=1, names=n) and chart(b, x, names=n, marker=1) are one chart: built once, as call_key
    keys a table function's keywords in sorted order."""
    BUILDS.clear()
    a = spec_of(counted_bars, ROW, text=TEXT, names=NAMES, marker="order")
    assert spec_of(counted_bars, ROW, marker="order", names=NAMES, text=TEXT) is a
    assert BUILDS.count((len(ROW), "order")) == 1
