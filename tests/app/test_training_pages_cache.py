"""The training pages' tables take the training result itself (keyed by its cache_key): in check mode every hit is
rebuilt and compared, so a key that missed an input (the snapshot, the map shown, the heads knocked out) or a page
that changed a shared result in place fails here. And a warm rerun of a trained view builds no chart again.

Short runs with seeds no other test uses (the server-wide shelf of finished runs starts empty for them).
"""

import pytest
from app_helpers import assert_clean, open_link

from explorer.ui import cache, draw


def trained(page: str, params: dict, button: str):
    at = open_link(page, params)
    at.button(key=button).click().run()
    assert_clean(at)
    return at


@pytest.fixture
def checked():
    with cache.check():
        yield


def test_learning_keys_hold_across_snapshots_and_typed_input(checked):
    at = trained("views/learning.py", {"learn_d_model": "16", "learn_steps": "20", "seed": "161"}, "learn_train")
    for step in ("0", "20", "0"):  # the second visit of a snapshot is a hit, rebuilt and compared
        at.select_slider(key="learn_snapshot").set_value(step).run()
        assert_clean(at)
    for text in ("a b c d e f g h", "h g f e d c b a", "a b c d e f g h"):
        at.text_input(key="learn_input").input(text).run()
        assert_clean(at)


def test_scale_keys_hold_for_the_trained_pair(checked):
    at = trained("views/learning_scale.py", {"scale_d_k": "8", "scale_steps": "20", "seed": "162"}, "scale_train")
    at.run()  # every table and chart of the trained pair a hit
    assert_clean(at)


def test_induction_keys_hold_across_snapshots_maps_and_knockouts(checked):
    at = trained("views/induction.py", {"ind_steps": "40", "seed": "261"}, "ind_train")
    for step in ("0", "40", "0"):
        at.select_slider(key="ind_snapshot").set_value(step).run()
        assert_clean(at)
    for which in ("one:0", "two:0", "one:0"):
        at.button_group(key="ind_map").set_value(which).run()
        assert_clean(at)
    for heads in (["L1H0"], ["L0H0", "L1H0"], ["L1H0"]):
        at.multiselect(key="ind_knockout").set_value(heads).run()
        assert_clean(at)


@pytest.mark.parametrize(
    ("page", "params", "button"),
    [
        ("views/learning.py", {"learn_d_model": "16", "learn_steps": "20", "seed": "163"}, "learn_train"),
        ("views/induction.py", {"ind_steps": "40", "seed": "262"}, "ind_train"),
    ],
)
def test_a_warm_rerun_of_a_trained_view_builds_no_chart(monkeypatch, page, params, button):
    at = trained(page, params, button)
    built, real = [], draw._build
    monkeypatch.setattr(draw, "_build", lambda builder, *a: built.append(builder.__name__) or real(builder, *a))
    with cache.check(False):  # check mode rebuilds every hit on purpose
        at.run()
    assert_clean(at)
    assert built == []
