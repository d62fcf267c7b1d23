"""A page that stops early (st.stop) still gets what the router draws around every page: the bottom lesson bar, the
sidebar's link and teacher panels, and the notices about what its link had wrong, in that same run."""

import pytest
from app_helpers import assert_clean, open_link

from explorer.ui.registry import LESSON

BAD_SIDEBAR_VALUE = {"projector": "maybe"}  # a sidebar toggle's value that the link gets wrong: one notice
STOPS = {
    "scaling, from a link with benchmark settings (waits for Run)": (
        "views/scaling.py",
        {"bench_max_n": "1024", "bench_d": "7"},  # d = 7 is not an option: a second notice
        lambda at: any("Press **Run benchmark**" in i.value for i in at.info),
    ),
    "√d_k under training, default view (untrained)": (
        "views/learning_scale.py",
        {},
        lambda at: any("Press **Train both**" in i.value for i in at.info),
    ),
    "learning with too-heavy settings": (
        "views/learning.py",
        {"learn_d_model": "256", "learn_layers": "2", "learn_steps": "1000"},
        lambda at: any("times the work one click may take" in w.value for w in at.warning),
    ),
}


@pytest.mark.parametrize("kind", list(STOPS))
def test_a_page_that_stops_early_keeps_the_routers_parts(kind):
    path, params, stopped_early = STOPS[kind]
    at = open_link(path, {**params, **BAD_SIDEBAR_VALUE, "lesson": "true"})
    assert_clean(at)
    assert stopped_early(at), "the page no longer stops early here: the test would prove nothing"
    i = [p.path for p in LESSON].index(path)
    bars = [m.value for m in at.markdown if "**Lesson**" in m.value and f"stop {i + 1} of" in m.value]
    assert len(bars) == 2, bars  # above the page and below it
    panels = [e.label for e in at.sidebar.get("expander")]
    assert panels == ["Link to this view", "Teacher: a link for the class"]
    notices = [t.value for t in at.toast]
    assert len(notices) == 1 + ("bench_d" in params) and all("ignored" in n for n in notices), notices
    assert at.query_params["projector"] == "false"  # the link now says what is shown
