"""The deployment config that a classroom relies on."""

import pathlib
import tomllib

CONFIG = tomllib.loads((pathlib.Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())


def test_tracebacks_are_hidden_and_the_file_watcher_is_off():
    assert CONFIG["client"]["showErrorDetails"] == "none"
    assert CONFIG["server"]["fileWatcherType"] == "none"
