"""Controls mirrored in the URL: set controls -> URL -> a fresh app from that URL -> the same view."""

from app_helpers import APP, assert_clean, metric, open_link
from streamlit.testing.v1 import AppTest

PAGE = "views/sqrt_dk.py"


def test_controls_round_trip_through_the_url():
    at = open_link(PAGE, {})
    at.select_slider(key="d_k").set_value(256).run()
    at.selectbox(key="distribution").set_value("shifted").run()
    at.slider(key="mean").set_value(1.2).run()
    at.toggle(key="overlay").set_value(False).run()
    at.sidebar.number_input(key="seed").set_value(42).run()
    assert_clean(at)
    url = dict(at.query_params)
    assert url["d_k"] == "256" and url["distribution"] == "shifted" and url["seed"] == "42"
    view = metric(at, "Var(q·k)")

    again = open_link(PAGE, url)  # another student opens the copied link
    assert_clean(again)
    assert again.select_slider(key="d_k").value == 256
    assert again.selectbox(key="distribution").value == "shifted"
    assert again.slider(key="mean").value == 1.2
    assert again.toggle(key="overlay").value is False
    assert again.sidebar.number_input(key="seed").value == 42
    assert metric(again, "Var(q·k)") == view  # same seed, same controls: the same numbers


def test_invalid_or_hostile_values_fall_back_to_defaults_with_a_notice():
    at = open_link(
        PAGE,
        {
            "d_k": "100",  # not an option
            "temperature": "nan",
            "mean": "1e999",
            "distribution": "<script>alert(1)</script>",
            "seed": "-5",
            "overlay": "maybe",
            "n_pairs": "9" * 500,
        },
    )
    assert_clean(at)
    assert at.select_slider(key="d_k").value == 64
    assert at.slider(key="temperature").value == 1.0
    assert at.selectbox(key="distribution").value == "normal"
    assert at.sidebar.number_input(key="seed").value == 0
    assert at.toggle(key="overlay").value is True
    notices = [t.value for t in at.toast]
    assert len(notices) == 7 and all("ignored" in n for n in notices)
    assert at.query_params["d_k"] == "64"  # the URL now describes what is shown


def test_state_survives_a_page_switch():
    at = open_link(PAGE, {})
    at.select_slider(key="d_k").set_value(512).run()
    at.switch_page("views/home.py").run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert at.select_slider(key="d_k").value == 512


def round_trip(page: str, change) -> tuple[AppTest, AppTest]:
    """Open `page`, apply `change(at)`, then open the resulting URL in a fresh app."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    at.run()
    change(at)
    assert_clean(at)
    again = open_link(page, dict(at.query_params))
    assert_clean(again)
    return at, again


def test_equivariance_controls_round_trip():
    def change(at):
        at.slider(key="n").set_value(12).run()
        at.selectbox(key="perm_kind").set_value("typed").run()
        at.text_input(key="perm_text").input("3,2,1,0,4,5,6,7,8,9,10,11").run()
        at.radio(key="precision").set_value(at.radio(key="precision").options[-1]).run()
        at.toggle(key="causal").set_value(True).run()

    at, again = round_trip("views/equivariance.py", change)
    assert again.slider(key="n").value == 12
    assert again.selectbox(key="perm_kind").value == "typed"
    assert again.text_input(key="perm_text").value == "3,2,1,0,4,5,6,7,8,9,10,11"
    assert again.radio(key="precision").value == at.radio(key="precision").value
    assert again.toggle(key="causal").value is True
    assert [m.value for m in again.metric] == [m.value for m in at.metric]


def test_saturation_controls_round_trip():
    def change(at):
        at.select_slider(key="sat_d_k").set_value(512).run()
        at.select_slider(key="sat_temperature").set_value(10.0).run()

    at, again = round_trip("views/saturation.py", change)
    assert again.select_slider(key="sat_d_k").value == 512
    assert again.select_slider(key="sat_temperature").value == 10.0
    assert [m.value for m in again.metric] == [m.value for m in at.metric]
