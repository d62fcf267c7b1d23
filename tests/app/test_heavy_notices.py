"""Heavy work cut short by a restart says so: while a benchmark or a training runs, the tab's address carries
`running=<kind>`; a session that finds it there without having stopped the run itself (a new session after a
restart, or one whose tab went away) tells the student, keeps nothing, and offers the run again."""

import time
import tomllib

import pytest
import streamlit as st
from app_helpers import APP, assert_clean, open_link
from streamlit.testing.v1 import AppTest

from explorer.tables import learning
from explorer.tables import scaling as tables
from explorer.ui import heavy

SCALING = "views/scaling.py"
LEARNING = "views/learning.py"
TINY_BENCH = {"bench_max_n": "512", "bench_d": "16", "bench_heads": "1", "bench_block": "32", "bench_methods": "naive"}
TINY_TRAINING = {"learn_d_model": "16", "learn_steps": "20"}


def words(lang: str, page: str, *keys: str) -> str:
    with open(APP.replace("app.py", f"locales/{lang}/{page}.toml"), "rb") as f:
        value = tomllib.load(f)
    for key in keys:
        value = value[key]
    return value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_benchmark_cut_short_by_a_restart_says_so_and_runs_again_on_request(lang):
    at = open_link(
        SCALING, {**TINY_BENCH, "lang": lang, "seed": {"en": "5151", "zh": "5156"}[lang], heavy.RUNNING: "benchmark"}
    )
    assert_clean(at)
    assert [w.value for w in at.warning if w.value == words(lang, "scaling", "interrupted")]
    assert not at.get("vega_lite_chart")  # nothing runs by itself
    assert heavy.RUNNING not in at.query_params  # said once
    at.button(key="bench_run_again").click().run()
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2
    assert not [w for w in at.warning if w.value == words(lang, "scaling", "interrupted")]
    assert heavy.RUNNING not in at.query_params  # the run ended: the address no longer says it runs


def test_pressing_run_after_a_restart_runs_and_still_says_the_last_run_did_not_finish():
    """The first message a reconnected tab sends may be the student's click on Run: that click is obeyed."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {**TINY_BENCH, "seed": "5157", heavy.RUNNING: "benchmark"}.items():
        at.query_params[key] = value
    at.switch_page(SCALING)
    at.run()  # stands for the page the tab had drawn before the restart (the mark is read and cleared here) ...
    at.query_params[heavy.RUNNING] = "benchmark"
    at.session_state["_heavy_running"] = None  # ... and a new session, which never started that run
    at.button(key="bench_run").click().run()
    assert_clean(at)
    assert [w for w in at.warning if w.value == words("en", "scaling", "interrupted")]
    assert not [b for b in at.button if b.key == "bench_run_again"]
    assert len(at.get("vega_lite_chart")) == 2


def test_a_benchmark_this_session_stopped_itself_gives_no_notice():
    """Cancel reruns the page with the address of the moment of the click, mark included: this session knows the
    run was its own and stopped on purpose."""
    at = open_link(SCALING, {**TINY_BENCH, "seed": "5152"})
    at.session_state["_heavy_running"] = "benchmark"
    at.query_params[heavy.RUNNING] = "benchmark"
    at.run()
    assert_clean(at)
    assert not [w for w in at.warning if w.value == words("en", "scaling", "interrupted")]
    assert heavy.RUNNING not in at.query_params


def test_the_address_says_a_benchmark_runs_while_it_runs(monkeypatch):
    during = []
    measure = tables.run_method

    def watched(*args, **kwargs):
        during.append(st.query_params.get(heavy.RUNNING))
        return measure(*args, **kwargs)

    monkeypatch.setattr(tables, "run_method", watched)
    at = open_link(SCALING, {**TINY_BENCH, "seed": "5153"})
    at.button(key="bench_run").click().run()
    assert_clean(at)
    assert during == ["benchmark"]
    assert heavy.RUNNING not in at.query_params


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_training_cut_short_by_a_restart_says_so_and_trains_again_on_request(lang):
    at = open_link(
        LEARNING, {**TINY_TRAINING, "lang": lang, "seed": {"en": "5154", "zh": "5155"}[lang], heavy.RUNNING: "training"}
    )
    assert_clean(at)
    notice = words(lang, "common", "training", "interrupted")
    assert [w.value for w in at.warning if w.value == notice]
    assert "learn_snapshot" not in [s.key for s in at.select_slider]  # untrained: nothing ran by itself
    at.button(key="training_again").click().run()
    assert_clean(at)
    assert at.select_slider(key="learn_snapshot").options[-1] == "20"  # trained on the click
    assert not [w for w in at.warning if w.value == notice]
    assert heavy.RUNNING not in at.query_params


def test_a_server_whose_memory_will_not_fall_says_so_in_chinese_not_run_again_later(monkeypatch):
    """ATTN_SERVER_MEMORY_MB=600 on a warm server (~560 MiB at rest): every entry is skipped, and the page says that
    running again will not change it, in the viewer's language."""
    monkeypatch.setattr(heavy, "headroom", lambda: 0)
    monkeypatch.setattr(heavy, "outlook", lambda: heavy.Outlook(limit=600, reserve=128, held=580, floor=560))
    at = open_link(SCALING, {**TINY_BENCH, "lang": "zh", "seed": "5158"})
    at.button(key="bench_run").click().run()
    assert_clean(at)
    never = words("zh", "common", "memory", "never").split("：")[0]  # 这台服务器没有可供实时基准测试使用的空闲内存
    (warning,) = [w.value for w in at.warning if w.value.startswith(never)]
    assert "600" in warning and "560" in warning and "再运行一次也不会改变" in warning
    assert not [w for w in at.warning if "等其他繁重任务结束后" in w.value]


def test_a_rerun_served_from_the_store_leaves_the_address_alone(monkeypatch):
    """Only a benchmark that measures marks the address: a warm rerun (the axes flipped) sends no URL change."""
    at = open_link(SCALING, {**TINY_BENCH, "seed": "5159"})
    at.button(key="bench_run").click().run()
    marked = []
    mark = heavy.announced
    monkeypatch.setattr(heavy, "announced", lambda kind: (marked.append(kind), mark(kind))[1])
    at.toggle(key="bench_log_axes").set_value(False).run()
    assert_clean(at)
    assert marked == [] and len(at.get("vega_lite_chart")) == 2


def tiny_training_need_mib() -> float:
    """What the page's tiny training asks the line for (the same function the page's click uses)."""
    cfg = learning.learn_config("reverse", 16, 1, 1, learning.AUTO, 20, True, 0)
    return learning.cost(cfg)[2]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", ["never", "smaller", "later"])
def test_a_training_that_does_not_fit_the_servers_memory_is_not_run_and_says_when_it_could(monkeypatch, lang, case):
    """ATTN_SERVER_MEMORY_MB set from what the test process holds (its floor at rest put 200 MiB below it now): no
    room at all (never), less than the run needs even at rest (smaller), or room at rest but not now (later)."""
    need = tiny_training_need_mib()
    held = heavy.resident_bytes() / 2**20
    floor = heavy.Floor(heavy.FLOOR_WINDOW_S)
    floor.add(int((held - 200) * 2**20), time.monotonic())
    monkeypatch.setattr(heavy, "resting", lambda: floor)
    # later: 150 MiB free at rest, and 50 MiB less than nothing now (what the process holds may move a little)
    limit = heavy.RESERVE_MB + {"never": 0.5, "smaller": held - 200 + need / 2, "later": held - 50}[case]
    monkeypatch.setenv("ATTN_SERVER_MEMORY_MB", str(limit))
    seed = {"never": 5160, "smaller": 5162, "later": 5164}[case] + (lang == "zh")
    at = open_link(LEARNING, {**TINY_TRAINING, "lang": lang, "seed": str(seed)})
    at.button(key="learn_train").click().run()
    assert_clean(at)
    start = words(lang, "common", "training_memory", case).split("{")[0]
    (warning,) = [w.value for w in at.warning if w.value.startswith(start)]
    assert f"{need:.0f} MiB" in warning or case == "never"
    assert "learn_snapshot" not in [s.key for s in at.select_slider]  # nothing trained
    assert heavy.RUNNING not in at.query_params
