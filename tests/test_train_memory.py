"""The training line's memory estimate (explorer.tables.learning.memory_mb) against a real click's peak, measured
as tools.train_memory measures it: a fresh warmed process, peak RSS growth while it trains."""

import sys

import pytest

from tools.train_memory import measure


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status and clear_refs")
def test_the_estimate_covers_what_a_real_click_adds_at_its_peak():
    row = measure(("learning", "reorder", 128, 2, 2, 20))
    assert 0 < row["peak_mib"] <= row["estimate_mib"], row
