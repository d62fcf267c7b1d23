"""The app leaves nothing alive at exit that an extension reports: app.py freezes the collector's objects once
per process, and frozen objects are never freed, so Triton's nanobind module (loaded before the app, as by
tests/core/test_flash_triton.py in the same pytest run) printed ~600 'nanobind: leaked' lines when the process ended."""

import subprocess
import sys

import pytest
from app_helpers import APP

_RUN = f"""
import os
os.environ["TRITON_INTERPRET"] = "1"  # as test_flash_triton imports it
import triton, triton.language
del os.environ["TRITON_INTERPRET"]
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({APP!r}, default_timeout=120).run()
assert not at.exception, [e.message for e in at.exception]
import gc
print("frozen", gc.get_freeze_count())
"""


def test_a_process_that_ran_the_app_with_triton_loaded_exits_without_nanobind_leak_reports():
    pytest.importorskip("triton")
    done = subprocess.run([sys.executable, "-c", _RUN], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) > 0  # the app did freeze the objects, as a server does
    leaks = [line for line in done.stderr.splitlines() if line.startswith("nanobind: leaked")]
    assert not leaks, leaks
