"""A Streamlit session driven over its websocket protocol: what a browser sends, without the browser.

The load test's light client. A browser page costs a Chromium renderer per student, which on a 2-core
machine competes with the server it measures; this client costs a socket and a protobuf parser. It sends
`BackMsg.rerun_script` (page, query string, widget states) and reads `ForwardMsg`s until `script_finished`,
noting the main area's sliders and checkboxes, the exports it offers, and any exception or error box the run drew.

With `cookies=True` the session first loads the page over HTTP, as a browser does, keeps the cookies the
server (or a proxy in front of it) sets, and sends them with the websocket handshake and with every download:
what sticky sessions behind nginx need (deploy/nginx/attention-explorer.conf).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import random
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

MAIN = 0  # delta_path[0]: 0 is the main area, 1 the sidebar


@dataclass
class Run:
    seconds: float
    status: str
    errors: list[str] = field(default_factory=list)
    controls: dict[str, object] = field(default_factory=dict)  # widget id -> Slider or Checkbox proto
    exports: list[str] = field(default_factory=list)  # deferred file ids of the download buttons drawn
    widgets: dict[str, object] = field(default_factory=dict)  # widget id -> proto of every main-area widget, forms too
    progress: list[tuple[float, str]] = field(default_factory=list)  # (perf_counter, text) of every progress bar update
    warnings: list[str] = field(default_factory=list)  # the text of every warning box drawn
    charts: int = 0  # Vega-Lite charts drawn
    fragments: dict[str, str] = field(default_factory=dict)  # widget or export id -> id of the fragment that drew it


@dataclass(frozen=True)
class Download:
    url: str  # the media URL the server made for the export, relative to the app
    status: int  # HTTP status of fetching it (with the session's cookies)
    size: int  # bytes received


class WsSession:
    """One browser tab's worth of protocol: `await s.rerun(page)`, then `await s.change(rng)` repeatedly."""

    def __init__(self, url: str, cookies: bool = False):
        self.url = url.rstrip("/")
        self.ws_url = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self.ws = None
        self.page = ""
        self.states: dict[str, WidgetState] = {}  # what the client has set, sent with every rerun
        self.controls: dict[str, object] = {}
        # widget id -> the proto whose value the browser shows: as first drawn, or as the script last set it. A
        # keyed widget drawn again from session state comes without its default (the proto's default is then the
        # first option), and a browser keeps the value it holds.
        self.shown: dict[str, object] = {}
        self.exports: list[str] = []  # the deferred file ids of the last run's download buttons
        self.fragments: dict[str, str] = {}  # widget id -> the fragment that drew it (a change reruns only that)
        self.session_id = ""  # the server's id of this session, from its new_session message
        self.last_body = b""  # what the last fetch received
        self.cookies = http.cookiejar.CookieJar() if cookies else None
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    async def __aenter__(self) -> WsSession:
        headers = {}
        if self.cookies is not None:  # load the page first, as a browser does, and keep what it sets
            await asyncio.to_thread(self._get, "/")
            headers["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in self.cookies)
        self.ws = await websockets.connect(
            self.ws_url, subprotocols=["streamlit"], max_size=None, additional_headers=headers
        )
        return self

    def _get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        """GET a path of the app with the session's cookies: (status, body); an HTTP error is a status, not raised."""
        try:
            with self._opener.open(self.url + path, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as e:
            return e.code, b""

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()

    async def rerun(
        self,
        page: str | None = None,
        timeout: float = 60,
        query: str = "",
        trigger: str | None = None,
        fragment: str = "",
    ) -> Run:
        """Ask for a run (of `page`, or the current page with the current widget states) and wait for its end.

        `query`: the URL's query string (a link opened with parameters); `trigger`: the id of a button this run
        presses (a form's submit button sends the form's values with it, as the states already held here);
        `fragment`: run only this fragment (st.fragment), as a browser asks when a widget drawn inside it changed.
        """
        if page is not None and page != self.page:
            self.page, self.states, self.fragments, self.shown = page, {}, {}, {}
        msg = BackMsg()
        msg.rerun_script.page_name = self.page
        msg.rerun_script.query_string = query
        msg.rerun_script.fragment_id = fragment
        msg.rerun_script.widget_states.widgets.extend(self.states.values())
        if trigger is not None:
            msg.rerun_script.widget_states.widgets.append(WidgetState(id=trigger, trigger_value=True))
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        run = await asyncio.wait_for(self._read_until_finished(), timeout)
        run.seconds = time.perf_counter() - start
        if fragment:  # the rest of the page stays as the last full run drew it; the section's own parts are new
            kept = {k: v for k, v in self.controls.items() if self.fragments.get(k) != fragment}
            exports = [e for e in self.exports if self.fragments.get(e) != fragment]
            self.controls, self.exports = kept | run.controls, exports + run.exports
        else:
            self.controls, self.exports = run.controls, run.exports
        self.fragments.update(run.fragments)
        for wid, widget in run.controls.items():
            if widget.set_value or wid not in self.shown:
                self.shown[wid] = widget
        return run

    async def _read_until_finished(self) -> Run:
        run = Run(0.0, "")
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await self.ws.recv())
            kind = fm.WhichOneof("type")
            if kind == "script_finished":
                run.status = ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished)
                if fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return run
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                self._note(fm, run)
            elif kind == "new_session":
                self.session_id = fm.new_session.initialize.session_id

    @staticmethod
    def _note(fm: ForwardMsg, run: Run) -> None:
        element = fm.delta.new_element
        kind = element.WhichOneof("type")
        if kind == "exception":
            run.errors.append(f"exception: {element.exception.type}: {element.exception.message[:120]}")
        elif kind == "alert" and element.alert.format == Alert.ERROR:
            run.errors.append(f"error box: {element.alert.body[:120]}")
        elif kind == "alert" and element.alert.format == Alert.WARNING:
            run.warnings.append(element.alert.body)
        elif kind == "progress":
            run.progress.append((time.perf_counter(), element.progress.text))
        elif kind == "vega_lite_chart":
            run.charts += 1
        elif kind == "download_button" and element.download_button.deferred_file_id:
            run.exports.append(element.download_button.deferred_file_id)
            if fm.delta.fragment_id:
                run.fragments[element.download_button.deferred_file_id] = fm.delta.fragment_id
        if fm.metadata.delta_path[:1] == [MAIN] and kind is not None and hasattr(getattr(element, kind), "id"):
            widget = getattr(element, kind)
            run.widgets[widget.id] = widget
            if fm.delta.fragment_id:
                run.fragments[widget.id] = fm.delta.fragment_id
            if kind in ("slider", "checkbox") and not widget.disabled and not widget.form_id:
                run.controls[widget.id] = widget

    def pick_change(self, rng: random.Random) -> tuple[str, WidgetState] | None:
        """A new valid value for a random slider or checkbox of the current page, as the browser would send it."""
        if not self.controls:
            return None
        return self.pick_value(rng.choice(sorted(self.controls)), rng)

    def pick_value(self, wid: str, rng: random.Random) -> tuple[str, WidgetState] | None:
        """A new valid value for the slider or checkbox `wid` (None if it has no other value)."""
        widget, now = self.controls[wid], self._value(wid)
        state = WidgetState(id=wid)
        if hasattr(widget, "step") and widget.options:  # a select_slider: the chosen option's label
            current = int((list(now) or [0])[0])
            label = widget.options[rng.choice([i for i in range(len(widget.options)) if i != current])]
            state.string_array_value.data[:] = [label]
            return f"select_slider {widget.label!r} -> {label}", state
        if hasattr(widget, "step"):
            current = (list(now) or [widget.min])[0]
            n = round((widget.max - widget.min) / widget.step)
            choices = [round(widget.min + i * widget.step, 10) for i in range(n + 1)]
            choices = [v for v in choices if abs(v - current) > widget.step / 2]
            if not choices:
                return None
            state.double_array_value.data[:] = [rng.choice(choices)]
            return f"slider {widget.label!r} -> {state.double_array_value.data[0]:g}", state
        previous = self.states.get(wid)
        state.bool_value = not (previous.bool_value if previous is not None else now)
        return f"checkbox {widget.label!r} -> {state.bool_value}", state

    def _value(self, wid: str):
        """The value the browser shows for `wid` as the server drew it (indices for a select slider)."""
        widget = self.shown.get(wid, self.controls[wid])
        if not widget.set_value:
            return widget.default
        if hasattr(widget, "step") and widget.options:  # a select slider's set value comes as option labels
            return [list(widget.options).index(label) for label in widget.raw_value]
        return widget.value

    def current(self, wid: str) -> WidgetState:
        """The state that keeps slider or checkbox `wid` at its present value: what was sent, or what is shown."""
        if wid in self.states:
            return self.states[wid]
        widget, now, state = self.controls[wid], self._value(wid), WidgetState(id=wid)
        if hasattr(widget, "step") and widget.options:
            state.string_array_value.data[:] = [widget.options[int(i)] for i in now]
        elif hasattr(widget, "step"):
            state.double_array_value.data[:] = list(now)
        else:
            state.bool_value = now
        return state

    async def set(self, state: WidgetState, timeout: float = 60) -> Run:
        """Send one widget's new state, as a browser does after a change (only its fragment, if it has one)."""
        self.states[state.id] = state
        return await self.rerun(timeout=timeout, fragment=self.fragments.get(state.id, ""))

    async def change(self, rng: random.Random, timeout: float = 60) -> tuple[str, Run] | None:
        picked = self.pick_change(rng)
        if picked is None:
            return None
        what, state = picked
        return what, await self.set(state, timeout)

    async def download(self, file_id: str, timeout: float = 60) -> Download:
        """Click a deferred download button: ask the server to make the file, then fetch the URL it answers.

        The server makes the file in its own memory, so the fetch must reach the process that holds this
        session's websocket: behind several processes, only sticky sessions make it succeed.
        """
        return await self.fetch(await self.make_file(file_id, timeout), timeout)

    async def make_file(self, file_id: str, timeout: float = 60) -> str:
        """The first half of a click on a deferred download button: the server makes the file; its URL."""
        msg = BackMsg()
        msg.backend_operation_request.request_id = str(uuid.uuid4())
        msg.backend_operation_request.session_id = self.session_id
        msg.backend_operation_request.deferred_file.file_id = file_id
        await self.ws.send(msg.SerializeToString())
        return await asyncio.wait_for(self._read_until_response(msg.backend_operation_request.request_id), timeout)

    async def fetch(self, url: str, timeout: float = 60) -> Download:
        """The second half: the browser fetches the URL the server answered."""
        status, body = await asyncio.to_thread(self._get, url, timeout)
        self.last_body = body
        return Download(url, status, len(body))

    async def _read_until_response(self, request_id: str) -> str:
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await self.ws.recv())
            response = fm.backend_operation_response
            if fm.WhichOneof("type") == "backend_operation_response" and response.request_id == request_id:
                if response.error_msg:
                    raise RuntimeError(f"the server could not make the download: {response.error_msg}")
                return response.deferred_file.url
