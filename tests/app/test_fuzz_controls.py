"""Every control of every page, set to random valid values (ends of ranges included) in random order:
the page must never show an exception or an error box. The walk runs in the cache's check mode: every result a
page gets from a @cached table or a chart's spec store is rebuilt and compared with the kept one, so a key that
misses an input, or a page that changes a shared result in place, fails here (explorer.ui.cache.CacheKeyError)."""

import random

import pytest
from app_helpers import APP, assert_clean
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from explorer.ui.cache import check
from explorer.ui.registry import PAGES
from tools.controls import controls, set_random

CHANGES = 6


@pytest.mark.parametrize("path", [p.path for p in PAGES])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), extreme=st.lists(st.booleans(), min_size=CHANGES, max_size=CHANGES))
def test_random_control_changes_never_fail(path, seed, extreme):
    rng = random.Random(seed)
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(path)
    with check():
        at.run()
        assert_clean(at)
        for go_extreme in extreme:
            available = list(controls(at))
            if not available:
                break
            kind, widget = rng.choice(available)
            if set_random(kind, widget, rng, extreme=go_extreme):
                at.run()
                assert_clean(at)
