import re

import numpy as np
from app_helpers import assert_clean, metric

PAGE = "views/worked_example.py"


def _claims(at):
    return next(df.value for df in at.dataframe if "verdict" in df.value.columns).set_index("claim")


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
