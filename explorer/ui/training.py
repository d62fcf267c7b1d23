"""Training on a page: one server-wide shelf of finished runs, and a run that waits its turn as heavy work.

A page never trains on a plain view: it looks its settings up on the shelf (`results()`), shared by every
session, so once anyone on the server trained these settings everyone sees the result; only a click on Train
runs `train_in_slot`, which waits in the server's line for heavy work (explorer.ui.heavy) with its place shown,
reports progress, stops at the page's time budget, and puts a complete run on the shelf.
A click on the page's stop button (any click, in fact) ends the script run, and with it the training: Streamlit
raises its stop exception in the next progress update, the heavy slot is freed, and nothing is kept.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable

import streamlit as st

from explorer.tables.learning import TooMuchWork
from explorer.ui import heavy
from explorer.ui.frame import friendly_errors, literal
from explorer.ui.i18n import t

SHELF_SIZE = 8  # finished runs kept for the whole server: a default run is well under a megabyte
STOPPED = "_training_stopped"  # session flag: the last run was stopped by its button
AGAIN = "_training_again"  # session flag: the interrupted notice's button asks for the run again


class Shelf:
    """A small least-recently-used dict, safe to share between the sessions' threads."""

    def __init__(self, size: int):
        self.size = size
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


@st.cache_resource
def results() -> Shelf:
    """The server's shelf of finished runs (st.cache_resource: one object shared by every session)."""
    return Shelf(SHELF_SIZE)


def stop() -> None:
    """on_click of the stop button: the click has already ended the run; remember to say so."""
    st.session_state[STOPPED] = True


def train_in_slot(
    key: Hashable,
    run: Callable[..., object],
    *,
    budget_s: float,
    stop_key: str,
    complete: Callable[[object], bool],
    where=st,
):
    """Wait for a heavy slot, then `run(keep_going=..., progress=...)`, drawing a progress bar and a stop button.

    The finished result is put on the shelf under `key` when `complete(result)` (a run cut short by the time
    budget stays in this session only). Returns the result, or None when the server's line is full (said).
    `where`: a container the page draws on every run, so that the bar and the button shift nothing below them
    (a fragment's elements further down are then replaced in place, not drawn twice).
    """
    st.session_state.pop(STOPPED, None)
    shelf = results()
    bar = where.progress(0.0, text=t("common.training.starting"))
    cancel = where.empty()
    cancel.button(t("common.training.stop"), key=stop_key, on_click=stop, icon=":material/stop_circle:")

    def waiting(ahead: int) -> None:
        bar.progress(0.0, text=t("common.training.waiting", ahead=ahead))

    started = [0.0]
    stop_now = heavy.stop_check()  # Stop, a closed tab: leave the slot before the next step, not the next bar update

    def keep_going(step: int) -> bool:
        stop_now()
        return time.monotonic() - started[0] < budget_s

    def progress(done: int, total: int, loss: float) -> None:
        if done == total or done % max(1, total // 50) == 0:  # ~50 updates: each is a message to the browser
            bar.progress(done / total, text=t("common.training.progress", done=done, total=total, loss=loss))

    try:
        with heavy.announced("training"), heavy.heavy_slot(waiting):
            result = shelf.get(key)  # someone else may have trained these settings while this one waited
            if result is None:
                started[0] = time.monotonic()
                result = run(keep_going=keep_going, progress=progress)
                if complete(result):
                    shelf.put(key, result)
    except heavy.Full:  # the line is full: say so; the page keeps showing what it has
        result = None
        where.warning(t("common.training.full"), icon=":material/hourglass_disabled:")
    bar.empty()
    cancel.empty()
    return result


def again() -> None:
    """on_click of the interrupted notice's button: train on this run."""
    st.session_state[AGAIN] = True


def interrupted_notice() -> None:
    """A run under way when the server restarted, or this tab's session was lost, never finished: say so and offer
    it again (nothing trains by itself)."""
    st.warning(t("common.training.interrupted"), icon=":material/sync_problem:")
    st.button(t("common.training.again"), key="training_again", on_click=again, icon=":material/replay:")


def was_stopped() -> bool:
    """The previous run of this session was ended by its stop button (asked once: the flag is cleared)."""
    return bool(st.session_state.pop(STOPPED, False))


def trained(
    key: Hashable,
    make_config: Callable[[], object],
    run: Callable[..., object],
    *,
    clicked: bool,
    kept_key: str,
    stop_key: str,
    budget_s: float,
    complete: Callable[[object], bool],
) -> object | None:
    """A Learning page's training, start to end: the settings checked (a too-large or bad setting is said, and the
    run ends there), the result on the server's shelf or kept in this session, and on a click of Train a new run
    `run(config, keep_going=..., progress=...)` in the line for heavy work (`train_in_slot`). Returns the result to
    show, or None before anyone trained these settings."""
    try:
        config = make_config()
    except TooMuchWork as err:
        st.warning(t("learning.too_much", factor=err.factor), icon=":material/timer_off:")
        st.stop()
    except ValueError as err:
        st.warning(t("learning.bad_settings") + " " + literal(err), icon=":material/error:")
        st.stop()
    if heavy.interrupted("training"):
        interrupted_notice()
    clicked = clicked or bool(st.session_state.pop(AGAIN, False))
    result = results().get(key)
    kept = st.session_state.get(kept_key)
    if result is None and kept is not None and kept[0] == key:
        result = kept[1]
    status = st.container()  # drawn on every run: what appears in it shifts nothing below
    if clicked:
        with status, friendly_errors(t("learning.sections.training")):
            ran = train_in_slot(
                key,
                lambda **kw: run(config, **kw),
                budget_s=budget_s,
                stop_key=stop_key,
                where=status,
                complete=complete,
            )
            result = ran or result
            if result is not None and not complete(result):  # cut short by the budget: this session's only
                st.session_state[kept_key] = (key, result)
    if was_stopped():
        status.info(t("learning.stopped"), icon=":material/stop_circle:")
    return result
