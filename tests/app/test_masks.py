import random

import pytest
import torch
from app_helpers import assert_clean, metric, open_link
from streamlit.testing.v1 import AppTest

from attn_core.masks import padding_mask, sliding_window_mask

PAGE = "views/masks.py"
PLAIN = "torch.softmax, fully masked row"
LIBRARY = "masked_softmax, fully masked row"
HIDDEN_GRAD = "max |∂L/∂s| on hidden logits"
VISIBLE_GRAD = "max |∂L/∂s| on visible logits"


def fills_table(at):
    """The summary of the four recipes: one row per fact, one column per recipe (the page's only st.table)."""
    return at.table[0].value


def test_renders_at_defaults_with_formula_charts_and_a_fully_masked_row(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    # mask parts, scores, weights, fill weights, gradient, padding renormalisation, the notes' masks
    assert len(at.get("vega_lite_chart")) == 7
    assert any(r"\tilde s_{ij}" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer is folded away
    # lengths (6, 2), window 3, sequence 1: queries 4 and 5 see only padding
    assert metric(at, "fully masked rows") == "4, 5"
    assert metric(at, "hidden scores, batch") == "71%"  # 51 of 72 cells, counted in tests/core


def test_fill_value_decides_what_a_fully_masked_row_gets(open_page):
    at = open_page(PAGE)
    assert metric(at, PLAIN) == "NaN"  # -inf: 0/0
    assert metric(at, LIBRARY) == "0"
    at.segmented_control(key="mask_fill").set_value("-1e9").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "0.1667 ≈ 1/6"  # uniform over the n = 6 keys
    assert metric(at, LIBRARY) == "0"
    at.segmented_control(key="mask_fill").set_value("finfo.min").run()
    assert metric(at, PLAIN) == "0.1667 ≈ 1/6"
    table = fills_table(at)
    assert table.loc["fully masked row weight", "torch.softmax, fill -inf"] == "NaN"
    assert table.loc["fill value", "torch.softmax, fill finfo.min"] == "-3.40282e+38"  # float32's minimum


def test_uniform_weight_follows_n_and_dtype_changes_the_recipes(open_page):
    at = open_page(PAGE)
    at.segmented_control(key="mask_fill").set_value("-1e9").run()
    at.slider(key="mask_n").set_value(8).run()
    at.text_input(key="mask_lengths").set_value("8, 2").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "0.125 ≈ 1/8"
    at.selectbox(key="mask_dtype").set_value("float16").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "refused"  # float16 cannot hold -1e9: masked_fill raises
    assert any("overflow" in w.value for w in at.warning)
    assert fills_table(at).loc["fill value", "torch.softmax, fill finfo.min"] == "-65504"
    # audit (issue 25): the caption said the -1e9 fill "overflows to -inf … and masked_fill refuses it", under "All
    # four recipes run live": the column is refused, with no result in it
    refused = fills_table(at)["torch.softmax, fill -1e9"].drop("fill value")
    assert {value for value in refused if "overflow" not in value} == {"—"}  # the error, and no results
    caption = next(c.value for c in at.caption if "tried live in float16" in c.value)
    assert "`masked_fill` refuses it, so its column shows the error and no results (—)" in caption
    assert "overflows to" not in caption


def test_gradient_at_hidden_logits_is_exactly_zero(open_page):
    at = open_page(PAGE)
    assert float(metric(at, HIDDEN_GRAD)) == 0.0  # exactly, not approximately
    assert float(metric(at, VISIBLE_GRAD)) > 0.01
    table = fills_table(at)
    assert float(table.loc["max |∂L/∂z| hidden logits (fully masked rows)", "torch.softmax, fill -1e9"]) > 0.01
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert float(metric(at, HIDDEN_GRAD)) == 0.0
    assert metric(at, VISIBLE_GRAD) != "0.305"  # seed 0's value: the seed drives scores and upstream gradient


def test_every_mask_part_and_control_changes_the_mask(open_page):
    at = open_page(PAGE)
    at.pills(key="mask_parts").set_value(["padding", "causal"]).run()
    assert_clean(at)
    assert metric(at, "fully masked rows") == "none"  # right padding + causal: key 0 stays visible
    assert any("No query row of any sequence is fully masked" in i.value for i in at.info)
    assert metric(at, PLAIN) == "no such row"
    # causal hides 15 of sequence 0's 36 cells; sequence 1 (length 2) keeps 1 + 5 * 2 = 11: 40 of 72 hidden
    assert metric(at, "hidden scores, batch") == f"{40 / 72:.0%}"
    at.pills(key="mask_parts").set_value(["block causal"]).run()
    at.slider(key="mask_block").set_value(3).run()
    assert_clean(at)
    assert metric(at, "hidden scores, batch") == "25%"  # blocks {0,1,2}, {3,4,5}: 9 of 36 cells hidden
    at.pills(key="mask_parts").set_value(["sliding window"]).run()
    at.slider(key="mask_window").set_value(1).run()
    assert metric(at, "hidden scores, batch") == f"{30 / 36:.0%}"  # only the diagonal is visible
    at.pills(key="mask_parts").set_value([]).run()
    assert_clean(at)
    assert metric(at, "hidden scores, batch") == "0%"


def test_custom_grid_is_anded_in(open_page):
    at = open_page(PAGE)
    at.pills(key="mask_parts").set_value(["custom"]).run()
    assert_clean(at)
    assert at.data_editor(key="custom_grid_6") is not None
    assert any(e.label.startswith("Custom grid") for e in at.main.expander)
    assert metric(at, "hidden scores, batch") == "0%"  # all ticked to start
    # untick the whole of row 5 and one cell of row 0 (the editor's edit state, as the browser sends it)
    at.session_state["custom_grid_6"] = {
        "edited_rows": {5: {f"k{j}": False for j in range(6)}, 0: {"k1": False}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert_clean(at)
    assert metric(at, "fully masked rows") == "5"
    assert metric(at, "hidden scores, batch") == f"{7 / 36:.0%}"
    assert metric(at, PLAIN) == "NaN"


def test_bad_lengths_warn_and_leave_padding_out(open_page):
    at = open_page(PAGE)
    at.text_input(key="mask_lengths").set_value("6, x").run()
    assert_clean(at)
    assert any("item 2 is not" in w.value for w in at.warning)
    assert metric(at, "padding keys, batch") == "0%"
    at.text_input(key="mask_lengths").set_value("9, 2").run()
    assert any("cannot exceed the sequence length n = 6" in w.value for w in at.warning)
    at.text_input(key="mask_lengths").set_value("6, 0").run()
    assert_clean(at)
    assert not at.warning
    assert at.selectbox(key="mask_sequence").options == ["sequence 0 (length 6)", "sequence 1 (length 0)"]
    at.selectbox(key="mask_sequence").set_value(1).run()
    assert metric(at, "fully masked rows") == "0, 1, 2, 3, 4, 5"  # a sequence of length 0 hides every key
    at.selectbox(key="mask_sequence").set_value(0).run()
    assert metric(at, "fully masked rows") == "none"  # no padding in sequence 0: every query sees itself


# The URL: the generic test drives sliders, pills and selectboxes; the text input and the custom grid here.
EDITED = "101111-111111-111111-111111-111111-000000"  # row 0 hides key 1, row 5 hides every key


def untick(at: AppTest, n: int = 6, *, retick: bool = False) -> None:
    """Untick the whole of row 5 and key 1 of row 0 in the editor (ticked again with retick), as a browser would."""
    at.session_state[f"custom_grid_{n}"] = {
        "edited_rows": {5: {f"k{j}": False for j in range(n)}, 0: {"k1": retick}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()


def test_lengths_and_custom_grid_round_trip_through_the_url():
    at = open_link(PAGE, {})
    at.pills(key="mask_parts").set_value(["padding", "custom"]).run()
    at.text_input(key="mask_lengths").set_value("5, 3").run()
    untick(at)
    assert_clean(at)
    url = dict(at.query_params)
    assert url["mask_lengths"] == "5, 3" and url["mask_grid"] == EDITED
    assert metric(at, "fully masked rows") == "5"

    again = open_link(PAGE, url)  # another student opens the copied link
    assert_clean(again)
    assert again.text_input(key="mask_lengths").value == "5, 3"
    assert again.pills(key="mask_parts").value == ["padding", "custom"]
    assert again.query_params["mask_grid"] == EDITED
    assert [(m.label, m.value) for m in again.metric] == [(m.label, m.value) for m in at.metric]
    assert fills_table(again).equals(fills_table(at))


def test_custom_grid_edits_apply_once_and_can_be_undone():
    at = open_link(PAGE, {"mask_parts": "custom"})
    untick(at)
    at.run()  # the edited grid is now the editor's start: applying the same ticks again changes nothing
    assert at.query_params["mask_grid"] == EDITED
    assert metric(at, "hidden scores, batch") == f"{7 / 36:.0%}"
    untick(at, retick=True)
    assert at.query_params["mask_grid"] == EDITED.replace("101111", "111111", 1)
    assert metric(at, "hidden scores, batch") == f"{6 / 36:.0%}"


def test_custom_grid_survives_a_page_switch_and_resets_with_n():
    at = open_link(PAGE, {"mask_parts": "custom"})
    untick(at)
    at.switch_page("views/home.py").run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert at.query_params["mask_grid"] == EDITED
    assert metric(at, "fully masked rows") == "5"
    at.slider(key="mask_n").set_value(3).run()  # another n: a fresh, all-ticked grid of the new size
    assert_clean(at)
    assert at.query_params["mask_grid"] == "111-111-111"
    assert metric(at, "hidden scores, batch") == "0%"


@pytest.mark.parametrize(
    "grid",
    [
        "111111-111111-111111-111111-111111",  # 5 rows where n = 6
        "11111-11111-11111-11111-11111-11111",  # rows of 5
        "111111-111111-111111-111111-111111-111112",  # a digit other than 0 or 1
        "111111,111111,111111,111111,111111,111111",  # the wrong separator
        "111111-111111-111111-111111-111111-111111-",  # a trailing separator
        "<script>alert(1)</script>",
        "1" * 5000,  # refused for its length before any parsing
    ],
)
def test_a_malformed_grid_in_the_link_is_ignored_with_a_notice(grid):
    at = open_link(PAGE, {"mask_parts": "custom", "mask_grid": grid})
    assert_clean(at)
    assert any("mask_grid" in toast.value and "ignored" in toast.value for toast in at.toast)
    assert at.query_params["mask_grid"] == "-".join(["111111"] * 6)  # the URL now describes what is shown
    assert metric(at, "hidden scores, batch") == "0%"


def test_invalid_lengths_in_the_link_warn_like_typed_ones():
    at = open_link(PAGE, {"mask_lengths": "6, 99"})
    assert_clean(at)
    assert at.text_input(key="mask_lengths").value == "6, 99"
    assert any("cannot exceed the sequence length n = 6" in w.value for w in at.warning)
    assert metric(at, "padding keys, batch") == "0%"
    too_long = open_link(PAGE, {"mask_lengths": "1, " * 30})  # over the input's 40 characters: refused, default kept
    assert too_long.text_input(key="mask_lengths").value == "6, 2"
    assert any("mask_lengths" in toast.value for toast in too_long.toast)


def test_a_teachers_link_can_fix_the_custom_grid_without_showing_the_editor():
    at = open_link(PAGE, {"mask_parts": "custom", "mask_grid": EDITED, "hide": "mask_grid"})
    assert_clean(at)
    assert not any(e.label.startswith("Custom grid") for e in at.main.expander)  # no editor to untick
    assert metric(at, "fully masked rows") == "5"
    assert at.query_params["mask_grid"] == EDITED


def test_padding_renormalisation_section_shows_old_over_sum(open_page):
    at = open_page(PAGE)
    table = next(df.value for df in at.dataframe if "rescaled" in df.value.columns)
    real = table[table.real == "real"]
    assert list(real.after.round(3)) == [0.332, 0.301, 0.367]  # not the notes' [0.33, 0.22, 0.44]
    assert (real.after - real.rescaled).abs().max() < 1e-15
    assert metric(at, "every kept weight multiplied by") == "× 1.5181"
    text = " ".join(m.value for m in at.markdown)
    assert "≈ inexact" in text and "changes the distribution among the real tokens" in text  # weights ×, ratios kept
    at.slider(key="mask_real").set_value(5).run()  # no padding: nothing changes
    assert_clean(at)
    assert metric(at, "every kept weight multiplied by") == "× 1.0000"


def test_the_notes_hierarchical_mask_is_not_causal_and_ours_is(open_page):
    at = open_page(PAGE)
    counts = next(df.value for df in at.dataframe if "future" in df.value.columns).set_index("part")
    notes = counts.loc["notes: hierarchical_causal_mask"]
    assert notes.future == 120 and notes.causal == "no"  # n = 16: every key visible
    assert counts.loc["attn_core: hierarchical_causal_mask", "future"] == 0
    assert counts.loc["notes: sliding_window_causal_mask", "widest"] == 4  # window_size 3 keeps 4 keys
    assert counts.loc["attn_core: sliding_window_mask", "widest"] == 3
    at.slider(key="mask_notes_n").set_value(24).run()
    assert_clean(at)
    counts = next(df.value for df in at.dataframe if "future" in df.value.columns).set_index("part")
    assert counts.loc["notes: hierarchical_causal_mask", "future"] == 120 + 28  # a 16-block and an 8-block
    assert "mask_notes_n=24" in "&".join(f"{k}={v}" for k, v in at.query_params.items())


def test_the_new_sections_in_chinese():
    at = open_link(PAGE, {"lang": "zh"})
    assert_clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "✗ 错误" in text and "讲义" in text
    assert any("讲义：hierarchical_causal_mask" in " ".join(map(str, df.value.iloc[:, 0])) for df in at.dataframe)


@pytest.mark.parametrize(("lang", "none"), [("en", "none"), ("zh", "无")])
def test_facts_about_rows_that_do_not_exist_say_none_not_nan(lang, none):
    at = open_link(PAGE, {"mask_sequence": "0", "lang": lang})  # sequence 0 (length 6, window 3): no empty row
    assert_clean(at)
    table = fills_table(at)
    full_rows = ["完全被遮住的行数" if lang == "zh" else "fully masked rows"]
    assert (table.loc[full_rows].to_numpy() == "0").all()
    word = "完全被遮住的行" if lang == "zh" else "fully masked row"
    about_empty_rows = [f for f in table.index if f not in full_rows and word in f]
    assert len(about_empty_rows) == 3
    assert (table.loc[about_empty_rows].to_numpy() == none).all()
    assert "NaN" not in table.to_numpy()


def test_chinese_mask_titles_have_no_english_and():
    at = open_link(PAGE, {"lang": "zh"})
    assert_clean(at)
    texts = [e.value for e in at.markdown] + [w.label for w in at.get("multiselect")] + [w.label for w in at.pills]
    texts += [c.proto.spec for c in at.get("vega_lite_chart")]
    assert not [s for s in texts if " AND" in s or "AND " in s]


def test_float16_says_why_minus_1e9_shows_as_minus_inf(open_page):
    """Issue 25: in float16 '-inf' stood in the -1e9 column without a word why."""
    at = open_page(PAGE)
    at.selectbox(key="mask_dtype").set_value("float16").run()
    assert_clean(at)
    assert fills_table(at).loc["fill value", "torch.softmax, fill -1e9"] == "-1e9 → -inf"
    (why,) = [c.value for c in at.caption if "does not fit" in c.value]
    assert f"largest magnitude is {torch.finfo(torch.float16).max:g}" in why
    at.selectbox(key="mask_dtype").set_value("bfloat16").run()  # bfloat16 holds -1e9 (rounded): no such sentence
    assert not [c.value for c in at.caption if "does not fit" in c.value]
    assert (
        fills_table(at).loc["fill value", "torch.softmax, fill -1e9"] == f"{torch.tensor(-1e9).bfloat16().item():.6g}"
    )


def test_the_hint_points_to_a_sequence_with_fully_masked_rows_over_a_seeded_sweep(open_page):
    """Issue 25: with sequence 0 shown, the hint recommended 'lengths 6, 2 and window 3', the settings in use;
    the missing step was to show sequence 1. Recomputed here with attn_core's masks."""
    rng = random.Random(25)
    settings = [(6, (6, 2), 3, 0)] + [
        (n := rng.randint(3, 8), tuple(rng.randint(0, n) for _ in range(rng.randint(1, 3))), rng.randint(1, n), 0)
        for _ in range(3)
    ]
    at = open_page(PAGE)
    for n, lengths, window, sequence in settings:
        at.slider(key="mask_n").set_value(n)
        at.text_input(key="mask_lengths").set_value(", ".join(map(str, lengths)))
        at.slider(key="mask_window").set_value(window).run()
        if len(lengths) > 1:  # one sequence: the choice is disabled and shows sequence 0
            at.selectbox(key="mask_sequence").set_value(sequence).run()
        assert_clean(at)
        hidden = padding_mask(list(lengths), n) & sliding_window_mask(n, window)  # (B, n, n)
        full = [[int(i) for i in torch.nonzero(~m.any(-1)).flatten()] for m in hidden.expand(len(lengths), n, n)]
        hints = [i.value for i in at.info if "fully masked" in i.value and "Predict" not in i.value]
        text = " ".join(hints)
        assert "lengths 6, 2 and window 3" not in text
        if full[sequence]:
            assert not hints
        elif any(full):
            other = next(b for b, rows in enumerate(full) if rows)
            assert f"sequence {other} has (queries {', '.join(map(str, full[other]))})" in text
        else:
            assert "No query row of any sequence is fully masked" in text


def test_the_renormalisation_metrics_and_card_agree_at_every_number_of_real_tokens():
    """Audit (issue 25): with 5 real tokens of 5 the metrics read × 1.0000 beside the card's "× 1.518 here" (the card
    checks the notes' own example), and the exact 0 error read 0.0e+00."""
    at = open_link(PAGE, {"mask_real": "5"})
    assert_clean(at)
    assert metric(at, "every kept weight multiplied by") == "× 1.0000"
    assert metric(at, "max |masked − old / sum|") == "0"
    card = next(m.value for m in at.markdown if "common factor" in m.value).replace("\\", "")  # markdown escapes
    assert "notes' example" in card and " here" not in card, card
