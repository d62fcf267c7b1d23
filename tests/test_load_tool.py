"""The load tool's heavy sessions: the settings they put in the URL are the page's heaviest, and accepted by it;
their waiting time is read from the progress bar's texts."""

from app_helpers import assert_clean, open_link

from explorer.tables import scaling as tables
from tools.load_test import _waiting_prefix, heaviest_settings, waited


def test_the_heaviest_settings_are_what_the_scaling_page_offers_at_its_far_ends():
    link = heaviest_settings()
    at = open_link("views/scaling.py", link)
    assert_clean(at)
    assert not at.toast  # no URL value was refused
    assert at.select_slider(key="bench_max_n").value == max(tables.MAX_N_OPTIONS)
    for key in ("bench_d", "bench_heads"):
        control = at.select_slider(key=key)
        assert str(control.value) == control.options[-1] == link[key]
    assert at.select_slider(key="bench_budget_mb").value == max(tables.budget_options())
    assert at.select_slider(key="bench_block").value == 32  # the smallest tile: the slowest run
    assert at.slider(key="bench_time_limit").value == at.slider(key="bench_time_limit").max
    assert at.toggle(key="bench_causal").value is False
    assert at.button_group(key="bench_methods").value == list(tables.method_options(tables.live_device()))
    assert not at.get("vega_lite_chart")  # filled in, not run: the load test presses the button itself


def test_waiting_time_is_summed_from_each_waiting_text_to_the_next_other_one():
    wait = _waiting_prefix() + "1 benchmark(s) ahead"
    progress = [(0.0, "Benchmarking naive …"), (0.5, wait), (1.0, wait), (3.0, "Benchmarking naive: n=128 (0/3)")]
    progress += [(4.0, wait), (6.5, "Benchmarking tiled …"), (7.0, wait)]  # still waiting at the end: not counted
    assert waited(progress, _waiting_prefix()) == 2.5 + 2.5
    assert waited([], _waiting_prefix()) == 0
