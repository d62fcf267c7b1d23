"""Inside a small language model: the shipped checkpoint read on typed text, good and hostile, in both languages."""

import json

import pytest
from app_helpers import assert_clean, metric, open_link

from explorer.tables import language_model as tables

PAGE = "views/language_model.py"


def warning_text(at) -> str:
    return " ".join(w.value for w in at.warning)


def test_default_text_draws_every_head_and_names_them(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    specs = at.get("vega_lite_chart")
    assert len(specs) == 6  # 2 layers of maps, scores, entropy, losses, next characters
    names = at.dataframe[0].value
    assert len(names) == 8 and set(names["layer"]) == {1, 2}
    assert any(r"\mathrm{ind}_h" in latex.value for latex in at.latex)
    assert metric(at, "layer 1 entropy (nats)")
    assert not at.warning


def test_typed_text_changes_the_reading(open_page):
    at = open_page(PAGE)
    before = at.dataframe[0].value
    at.radio(key="lm_source").set_value("own").run()
    at.text_input(key="lm_text").set_value("abc def ghi").run()
    assert_clean(at)
    losses = [m for m in at.metric if m.label.startswith("loss on repeated")]
    assert losses and losses[0].value == "—"  # no pair of this text occurs twice
    assert at.dataframe[0].value is not before


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script> [x](javascript:alert(1)) **bold** $x$",
        "注意力 is all you need",
        "tab\there",
        "right\u202eto left",
        "x",
    ],
)
def test_hostile_text_is_refused_or_shown_literally(open_page, hostile):
    at = open_page(PAGE)
    at.radio(key="lm_source").set_value("own").run()
    at.text_input(key="lm_text").set_value(hostile).run()
    assert_clean(at)
    problem = tables.text_problem(hostile)
    if problem is None:  # printable ASCII: read as text, never rendered as markup
        assert not at.warning
        assert all("<script>" not in m.value for m in at.markdown)
    else:
        assert at.warning and "The model cannot read this text." in warning_text(at)
        assert not at.get("vega_lite_chart")
        assert all("<script>" not in w.value and "\u202e" not in w.value for w in at.warning)


def test_a_link_with_text_opens_on_it_and_a_too_long_one_is_refused():
    at = open_link(PAGE, {"lm_source": "own", "lm_text": "spam eggs spam eggs"})
    assert_clean(at)
    assert at.text_input(key="lm_text").value == "spam eggs spam eggs"
    at = open_link(PAGE, {"lm_source": "own", "lm_text": "a" * (tables.MAX_TEXT + 1)})
    assert_clean(at)
    assert at.text_input(key="lm_text").value != "a" * (tables.MAX_TEXT + 1)


def test_chinese_page_words_the_refusal_in_chinese():
    at = open_link(PAGE, {"lang": "zh", "lm_source": "own", "lm_text": "注意力"})
    assert_clean(at)
    assert "模型无法读取这段文字" in warning_text(at)


def test_examples_show_their_text_and_leave_the_box_disabled(open_page):
    at = open_page(PAGE)
    for source in ("code", "plain", "repeat"):
        at.radio(key="lm_source").set_value(source).run()
        assert_clean(at)
        assert at.text_input(key="lm_text").disabled
        assert len(at.get("vega_lite_chart")) == 6


def test_an_unreadable_character_is_named_by_its_code_point():
    at = open_link(PAGE, {"lm_source": "own", "lm_text": "caf\u00e9 \u202e"})
    assert_clean(at)
    shown = warning_text(at).replace("\\", "")  # Markdown escapes, as literal() writes them
    assert "U+00E9" in shown and "U+202E" in shown


def test_fixed_height_charts_keep_their_plot_height(open_page):
    # Streamlit gives a single view without autosize {"type": "fit"}: title, axes and legend squeezed into the
    # spec's height (in Chromium the next-character plots drew at about a third of it)
    at = open_page(PAGE)
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        if isinstance(spec.get("height"), int | float) and "facet" not in spec:
            assert spec["autosize"]["type"] != "fit", spec.get("title")


def test_the_roles_caption_gives_the_derived_thresholds(open_page):
    at = open_page(PAGE)
    caption = next(c.value for c in at.caption if c.value.startswith("A head is named"))
    thresholds = tables.thresholds()
    assert f"induction ≥ {thresholds['induction']:.2f}" in caption
    assert f"previous token ≥ {thresholds['previous_token']:.2f}" in caption
    assert f"{tables.calibration_sizes()['values']} values" in caption
    words = {"first_token": "first-token sink", "duplicate_token": "duplicate token"}
    unnamed = [words[k] for k, v in thresholds.items() if v is None and k in words]
    assert all(w in caption.rsplit(":", 1)[1] for w in unnamed)
    assert not set(unnamed) & set(at.dataframe[0].value["role"])


def test_the_loss_caption_does_not_say_first_seen_pairs_cannot_be_predicted(open_page):
    # on the plain example the model gives a first-seen pair (", " after "sequence") p > 0.5: learned, not copied
    df = tables.positions(tables.EXAMPLES["plain"])
    assert df.loc[~df["repeated"], "p_next"].max() > 0.5
    at = open_page(PAGE)
    at.radio(key="lm_source").set_value("plain").run()
    caption = next(c.value for c in at.caption if c.value.startswith("The loss of the actual next character"))
    assert "cannot" not in caption and "learned in training" in caption


def test_a_short_texts_maps_leave_room_for_their_axis_titles():
    # 8 characters drew 80 px maps, each axis title running into the next head's map
    at = open_link(PAGE, {"lm_source": "own", "lm_text": "abcdefgh"})
    assert_clean(at)
    maps = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert maps["spec"]["width"] >= 160 and maps["spec"]["height"] >= 160


def test_the_stream_formula_has_its_bias_term(open_page):
    # the model's value and output projections have biases (tests/explorer: the formula reproduces layer 1)
    at = open_page(PAGE)
    assert any(r"W_V^hW_O^h+b^{(l)}" in latex.value for latex in at.latex)
