"""The websocket client keeps a control at the value the browser shows: a keyed widget drawn again from session state
comes without its default (the proto's default is then the first option), and tools.page_rerender's "set it back"
run sent that first option instead, a new value that it counted as a warm rerun."""

import random

from streamlit.proto.Slider_pb2 import Slider

from tests.browser_helpers import run_async
from tools.ws_client import Run, WsSession

D_K = [str(2**i) for i in range(8)]  # a select slider's options, default 64 (index 6)


def _select_slider(default: list[int], raw_value: list[str] | None = None) -> Slider:
    widget = Slider(id="d_k", label="d_k", type=Slider.SELECT_SLIDER, min=0, max=len(D_K) - 1, step=1)
    widget.options[:] = D_K
    widget.default[:] = default
    if raw_value is not None:  # the script set the value (session state): the browser shows it
        widget.raw_value[:] = raw_value
        widget.set_value = True
    return widget


class _Socket:
    async def send(self, _message) -> None:
        pass


def _session(*drawn: Slider) -> WsSession:
    """A session whose runs draw `drawn` in turn, without a server."""
    session, runs = WsSession("http://127.0.0.1:1"), iter(drawn)
    session.ws = _Socket()

    async def next_run() -> Run:
        return Run(0.0, "FINISHED_SUCCESSFULLY", controls={"d_k": next(runs)})

    session._read_until_finished = next_run
    return session


def _value(state) -> list[str]:
    return list(state.string_array_value.data)


def test_a_control_redrawn_without_its_default_is_still_at_the_value_the_browser_shows():
    session = _session(_select_slider([6]), _select_slider([0]))
    run_async(session.rerun("saturation"))
    run_async(session.rerun())  # drawn from session state: default 0, nothing set
    assert _value(session.current("d_k")) == ["64"]
    picks = {_value(session.pick_value("d_k", random.Random(s))[1])[0] for s in range(50)}
    assert "64" not in picks and "1" in picks  # a change is a change; the first option is one of them


def test_a_value_the_script_sets_is_the_one_shown():
    session = _session(_select_slider([6]), _select_slider([0], raw_value=["8"]))
    run_async(session.rerun("saturation"))
    run_async(session.rerun())
    assert _value(session.current("d_k")) == ["8"]
