"""Every use of a Streamlit internal (anything beyond `import streamlit as st`), one small function each.

Streamlit does not promise these names between releases: when an upgrade moves one, this module and its tests
(tests/explorer/test_internals.py) are the only places to change. The rest of the app imports Streamlit's public
API only (tests/test_repo.py checks it).
"""

from __future__ import annotations

import threading

from streamlit import dataframe_util, net_util, runtime
from streamlit.runtime.scriptrunner import StopException, get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.scriptrunner_utils.script_run_context import get_run_yield_check
from streamlit.runtime.state import get_session_state
from streamlit.runtime.state.common import user_key_from_element_id

__all__ = [
    "RerunException",
    "StopException",
    "arrow_bytes",
    "history_navigation",
    "in_script_run",
    "internal_ip",
    "keep_download",
    "run_is_fragment",
    "run_yield_check",
    "session_id",
    "this_run",
    "widget_keys_sent",
]

# Things worth keeping for the rest of one run, such as the language: a page asks for a hundred strings or more, and
# each read of st.session_state costs tens of microseconds. A run is told apart by its context's `cursors`, a dict
# Streamlit makes afresh at the start of every run (fragment runs included).
_this_run = threading.local()


def this_run() -> dict:
    """A dict that lives as long as the run in progress (a new one in the next run; an empty, unkept one outside a
    run): what a run looks up once and asks for again."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return {}
    if getattr(_this_run, "run", None) is not ctx.cursors:
        _this_run.run, _this_run.kept = ctx.cursors, {}
    return _this_run.kept


def in_script_run() -> bool:
    """Whether this thread runs a page's script (False in a test calling tables directly, or in a worker thread)."""
    return get_script_run_ctx(suppress_warning=True) is not None


def run_is_fragment() -> bool:
    """Whether the run in progress reruns one fragment (an st.fragment) alone rather than the whole page."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx and ctx.fragment_ids_this_run)


def session_id() -> str | None:
    """The id of the session whose script runs in this thread, or None outside a run."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def run_yield_check():
    """What a long computation in a script run calls often: it raises Streamlit's stop or rerun exception once the
    run was asked to end (a click, the tab gone), or None outside a script run."""
    return get_run_yield_check()


def history_navigation() -> bool:
    """Whether this run came from the browser's back or forward button (or there is no run)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx is None or ctx.is_history_navigation


def widget_keys_sent() -> frozenset[str]:
    """The user keys of the widgets whose values the browser sent with this run and that are not drawn yet.

    Streamlit 1.67 keeps them by widget id until the widget is drawn (no public call reads them earlier); an id
    ends with the user key. Another Streamlit inside: nothing (the URL wins, as before)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return frozenset()
    try:
        sent = get_session_state()._state._new_widget_state.states
    except AttributeError:
        return frozenset()
    return frozenset(user_key_from_element_id(widget_id) for widget_id in sent)


def keep_download(content: bytes, mime: str, slot: str, file_name: str) -> str | None:
    """Store `content` in the server's media file manager under `slot` as a file to download (a slot's earlier
    file is replaced); its URL. Streamlit keys a file by its bytes, MIME type and name, so this is the very file a
    deferred download button's URL names. Outside a server (a test calling a page's code): nothing, None."""
    if not runtime.exists():
        return None
    manager = runtime.get_instance().media_file_mgr
    return manager.add(content, mime, slot, file_name=file_name, is_for_static_download=True)


def arrow_bytes(data) -> bytes:
    """A frame (or a chart's inline rows) as the Arrow IPC stream Streamlit sends a chart's dataset in (a frame's
    index left out, as Altair does)."""
    import pandas as pd  # here, not at the top: the router imports this module before the title, pandas after it
    import pyarrow as pa

    if not isinstance(data, pd.DataFrame):
        return dataframe_util.convert_anything_to_arrow_bytes(data)
    try:
        table = pa.Table.from_pandas(data, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):  # mixed objects: Streamlit's fixes
        return dataframe_util.convert_anything_to_arrow_bytes(data.reset_index(drop=True))
    return dataframe_util.convert_arrow_table_to_arrow_bytes(table)


def internal_ip() -> str | None:
    """This computer's address on the network (Streamlit's "Network URL"), or None."""
    return net_util.get_internal_ip()
