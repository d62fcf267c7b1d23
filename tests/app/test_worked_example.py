import re

import numpy as np
from app_helpers import assert_clean, metric, open_link
from streamlit.testing.v1 import AppTest

from explorer import notes
from explorer.ui.i18n import catalog

PAGE = "views/worked_example.py"


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text).replace("\u00a0", " ")


def _claims_table(at, lang: str = "en"):
    """The claims table as the page shows it, back in plain text with its cells' internal names."""
    headers = {v: k for k, v in td_lang(lang, "columns").items()}
    shown = next(tb.value for tb in at.table if td_lang(lang, "columns")["verdict"] in tb.value.columns)
    plain = shown.rename(columns=headers).map(_unescape)
    parts = plain["claim"].str.extract(r"^(?P<claim>.*) — \*(?P<where>.*)\*$")
    return plain.assign(claim=parts["claim"], where=parts["where"])


def _claims(at):
    return _claims_table(at).set_index("claim")


def td_lang(lang: str, table: str) -> dict[str, str]:
    start = f"notes.{table}."
    return {k[len(start) :]: v for k, v in catalog(lang).items() if k.startswith(start)}


def td_en(table: str) -> dict[str, str]:
    return td_lang("en", table)


CLAIM_8_2_1 = td_en("claims")["softmax_8_2_1"]
CLAIM_VAR = td_en("claims")["score_var_64"]


def _latex(at) -> str:
    return "\n".join(latex.value for latex in at.latex)


def test_renders_at_defaults_with_every_step(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2  # weight heatmap, output pieces
    text = _latex(at)
    for step in (r"S = QK^\top", r"S' = \frac{S}{\sqrt{3}}", r"\mathrm{softmax}(S')", "Z = AV", "z_1"):
        assert step in text
    assert at.expander  # the predict-first answer is folded away
    editors = [df for df in at.dataframe if df.proto.editing_mode]  # Q, K, V (AppTest cannot type into them)
    assert [df.value.shape for df in editors] == [(2, 3), (2, 3), (2, 3)]


def test_the_8_2_1_claim_is_marked_wrong_with_its_true_value(open_page):
    at = open_page(PAGE)
    row = _claims(at).loc[CLAIM_8_2_1]
    assert row.verdict == "✗ wrong" and row.notes == "[0.87, 0.09, 0.04]"
    true = [float(x) for x in re.findall(r"[-\d.e]+", row.computed)]
    np.testing.assert_allclose(true, [0.997, 0.002, 0.001], atol=5e-4)  # as rounded to 3 decimals
    assert "one-hot" in row.why
    table = notes.check_claims(0)
    assert len(_claims(at)) == len(table) == len(notes.CLAIMS)
    for verdict, label in (("right", "✓ right"), ("inexact", "≈ inexact"), ("wrong", "✗ wrong")):
        assert metric(at, label) == str((table.verdict == verdict).sum())


def test_every_row_has_a_place_a_true_value_and_a_why(open_page):
    at = open_page(PAGE)
    rows = _claims(at)
    names = tuple(td_en("short").values())  # a student has no files: the notes are named, not numbered
    assert rows["where"].map(lambda w: w.startswith(names)).all() and (rows.computed.str.len() > 0).all()
    assert not rows["where"].str.contains(r"\b00[0-4]\b").any()
    assert (rows.why.str.len() > 10).all() and not rows.why.str.contains("{", regex=False).any()
    padding = rows.loc[td_en("claims")["softmax_padding"]]
    assert padding.verdict == "✗ wrong" and padding.computed == "[0.332, 0.301, 0.367]"
    within = rows.loc[td_en("claims")["within_24"]]
    assert within.verdict == "✓ right" and "99.67%" in within.computed and "99.73%" in within.computed


def test_the_filters_show_only_the_chosen_verdicts_and_notes(open_page):
    at = open_page(PAGE)
    at.pills(key="we_verdicts").set_value(["wrong"]).run()
    assert_clean(at)
    rows = _claims(at)
    assert set(rows.verdict) == {"✗ wrong"} and len(rows) == (notes.check_claims(0).verdict == "wrong").sum()
    at.pills(key="we_files").set_value(["004"]).run()
    rows = _claims(at)
    assert list(rows.index) == [td_en("claims")["mha_mask"]]  # the one wrong claim of note 004
    assert at.query_params["we_verdicts"] == "wrong" and at.query_params["we_files"] == "004"


def test_the_backward_pass_matches_autograd_and_follows_the_token(open_page):
    at = open_page(PAGE)
    errors = next(df.value for df in at.dataframe if "max_error" in df.value.columns)
    assert len(errors) == 5 and (errors.max_error < 1e-14).all()
    text = _latex(at)
    assert r"\frac{\partial L}{\partial V} = A^\top" in text and r"\tfrac{1}{\sqrt{3}}" in text
    # L = sum of z_1: dL/dA row 1 holds the sums of v_1 = (1, 2, 3) and v_2 = (4, 5, 6)
    d_a = r"\frac{\partial L}{\partial A} = \frac{\partial L}{\partial Z}V^\top = "
    assert d_a + r"\begin{bmatrix}6 & 15\\0 & 0\end{bmatrix}" in text
    at.selectbox(key="we_token_two_tokens").set_value(2).run()
    assert_clean(at)
    assert r"\begin{bmatrix}0 & 0\\6 & 15\end{bmatrix}" in _latex(at)


def test_every_control_changes_the_steps(open_page):
    at = open_page(PAGE)
    at.radio(key="we_example").set_value("four_tokens").run()
    assert_clean(at)
    text = _latex(at)
    assert r"\sqrt{2}" in text and "z_2" in text and "S_{24}" in text  # the notes expand the 2nd token
    assert "0.4022" in text  # alpha_21 = 1 / (2 + 2 e^(-sqrt 2)) = 0.4022
    at.selectbox(key="we_token_four_tokens").set_value(4).run()
    assert "z_4" in _latex(at) and "z_2" not in _latex(at)
    at.toggle(key="we_scaled").set_value(False).run()
    assert_clean(at)
    text = _latex(at)
    assert "S' = S =" in text and "0.4022" not in text  # unscaled scores give sharper rows
    at.button(key="we_reset").click().run()
    assert_clean(at)
    before = _claims(at).loc[CLAIM_VAR].computed
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    after = _claims(at).loc[CLAIM_VAR]
    assert after.computed != before and after.verdict == "✓ right"


def test_the_boxed_formula_is_the_one_computed(open_page):
    """Issue 25: with the scale off, the box said softmax(QKᵀ/√d_k) beside S' = S/1."""
    at = open_page(PAGE)
    for example in ("two_tokens", "four_tokens"):
        at.radio(key="we_example").set_value(example).run()
        for scaled in (True, False):
            at.toggle(key="we_scaled").set_value(scaled).run()
            assert_clean(at)
            boxed = next(x.value for x in at.latex if x.value.strip("$\n").startswith(r"A=\mathrm{softmax}"))
            steps = _latex(at)
            assert (r"\sqrt{d_k}" in boxed) == scaled, boxed
            assert ("S' = S =" in steps) == (not scaled) and (r"\frac{S}{\sqrt" in steps) == scaled


def edit(at: AppTest, editor: str, cells: dict) -> AppTest:
    """Type into a data editor: {row: {column: value}}, as the browser sends it."""
    at.session_state[editor] = {"edited_rows": cells, "added_rows": [], "deleted_rows": []}
    return at.run()


def test_edited_matrices_and_controls_round_trip_through_the_url():
    at = open_link(PAGE, {})
    at.radio(key="we_example").set_value("four_tokens").run()
    at.selectbox(key="we_token_four_tokens").set_value(3).run()
    at.toggle(key="we_scaled").set_value(False).run()
    edit(at, "we_editor_k_four_tokens_0", {0: {"d1": 2.5}, 3: {"d2": -0.125}})
    edit(at, "we_editor_v_four_tokens_0", {1: {"d2": 1e-05}})
    assert_clean(at)
    url = dict(at.query_params)
    assert url["we_k_four_tokens"] == "2.5,0;0,1;-1,0;0,-0.125"
    assert url["we_v_four_tokens"] == "0,0;1,1e-05;1,1;0,1"
    assert url["we_q_four_tokens"] == "2,0;1,1;0,-2;-1,1"  # untouched: the example's numbers

    again = open_link(PAGE, url)  # a student opens the copied link
    assert_clean(again)
    assert again.radio(key="we_example").value == "four_tokens"
    assert again.selectbox(key="we_token_four_tokens").value == 3
    assert again.toggle(key="we_scaled").value is False
    k = again.data_editor(key="we_editor_k_four_tokens_0").value.to_numpy()
    np.testing.assert_array_equal(k, [[2.5, 0], [0, 1], [-1, 0], [0, -0.125]])
    v = again.data_editor(key="we_editor_v_four_tokens_0").value.to_numpy()
    np.testing.assert_array_equal(v, [[0, 0], [1, 1e-05], [1, 1], [0, 1]])
    assert _latex(again) == _latex(at) and r"S_{31}" in _latex(again)  # the same steps, token 3 written out
    assert dict(again.query_params) == url


def test_hostile_matrices_in_the_link_are_refused_with_a_notice():
    at = open_link(
        PAGE,
        {
            "we_q_two_tokens": "nan,0,1;0,2,1",
            "we_k_two_tokens": "1,1;0,1",  # 2 x 2, not 2 x 3
            "we_v_two_tokens": "9" * 500,
        },
    )
    assert_clean(at)
    assert [df.value.to_numpy().tolist() for df in at.data_editor] == [
        [[1, 0, 1], [0, 2, 1]],
        [[1, 1, 0], [0, 1, 2]],
        [[1, 2, 3], [4, 5, 6]],
    ]
    notices = [toast.value for toast in at.toast]
    assert len(notices) == 3 and all("ignored" in n for n in notices)
    assert at.query_params["we_q_two_tokens"] == "1,0,1;0,2,1"  # the URL now describes what is shown


def test_edits_survive_switching_examples_and_pages_until_reset():
    at = open_link(PAGE, {})
    edit(at, "we_editor_q_two_tokens_0", {0: {"d1": 3}})
    at.radio(key="we_example").set_value("four_tokens").run()
    at.radio(key="we_example").set_value("two_tokens").run()
    at.switch_page("views/home.py").run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert at.query_params["we_q_two_tokens"] == "3,0,1;0,2,1"
    assert at.data_editor(key="we_editor_q_two_tokens_0").value.iat[0, 0] == 3
    at.button(key="we_reset").click().run()
    assert at.query_params["we_q_two_tokens"] == "1,0,1;0,2,1"
    assert at.data_editor(key="we_editor_q_two_tokens_1").value.iat[0, 0] == 1


def test_an_emptied_cell_warns_and_the_link_keeps_the_last_valid_matrix():
    at = open_link(PAGE, {})
    edit(at, "we_editor_v_two_tokens_0", {1: {"d3": 7}})
    edit(at, "we_editor_v_two_tokens_0", {1: {"d3": None}})
    assert not at.exception
    assert any("row 2, column 3" in w.value for w in at.warning)
    assert at.query_params["we_v_two_tokens"] == "1,2,3;4,5,7"


def test_the_claims_are_described_in_the_viewers_language():
    assert set(td_en("claims")) == {c.key for c in notes.CLAIMS}
    at = open_link(PAGE, {"lang": "zh"})
    assert_clean(at)
    table = _claims_table(at, "zh")
    assert "在 d_k = 64 实测" in " ".join(table.claim)
    assert set(table.verdict) == {"✓ 正确", "≈ 不精确", "✗ 错误"}
    wrong = (notes.check_claims(0).verdict == "wrong").sum()
    assert table.verdict.value_counts()["✗ 错误"] == wrong and metric(at, "✗ 错误") == str(wrong)
    assert "每一行和为 0" in " ".join(table.why)
    assert table["where"].str.startswith("Day 1 讲义").any()
    shown = [c.value for c in at.caption] + [m.value for m in at.markdown]
    assert not [text for text in shown if re.search(r"(?<![\d,.])\b00[0-4]\b", text)]  # no file numbers anywhere
    assert any("你不需要手头有它们" in text for text in shown)


def test_a_teacher_can_fix_a_matrix_the_class_cannot_edit():
    at = open_link(PAGE, {"hide": "we_k_two_tokens", "we_k_two_tokens": "1,1,0;1,1,0"})  # two equal keys
    assert_clean(at)
    assert [df.key for df in at.data_editor] == ["we_editor_q_two_tokens_0", "we_editor_v_two_tokens_0"]
    assert r"\begin{bmatrix}1 & 1\\2 & 2\end{bmatrix}" in _latex(at)  # S = QK^T: equal keys, equal scores
    assert at.query_params["we_k_two_tokens"] == "1,1,0;1,1,0"


def test_the_notices_say_what_this_setting_shows(open_page):
    """The scaling points name the toggle's other position; the backward notice counts the keys that get a gradient."""
    at = open_page(PAGE)
    points = " ".join(m.value for m in at.markdown if m.value.startswith("**What to notice**"))
    assert "Every key and every value gets a gradient here" in points and "Switch off the scaling" in points
    edit(at, "we_editor_v_two_tokens_0", {1: {"d1": 3, "d2": 2, "d3": 1}})  # rows of V with equal sums: dL/dS' = 0
    at.toggle(key="we_scaled").set_value(False).run()
    assert_clean(at)
    points = " ".join(m.value for m in at.markdown if m.value.startswith("**What to notice**"))
    assert "only 0 of the 2 keys do here" in points and "Every key and every value" not in points
    assert "Switch the scaling on" in points and "Switch off the scaling" not in points
    dk = next(x.value for x in at.latex if r"\frac{\partial L}{\partial K} = 1" in x.value)
    assert not re.search(r"[1-9]", dk.split("begin{bmatrix}")[1])  # every entry of dL/dK is 0, as the notice says
