from app_helpers import assert_clean, metric

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
    assert len(at.get("vega_lite_chart")) == 5  # mask parts, scores, weights, fill weights, gradient
    assert any(r"\tilde s_{ij}" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer is folded away
    # lengths (6, 2), window 3, sequence 1: queries 4 and 5 see only padding
    assert metric(at, "fully masked rows") == "4, 5"
    assert metric(at, "hidden scores") == "71%"  # 51 of 72 cells, counted in tests/core


def test_fill_value_decides_what_a_fully_masked_row_gets(open_page):
    at = open_page(PAGE)
    assert metric(at, PLAIN) == "NaN"  # -inf: 0/0
    assert metric(at, LIBRARY) == "0"
    at.segmented_control(key="fill").set_value("-1e9").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "0.1667 ≈ 1/6"  # uniform over the n = 6 keys
    assert metric(at, LIBRARY) == "0"
    at.segmented_control(key="fill").set_value("finfo.min").run()
    assert metric(at, PLAIN) == "0.1667 ≈ 1/6"
    table = fills_table(at)
    assert table.loc["fully masked row weight", "torch.softmax, fill -inf"] == "NaN"
    assert table.loc["fill value", "torch.softmax, fill finfo.min"] == "-3.40282e+38"  # float32's minimum


def test_uniform_weight_follows_n_and_dtype_changes_the_recipes(open_page):
    at = open_page(PAGE)
    at.segmented_control(key="fill").set_value("-1e9").run()
    at.slider(key="n").set_value(8).run()
    at.text_input(key="lengths").set_value("8, 2").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "0.125 ≈ 1/8"
    at.selectbox(key="dtype").set_value("float16").run()
    assert_clean(at)
    assert metric(at, PLAIN) == "refused"  # float16 cannot hold -1e9: masked_fill raises
    assert any("overflow" in w.value for w in at.warning)
    assert fills_table(at).loc["fill value", "torch.softmax, fill finfo.min"] == "-65504"


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
    at.pills(key="parts").set_value(["padding", "causal"]).run()
    assert_clean(at)
    assert metric(at, "fully masked rows") == "none"  # right padding + causal: key 0 stays visible
    assert any("No query row is fully masked" in i.value for i in at.info)
    assert metric(at, PLAIN) == "no such row"
    # causal hides 15 of sequence 0's 36 cells; sequence 1 (length 2) keeps 1 + 5 * 2 = 11: 40 of 72 hidden
    assert metric(at, "hidden scores") == f"{40 / 72:.0%}"
    at.pills(key="parts").set_value(["block causal"]).run()
    at.slider(key="block").set_value(3).run()
    assert_clean(at)
    assert metric(at, "hidden scores") == "25%"  # blocks {0,1,2}, {3,4,5}: 9 of 36 cells hidden
    at.pills(key="parts").set_value(["sliding window"]).run()
    at.slider(key="window").set_value(1).run()
    assert metric(at, "hidden scores") == f"{30 / 36:.0%}"  # only the diagonal is visible
    at.pills(key="parts").set_value([]).run()
    assert_clean(at)
    assert metric(at, "hidden scores") == "0%"


def test_custom_grid_is_anded_in(open_page):
    at = open_page(PAGE)
    at.pills(key="parts").set_value(["custom"]).run()
    assert_clean(at)
    assert at.data_editor(key="custom_grid_6") is not None
    assert metric(at, "hidden scores") == "0%"  # all ticked to start
    # untick the whole of row 5 and one cell of row 0 (the editor's edit state, as the browser sends it)
    at.session_state["custom_grid_6"] = {
        "edited_rows": {5: {f"k{j}": False for j in range(6)}, 0: {"k1": False}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert_clean(at)
    assert metric(at, "fully masked rows") == "5"
    assert metric(at, "hidden scores") == f"{7 / 36:.0%}"
    assert metric(at, PLAIN) == "NaN"


def test_bad_lengths_warn_and_leave_padding_out(open_page):
    at = open_page(PAGE)
    at.text_input(key="lengths").set_value("6, x").run()
    assert_clean(at)
    assert any("item 2 is not" in w.value for w in at.warning)
    assert metric(at, "padding keys") == "0%"
    at.text_input(key="lengths").set_value("9, 2").run()
    assert any("cannot exceed the sequence length n = 6" in w.value for w in at.warning)
    at.text_input(key="lengths").set_value("6, 0").run()
    assert_clean(at)
    assert not at.warning
    assert at.selectbox(key="sequence").options == ["sequence 0 (length 6)", "sequence 1 (length 0)"]
    at.selectbox(key="sequence").set_value(1).run()
    assert metric(at, "fully masked rows") == "0, 1, 2, 3, 4, 5"  # a sequence of length 0 hides every key
    at.selectbox(key="sequence").set_value(0).run()
    assert metric(at, "fully masked rows") == "none"  # no padding in sequence 0: every query sees itself
