"""Drawing a chart with its exports: `chart(builder, *args, name=..., data=...)`, the one call a page makes per chart.

Building an Altair chart and turning it into a dict costs tens of milliseconds, more than most tables behind it, and
a class on one link asks for the same charts: each spec is built once per distinct arguments for the whole server,
its data encoded to Arrow once, and drawn from the store on every later run.
"""

from __future__ import annotations

import itertools
import threading

import altair as alt
import pandas as pd
import pyarrow as pa
import streamlit as st

from explorer.charts.common import to_spec
from explorer.charts.projector import fitted, projected
from explorer.ui.cache import Store, checking, key_of, rebuilt, verify
from explorer.ui.i18n import t, td
from explorer.ui.internals import arrow_bytes, keep_download
from explorer.ui.page import projector

# Room above a chart's title: Vega places a title by its font size, while a Chinese title's glyphs (and any title
# over a y-axis title longer than the plot) reach higher, and the top of the title was cut off.
# And room at its left: Vega's estimate of a rotated y-axis title's extent fell ~7 px short (saturation's entropy
# chart lost the first letter of its title and its axis title).
CHART_PADDING = {"top": 14, "bottom": 5, "left": 14, "right": 5}
SPECS = Store(256)  # built chart specs, by builder, arguments, properties and projector mode


def chart(
    builder,
    *args,
    name: str,
    data: pd.DataFrame | None = None,
    where=None,
    width="stretch",
    properties: dict | None = None,
    params: dict | None = None,
    **kwargs,
) -> None:
    """Draw builder(*args, **kwargs) (a function of an explorer.charts module) and offer `data` as CSV and the chart
    as SVG; `name` names the files and must be unique on the page.

    The spec is built once per key_of(builder, arguments, properties, projector mode) for the whole server (an
    argument with no key raises TypeError naming it: see explorer.ui.cache.key_of). In projector mode the chart's
    type, marks and fixed sizes grow (explorer.charts.projector). Both files are made only when their button is
    clicked (see `pinned`: a rerun costs nothing for them). `params` sets the values of the spec's Vega-Lite
    parameters (a control's marker) on a copy of the kept spec, outside its key: moving the control draws the kept
    spec again instead of building one per value.
    """
    if isinstance(builder, (dict, alt.TopLevelMixin)):
        raise TypeError("chart() takes a chart builder and its inputs, not a built chart: chart(charts.x, a, name=...)")
    spec = spec_for(builder, args, kwargs, properties or {})
    _draw(with_params(spec, params) if params else spec, data, name, where or st, width)


def with_params(spec: dict, params: dict) -> dict:
    """spec with the values of some of its top-level Vega-Lite parameters set; the kept spec is left as it is."""
    entries = spec.get("params", [])
    missing = set(params) - {entry["name"] for entry in entries}
    if missing:
        raise ValueError(f"the chart has no parameter {sorted(missing)}: its builder must add it (alt.param)")
    return {**spec, "params": [{**e, "value": params[e["name"]]} if e["name"] in params else e for e in entries]}


def spec_for(builder, args: tuple, kwargs: dict, properties: dict) -> dict:
    """The spec of builder(*args, **kwargs) with its properties, projected in projector mode, from the store."""
    big = projector()
    key = (_qualified(builder), big, key_of(args), _kwargs_key(kwargs), key_of(properties))
    build = lambda: _build(builder, args, kwargs, properties, big)  # noqa: E731
    if checking():
        what = f"chart {key[0]} with key {key[1:]!r:.300}"
        again = lambda: (key[0], big, key_of(args), _kwargs_key(kwargs), key_of(properties))  # noqa: E731
        kept = SPECS.peek(key)
        if kept is None:
            return SPECS.get_once(key, lambda: rebuilt(build, again, key, what))
        verify(kept, rebuilt(build, again, key, what), what)
        return kept
    return SPECS.get_once(key, build)


def _kwargs_key(kwargs: dict):
    """The keyword arguments' key, whatever order the page wrote them in (as cache.call_key keys a table's)."""
    return key_of(dict(sorted(kwargs.items())))


def _qualified(builder) -> str:
    """The builder's name in the store's key. Only a function defined at the top of a module has a name that is its
    own: two lambdas, or two closures made by one function, share one, and one chart would be drawn for the other."""
    name = getattr(builder, "__qualname__", None)
    if not callable(builder) or not isinstance(name, str) or "<" in name:
        raise TypeError(f"chart() takes a chart builder defined at the top of a module, not {builder!r}")
    return f"{builder.__module__}.{name}"


def _build(builder, args: tuple, kwargs: dict, properties: dict, big: bool) -> dict:
    figure = builder(*args, **kwargs)
    spec = wire(figure.properties(**properties) if properties else figure)
    return projected(spec) if big else spec


def _draw(spec: dict, data: pd.DataFrame | None, name: str, where, width) -> None:
    spec = {"padding": CHART_PADDING, **_color_copied(spec)}  # the stored spec stays as it was built
    spec = projected(spec) if projector() else fitted(spec)
    where.vega_lite_chart(spec, width=width)
    row = where.container(horizontal=True, gap="small")
    if data is not None:
        headers = td("common.csv_columns")  # read in the script's thread: the language is the session's
        csv = lambda: csv_text(data, headers)  # noqa: E731
        _export(row, t("common.frame.csv"), csv, f"{name}.csv", "text/csv", ":material/download:", "csv_help")
    _export(row, "SVG", lambda: svg(spec), f"{name}.svg", "image/svg+xml", ":material/image:", "svg_help")


def _export(row, label: str, make, file_name: str, mime: str, icon: str, help_key: str) -> None:
    """One export button under a chart, keyed by its file's type and name."""
    stem, _, kind = file_name.rpartition(".")
    help_text = t(f"common.frame.{help_key}")
    download(label, make, file_name, mime, key=f"{kind}_{stem}", where=row, type="tertiary", icon=icon, help=help_text)


def download(label: str, make, file_name: str, mime: str, *, key: str, where=None, **button) -> None:
    """A download button whose file make() writes on the click only (a rerun costs nothing for it), kept on the
    server until the browser has fetched it (pinned). `button`: st.download_button's other options (icon, help)."""
    data = pinned(make, mime, file_name)
    (where or st).download_button(label, data, file_name=file_name, mime=mime, key=key, on_click="ignore", **button)


def _color_copied(spec: dict) -> dict:
    """spec with its top-level colour channel (and legend) copied: st.vega_lite_chart turns a null legend title
    there into " " in place (Streamlit 1.67, a Vega-Lite workaround), which would change the spec every session
    shares after its first drawing (check mode found it)."""
    encoding = spec.get("encoding")
    color = encoding.get("color") if isinstance(encoding, dict) else None
    if not isinstance(color, dict):
        return spec
    legend = color.get("legend")
    color = {**color, "legend": {**legend}} if isinstance(legend, dict) else {**color}
    return {**spec, "encoding": {**encoding, "color": color}}


# --- the server's path: data as Arrow, never as rows of JSON -------------------------------------------------------
# Altair turns every DataFrame of a chart into rows of Python values, names each dataset by a hash of those rows as
# JSON, and Streamlit turns the rows back into a DataFrame and that into Arrow: most of a chart's build
# (benchmarks/page_rerender.md). to_wire_spec names each frame by its place in the chart and encodes it to Arrow once.
_BUILDING = threading.local()  # the frames of the chart to_wire_spec is building in this thread: id -> (name, frame)


def _named_frames(data, **options):
    """Altair's data transformer: inside to_wire_spec a DataFrame becomes a reference to a named dataset (the same
    frame in two layers, one dataset); anywhere else, Altair's own transformer."""
    frames = getattr(_BUILDING, "frames", None)
    if frames is None or not isinstance(data, pd.DataFrame):
        return _ALTAIR_TRANSFORMER(data)
    name, _ = frames.setdefault(id(data), (f"data-{len(frames)}", data))
    return {"name": name}


_ALTAIR_TRANSFORMER = alt.data_transformers.get()  # Altair's default, without its row limit (charts.common)
alt.data_transformers.register("attn_named_frames", _named_frames)
alt.data_transformers.enable("attn_named_frames")


def to_wire_spec(figure: alt.TopLevelMixin, *, validate: bool | None = None) -> dict:
    """to_spec(figure) with its datasets as Arrow bytes, made from the frames directly: what st.vega_lite_chart
    sends. The datasets are named data-0, data-1, ... in the order the chart meets its frames."""
    _BUILDING.frames = frames = {}
    try:
        spec = to_spec(figure, validate=validate)
    finally:
        _BUILDING.frames = None
    if frames:
        datasets = dict(spec.get("datasets") or {})  # inline dicts of values, named by Altair
        datasets.update((name, arrow_bytes(frame)) for name, frame in frames.values())
        spec = {**spec, "datasets": datasets}
    return spec


def wire(figure) -> dict:
    """A chart as chart() hands it to Streamlit: a Vega-Lite dict whose datasets are already Arrow bytes
    (st.vega_lite_chart re-encodes inline data to Arrow on every run, unless it already is)."""
    spec = figure if isinstance(figure, dict) else to_wire_spec(figure)
    datasets = spec.get("datasets")
    if not datasets or all(isinstance(v, bytes) for v in datasets.values()):
        return spec
    return {**spec, "datasets": {k: v if isinstance(v, bytes) else arrow_bytes(v) for k, v in datasets.items()}}


def json_data(spec: dict) -> dict:
    """The spec with its Arrow datasets back as rows of values (plain Vega-Lite, for vl-convert)."""
    datasets = spec.get("datasets") or {}
    rows = {k: pa.ipc.open_stream(v).read_all().to_pylist() if isinstance(v, bytes) else v for k, v in datasets.items()}
    return {**spec, "datasets": rows} if datasets else spec


# --- exports ---------------------------------------------------------------------------------------------------------
def csv_text(data: pd.DataFrame, headers: dict[str, str]) -> str:
    """A chart's data as CSV for a spreadsheet: each column named in the viewer's language (common.csv_columns; a
    name not there, a symbol such as n or d_k, stays), every value as computed. Chinese names start the file with
    a byte-order mark: without one, Excel reads UTF-8 as the local code page and shows them garbled."""
    text = data.rename(columns=lambda c: headers.get(str(c), c)).to_csv(index=False)
    return text if text.isascii() else "\ufeff" + text


# Files made by export clicks that stay pinned on the server: the last PINNED_EXPORTS of them (the largest export
# is about 0.3 MB, so at most about 10 MB).
PINNED_EXPORTS = 32
_pin_slots = itertools.count()


def pinned(make, mime: str, file_name: str):
    """A download button's deferred data: make() run on the click, its file kept until the browser has fetched it.

    Streamlit 1.67 stores the file a deferred download makes without tying it to any session, so the next two
    script runs that end anywhere on the server delete it; in a busy class they can come before the browser's
    fetch of the URL it was just given, and the click gets a 404. Here the file is also stored under one of
    PINNED_EXPORTS slots of the server's media file manager, taken in turn (internals.keep_download): the very file
    the click's URL names, kept until its slot is reused. Reruns are not affected: nothing is made before a click.
    """

    def data() -> bytes:
        content = make()
        content = content.encode("utf-8") if isinstance(content, str) else content
        keep_download(content, mime, f"attn-export-pin-{next(_pin_slots) % PINNED_EXPORTS}", file_name)
        return content

    return data


def svg(spec: dict) -> str:
    """The chart rendered to SVG by vl-convert (imported on first use: it starts a JavaScript runtime)."""
    import vl_convert

    return vl_convert.vegalite_to_svg(json_data(spec))
