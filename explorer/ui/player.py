"""Play through a trained run's snapshots (the Learning pages): Play and Pause buttons, and a snapshot slider that
moves one snapshot further every PLAY_S while its run plays."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import streamlit as st

from explorer.ui import state as controls

PLAY_S = 0.8  # seconds per snapshot while playing


@dataclass(frozen=True)
class Player:
    key: str  # the snapshot slider's key (and its URL name)
    playing: str  # the session-state key holding the run being played, while its animation runs
    buttons_key: str  # the buttons' keys: <buttons_key>_play and <buttons_key>_pause

    def buttons(self, run_id: Hashable, steps: Sequence[int], play: str, pause: str) -> None:
        row = st.container(horizontal=True, gap="small")
        row.button(
            play, key=f"{self.buttons_key}_play", on_click=self._play, args=(run_id, steps[0], steps[-1]),
            icon=":material/play_arrow:",
        )  # fmt: skip
        row.button(pause, key=f"{self.buttons_key}_pause", on_click=self._pause, icon=":material/pause:")

    def run_every(self, run_id: Hashable) -> float | None:
        """The section's rerun interval: PLAY_S while `run_id` plays, else None."""
        return PLAY_S if st.session_state.get(self.playing) == run_id else None

    def slider(self, run_id: Hashable, steps: Sequence[int], label: str, help: str) -> int:
        """The snapshot slider over `steps` (the last at first); while `run_id` plays, one snapshot further."""
        steps = list(steps)
        if st.session_state.get(self.key) not in steps:
            st.session_state[self.key] = steps[-1]
        if st.session_state.get(self.playing) == run_id:
            i = steps.index(st.session_state[self.key])
            st.session_state[self.key] = steps[min(i + 1, len(steps) - 1)]
            if i + 2 >= len(steps):  # the last snapshot: stop the clock (a full rerun drops run_every)
                st.session_state.pop(self.playing, None)
                st.rerun()
        return controls.select_slider(label, steps, steps[-1], key=self.key, help=help)

    def _play(self, run_id: Hashable, first_step: int, last_step: int) -> None:
        """on_click of Play: animate from the first snapshot when the slider stands at the last one."""
        st.session_state[self.playing] = run_id
        if st.session_state.get(self.key) == last_step:
            st.session_state[self.key] = first_step

    def _pause(self) -> None:
        st.session_state.pop(self.playing, None)
