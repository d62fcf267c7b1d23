import re

import numpy as np
from app_helpers import assert_clean, metric, open_link
from streamlit.testing.v1 import AppTest

from explorer.tables import worked_example as tables
from explorer.ui.i18n import catalog

PAGE = "views/worked_example.py"


def _claims(at):
    return next(df.value for df in at.dataframe if "verdict" in df.value.columns).set_index("claim")


def td_en(table: str) -> dict[str, str]:
    start = f"worked_example.{table}."
    return {k[len(start) :]: v for k, v in catalog("en").items() if k.startswith(start)}


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
    row = _claims(at).loc["softmax([8, 2, 1])"]
    assert row.verdict == "✗" and row.notes == "[0.87, 0.09, 0.04]"
    true = [float(x) for x in re.findall(r"[-\d.e]+", row.computed)]
    np.testing.assert_allclose(true, [0.997, 0.002, 0.001], atol=5e-4)  # as rounded to 3 decimals
    assert metric(at, "claims that hold") == f"{len(_claims(at)) - 2} of {len(_claims(at))}"


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
    assert r"\frac{S}{1}" in text and "0.4022" not in text  # unscaled scores give sharper rows
    at.button(key="we_reset").click().run()
    assert_clean(at)
    before = _claims(at).loc["Var(q·k) = d_k at d_k = 64, measured"].computed
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    after = _claims(at).loc["Var(q·k) = d_k at d_k = 64, measured"]
    assert after.computed != before and after.verdict == "✓"


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
    by_key = {c.key: c for c in tables.CLAIMS}
    assert {key: by_key[key].claim for key in by_key} == td_en("claims")  # English as the library states them
    at = open_link(PAGE, {"lang": "zh"})
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "verdict" in df.value.columns)
    assert "d_k = 64 时实测" in " ".join(table.claim)
    assert set(table.verdict) == {"✓ 成立", "✗ 不成立"}
    assert table.verdict.value_counts()["✗ 不成立"] == 2
    assert metric(at, "成立的说法") == f"{len(table) - 2} / {len(table)}"


def test_a_teacher_can_fix_a_matrix_the_class_cannot_edit():
    at = open_link(PAGE, {"hide": "we_k_two_tokens", "we_k_two_tokens": "1,1,0;1,1,0"})  # two equal keys
    assert_clean(at)
    assert [df.key for df in at.data_editor] == ["we_editor_q_two_tokens_0", "we_editor_v_two_tokens_0"]
    assert r"\begin{bmatrix}1 & 1\\2 & 2\end{bmatrix}" in _latex(at)  # S = QK^T: equal keys, equal scores
    assert at.query_params["we_k_two_tokens"] == "1,1,0;1,1,0"
