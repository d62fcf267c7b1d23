"""Assertions shared by the AppTest files."""

import pathlib

from streamlit.testing.v1 import AppTest

APP = str(pathlib.Path(__file__).resolve().parents[1] / "app.py")


def assert_clean(at: AppTest) -> None:
    """No exception and no error box on the page."""
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def open_link(path: str, params: dict) -> AppTest:
    """A fresh session opened from a copied link: the page and its query parameters, nothing else."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(path)
    return at.run()
