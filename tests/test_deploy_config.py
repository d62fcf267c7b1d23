"""The deployment config that a classroom relies on."""

import pathlib
import tomllib

CONFIG = tomllib.loads((pathlib.Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())


def test_tracebacks_are_hidden_and_the_file_watcher_is_off():
    assert CONFIG["client"]["showErrorDetails"] == "none"
    assert CONFIG["server"]["fileWatcherType"] == "none"


def test_requirements_take_the_cpu_build_of_torch():
    lines = (pathlib.Path(__file__).resolve().parents[1] / "requirements.txt").read_text().splitlines()
    options = [line for line in lines if line.startswith("--")]
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    assert "torch==2.13.0" in lines
