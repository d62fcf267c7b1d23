"""The frame every page shares: header, formula, what to notice, predict-first, seed, friendly errors."""

from __future__ import annotations

import contextlib
import platform

import streamlit as st
import torch

from ui import state

DEFAULT_SEED = 0


def header(title: str, lede: str) -> None:
    st.title(title)
    st.markdown(lede)


def formula(latex: str, caption: str | None = None) -> None:
    st.latex(latex)
    if caption:
        st.caption(caption)


def notice(points: list[str]) -> None:
    """Two to four sentences of what to look for."""
    st.markdown("**What to notice**\n" + "\n".join(f"- {p}" for p in points))


def predict_first(question: str, answer: str) -> None:
    """A question shown up front; its answer stays folded until the student asks for it."""
    st.info(f"**Predict first:** {question}", icon=":material/psychology_alt:")
    with st.expander("Reveal the answer"):
        st.markdown(answer)


def seed() -> int:
    """The random seed chosen in the sidebar (every page's randomness flows from it)."""
    return int(st.session_state.get("seed", DEFAULT_SEED))


@st.cache_resource
def hardware_label() -> str:
    """What the app computes on: the GPU's name, or the CPU with its core count."""
    if torch.cuda.is_available():
        return f"GPU: {torch.cuda.get_device_name(0)}"
    cpu = platform.processor() or platform.machine()
    return f"CPU ({torch.get_num_threads()} threads, {cpu}) · torch {torch.__version__}"


def sidebar() -> None:
    """The sidebar shared by all pages: the seed and the hardware in use."""
    state.number_input(
        "Random seed",
        0,
        2**31 - 1,
        DEFAULT_SEED,
        key="seed",
        where=st.sidebar,
        help="Every random draw on every page comes from this seed: same seed, same numbers.",
    )
    st.sidebar.caption(hardware_label())


@contextlib.contextmanager
def friendly_errors(what: str):
    """Turn a failure inside one part of a page into a message; the rest of the page keeps working."""
    try:
        yield
    except ValueError as err:
        st.warning(f"{what}: {err}", icon=":material/error:")
    except (RuntimeError, MemoryError) as err:
        st.error(f"{what} could not be computed ({type(err).__name__}). Try smaller sizes.", icon=":material/error:")
