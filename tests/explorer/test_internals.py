"""explorer.ui.internals: each Streamlit internal the app uses, checked against the Streamlit installed, so that an
upgrade that moves one fails here by name instead of somewhere in a page."""

import dataclasses
import io
import types

import pandas as pd
import pyarrow as pa
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.runtime.scriptrunner import ScriptRunContext
from streamlit.testing.v1 import AppTest

from explorer.ui import internals


def run_script(script, **kwargs) -> AppTest:
    at = AppTest.from_function(script, kwargs=kwargs, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def _facts_of_a_run():
    import streamlit as st

    from explorer.ui import internals

    kept = internals.this_run()
    kept["n"] = kept.get("n", 0) + 1
    st.session_state["facts"] = {
        "same_dict": internals.this_run() is kept,
        "n": internals.this_run()["n"],
        "in_run": internals.in_script_run(),
        "session": internals.session_id(),
        "history": internals.history_navigation(),
        "fragment": internals.run_is_fragment(),
        "yield_check": callable(internals.run_yield_check()),
    }

    @st.fragment
    def part():
        st.session_state["fragment_facts"] = internals.run_is_fragment(), internals.this_run().get("n")
        st.button("again", key="again")

    part()


def test_outside_a_run_there_is_no_run():
    assert internals.this_run() == {} and internals.this_run() is not internals.this_run()  # nothing kept
    assert not internals.in_script_run() and not internals.run_is_fragment()
    assert internals.session_id() is None and internals.history_navigation() and internals.run_yield_check() is None
    assert internals.widget_keys_sent() == frozenset()


def test_inside_a_run_each_fact_of_the_run_is_read():
    at = run_script(_facts_of_a_run)
    facts = at.session_state["facts"]
    assert facts == {**facts, "same_dict": True, "n": 1, "in_run": True, "history": False, "fragment": False}
    assert isinstance(facts["session"], str) and facts["session"] and facts["yield_check"]
    assert at.session_state["fragment_facts"] == (False, 1)  # drawn in the full run
    at.run()
    assert at.session_state["facts"]["n"] == 1  # a new run, a new dict


def test_a_fragment_run_is_told_from_a_full_run(monkeypatch):
    """AppTest reruns the whole script for a fragment's widget: the context is made here, its fields checked."""
    names = {f.name for f in dataclasses.fields(ScriptRunContext)}
    assert {"cursors", "fragment_ids_this_run", "session_id", "is_history_navigation"} <= names
    ctx = types.SimpleNamespace(fragment_ids_this_run=["part"], cursors={})
    monkeypatch.setattr(internals, "get_script_run_ctx", lambda suppress_warning=False: ctx)
    assert internals.run_is_fragment()
    ctx.fragment_ids_this_run = []
    assert not internals.run_is_fragment()


def _slider_and_keys():
    import streamlit as st

    from explorer.ui import internals

    st.session_state.setdefault("sent", []).append(sorted(internals.widget_keys_sent()))
    st.slider("s", 0, 10, key="level")


def test_the_widget_values_the_browser_sent_are_read_before_the_widget_is_drawn():
    at = run_script(_slider_and_keys)
    at.slider(key="level").set_value(5).run()
    assert at.session_state["sent"][0] == [] and "level" in at.session_state["sent"][-1]


def test_a_download_is_kept_in_the_media_file_manager(monkeypatch):
    storage = MemoryMediaFileStorage("/media")
    server = types.SimpleNamespace(media_file_mgr=MediaFileManager(storage))
    assert internals.keep_download(b"a,b\n", "text/csv", "slot-0", "x.csv") is None  # no server: nothing
    monkeypatch.setattr(internals.runtime, "exists", lambda: True)
    monkeypatch.setattr(internals.runtime, "get_instance", lambda: server)
    url = internals.keep_download(b"a,b\n", "text/csv", "slot-0", "x.csv")
    kept = storage.get_file(url.rsplit("/", 1)[1])
    assert (kept.content, kept.filename, kept.mimetype) == (b"a,b\n", "x.csv", "text/csv")


def test_arrow_bytes_are_the_frame_and_mixed_columns_still_encode():
    frame = pd.DataFrame({"n": [1, 2], "w": [0.5, 0.25], "name": ["a", "b"]}, index=[7, 8])
    back = pa.ipc.open_stream(io.BytesIO(internals.arrow_bytes(frame))).read_all()
    assert back.to_pylist() == [{"n": 1, "w": 0.5, "name": "a"}, {"n": 2, "w": 0.25, "name": "b"}]  # no index
    mixed = pd.DataFrame({"x": [1, "one"]})  # Arrow refuses it as it is; Streamlit's conversion makes it text
    assert pa.ipc.open_stream(internals.arrow_bytes(mixed)).read_all().column("x").to_pylist() == ["1", "one"]
    rows = [{"x": 1, "y": "a"}]  # a chart's inline rows
    assert pa.ipc.open_stream(internals.arrow_bytes(rows)).read_all().to_pylist() == rows


def test_the_network_address_is_an_address_or_none():
    ip = internals.internal_ip()
    assert ip is None or (isinstance(ip, str) and ip.count(".") == 3 or ":" in ip)


def _stop_and_rerun():
    import streamlit as st

    from explorer.ui import internals

    ended = st.session_state.setdefault("ended", [])
    try:
        if len(ended) < 1:
            st.rerun()
        st.stop()
        st.write("after the stop")
    except (internals.StopException, internals.RerunException) as end:
        ended.append(type(end).__name__)
        raise


def test_streamlits_stop_and_rerun_end_a_run_with_these_exceptions():
    at = AppTest.from_function(_stop_and_rerun, default_timeout=30)
    at.run()
    assert at.session_state["ended"] == ["RerunException", "StopException"] and not at.markdown
