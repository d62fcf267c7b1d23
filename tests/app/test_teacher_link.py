"""The class flow: a teacher's link that a class can type or scan, reaches the students' devices, and leaves
projector mode on the teacher's screen."""

import io
import urllib.parse

from app_helpers import open_link
from PIL import Image

from explorer.ui.page import SHARE_OPEN, TEACHER_OPEN
from explorer.ui.sidebar import QR_PX, class_base, class_link, qr_png

PAGE = "views/sqrt_dk.py"


def teacher_link(at) -> str:
    at.session_state[SHARE_OPEN] = at.session_state[TEACHER_OPEN] = True
    return at.run().sidebar.get("code")[1].value


def params(link: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))


def test_projector_mode_stays_on_the_teachers_screen_unless_the_teacher_asks():
    at = open_link(PAGE, {"projector": "true"})
    assert at.query_params["projector"] == "true"  # the teacher's own view is in projector mode
    assert "projector" not in params(teacher_link(at))
    at.sidebar.checkbox(key="teacher_projector").check().run()
    assert params(at.sidebar.get("code")[1].value)["projector"] == "true"


def test_the_class_link_leaves_out_what_is_at_its_default():
    at = open_link(PAGE, {})
    share, teacher = at, teacher_link(at)
    full = params(share.sidebar.get("code")[0].value)
    assert len(full) > 5  # the view's link names every control
    assert params(teacher) == {"lesson": "true"}
    at.select_slider(key="d_k").set_value(512).run()
    assert params(at.sidebar.get("code")[1].value) == {"d_k": "512", "lesson": "true"}


def test_the_class_link_never_carries_the_mark_of_heavy_work_under_way():
    here = {"d_k": "512", "running": "benchmark"}  # the teacher's address while a benchmark runs
    link = class_link("http://host/sqrt_dk", here, {"d_k": "64"}, lesson="true")
    assert params(link) == {"d_k": "512", "lesson": "true"}


def test_a_loopback_address_becomes_the_network_address_students_can_reach():
    here = "http://localhost:8501/sqrt_dk"
    url, note = class_base(here, None, lambda: "192.168.1.20")
    assert url == "http://192.168.1.20:8501/sqrt_dk" and "192.168.1.20:8501" in note
    url, note = class_base("http://127.0.0.1:8501/sqrt_dk", "127.0.0.1", lambda: "192.168.1.20")
    assert url == "http://127.0.0.1:8501/sqrt_dk" and "--server.address 0.0.0.0" in note  # it cannot: says so
    assert class_base("https://class.example.org/sqrt_dk", None, lambda: "10.0.0.2") == (
        "https://class.example.org/sqrt_dk",
        None,
    )


def test_the_qr_code_is_large_enough_for_the_back_of_the_room():
    image = Image.open(io.BytesIO(qr_png("http://192.168.1.20:8501/sqrt_dk?d_k=512&lesson=true")))
    assert image.width == image.height >= QR_PX
    at = open_link(PAGE, {})
    teacher_link(at)
    assert not at.get("image")
    at.sidebar.button(key="teacher_qr").click().run()
    assert at.get("dialog") and at.get("image"), "a click opens a dialog with the QR code"
    assert at.get("code")[-1].value == at.sidebar.get("code")[1].value  # the link it encodes, written below it


def test_no_multiselect_offers_streamlits_english_select_all():
    """A multiselect's list starts with "Select all", in English on a Chinese page too: our controls turn it off."""
    at = open_link("views/positional.py", {"lang": "zh"})
    assert at.multiselect and all(w.proto.select_all == 0 for w in at.multiselect)
