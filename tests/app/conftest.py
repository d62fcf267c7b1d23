import pytest
from app_helpers import APP
from streamlit.testing.v1 import AppTest


@pytest.fixture
def open_page():
    """open_page("views/x.py") -> an AppTest that has rendered that page through the real router."""

    def _open(path: str, **session) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        for key, value in session.items():
            at.session_state[key] = value
        at.switch_page(path)
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        return at

    return _open
