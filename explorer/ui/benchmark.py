"""A benchmark on a page: a method's live run, measured in the server's line for heavy work (explorer.ui.heavy) under
a progress bar, kept for the whole server when it is worth keeping (tables.scaling.measured) and otherwise for the
session that measured it, until that session asks for a new run.

The page's only door to the heavy line: what it needs of it (Full, interrupted, the short-of-memory words) is
re-exported here, so a view imports no caching or line machinery (tests/test_repo.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import streamlit as st

from explorer.tables import scaling as tables
from explorer.ui import heavy
from explorer.ui.i18n import t

KIND = "benchmark"  # the heavy line's name for this work, in the URL while it runs
# A run measured while the server was busy, too noisy to state a slope or cut short for memory (tables.keepable)
# serves the whole server for a minute only (tables.measured), and the session that saw it for as long as it stays
# on the setting: kept here, by setting, until forget() (its "Run benchmark" pressed). SEEN: when each run this
# session saw and asked to replace ended; only a run measured after that answers it.
UNKEPT = "_bench_unkept_runs"
SEEN = "_bench_replaced_runs_ended"

Full = heavy.Full  # the server's line is full: the page says so and keeps working
Say = Callable[[int, int, str], str]  # say(done, total, entry): the progress bar's words


def interrupted() -> bool:
    """Whether this tab's address says a benchmark was under way that no run of this session saw end (a restart):
    call it at every run of the page, before a benchmark may start again (heavy.interrupted)."""
    return heavy.interrupted(KIND)


def short_of_memory_text(count: int, smallest_need_mib: float) -> str:
    """What is true about `count` sizes skipped for the server's memory, in the viewer's language."""
    return heavy.short_of_memory_text(count, smallest_need_mib)


def forget() -> None:
    """A new press of "Run benchmark": measure again what the server did not keep, unless another student's run
    ended since the one this session saw (a student who saw none takes the one the server shares)."""
    seen = st.session_state.setdefault(SEEN, {})
    seen.update({key: run.ended for key, run in st.session_state.pop(UNKEPT, {}).items()})


def measure(method: str, settings: tables.LiveSettings, say: Say, where=st) -> object:
    """One method's live rows, measured now, its progress bar made in `where` and emptied once the rows are in.
    The run waits for its turn in the server's line for heavy work, the bar showing its place."""
    bar = where.progress(0.0, text=say(0, 1, ""))

    def progress(done, total, entry):
        bar.progress(done / total, text=say(done, total, entry))

    def waiting(ahead):
        bar.progress(0.0, text=t("scaling.queue.waiting", ahead=ahead))

    # said in the URL while it waits and runs (a restart's new session tells the student), only when it measures:
    # a rerun answered with a run the server kept changes no address
    with heavy.announced(KIND), heavy.heavy_slot(waiting):
        rows = tables.run_method(method, settings, progress)
    bar.empty()
    return rows


def measured(method: str, settings: tables.LiveSettings, say: Say, where=st) -> tables.Measured:
    """One method's live run: once for the whole server per setting while keepable; a run the server did not keep
    serves this session's reruns and, for a minute, the students who open the same setting."""
    mine = st.session_state.setdefault(UNKEPT, {})
    if (method, settings) in mine:
        return mine[method, settings]
    since = st.session_state.get(SEEN, {}).get((method, settings), -math.inf)
    run = tables.measured(method, settings, lambda: measure(method, settings, say, where), since)
    if not run.kept:
        mine[method, settings] = run
    return run
