"""The notes' claims: every verdict recomputed, and the ones the issue names pinned to their true values."""

import math
import re

import numpy as np
import pytest

from explorer.tables import notes
from explorer.ui.i18n import catalog, fill


@pytest.fixture(scope="module")
def table():
    return notes.check_claims(0).set_index("key")


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def test_every_claim_has_a_key_a_file_a_verdict_and_strings_in_both_languages(table):
    keys = [c.key for c in notes.CLAIMS]
    assert len(keys) == len(set(keys)) == len(table) >= 80
    assert set(table.verdict) == set(notes.VERDICTS)
    assert set(table.file) <= set(notes.FILES) and set(table.file) == set(notes.FILES)  # all five notes are read
    for lang in ("en", "zh"):
        strings = catalog(lang)
        for key, row in table.iterrows():
            assert {f"notes.{part}.{key}" for part in ("claims", "where", "why")} <= set(strings), (lang, key)
            why = fill(strings[f"notes.why.{key}"], row.facts)
            assert "{" not in why, (lang, key)  # every placeholder the sentence names is computed


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_verdicts_do_not_depend_on_the_seed(table, seed):
    again = notes.check_claims(seed).set_index("key")
    assert again.verdict.to_dict() == table.verdict.to_dict()


EXPECTED = {
    "wrong": {
        "softmax_8_2_1",
        "softmax_3",
        "softmax_padding",
        "competing_row",
        "orthogonal_key",
        "dl_dq",
        "dl_dk",
        "wo_grad",
        "unit_sphere",
        "layernorm",
        "invariance",
        "renormalise",
        "hierarchical",
        "mha_mask",
        "linear_title",
        "shared_equivalent",
    },
    "inexact": {
        "softmax_20_0",
        "overflow",
        "healthy_gradient",
        "dl_dv_section43",
        "additive_weight_grad",
        "gaussian",
        "within_20",
        "range_512",
        "three_sqrt",
        "minus_1e9",
        "padding_waste",
        "sliding_window",
        "sparse_saves",
        "dot_params",
        "qk_kq",
        "self_attention_qkv",
        "pe_dot",
    },
}


def test_the_wrong_and_inexact_claims_are_exactly_these(table):
    for verdict, keys in EXPECTED.items():
        assert set(table.index[table.verdict == verdict]) == keys, verdict


def test_the_padding_example_is_each_logit_over_the_sum_not_softmax(table):
    row = table.loc["softmax_padding"]
    np.testing.assert_allclose(numbers(row.computed), [0.332, 0.301, 0.367], atol=6e-4)
    assert row.facts["by_sum"] == "[0.333, 0.222, 0.444]"  # what the notes print, to rounding


def test_d_k_64_sigma_8_and_997_percent_within_24(table):
    assert table.loc["score_std_64"].verdict == "right"
    facts = table.loc["within_24"].facts
    assert facts["formula"] == pytest.approx(0.99730, abs=1e-5)  # the normal formula
    assert facts["exact"] == pytest.approx(0.99670, abs=1e-5)  # q.k is not exactly normal: heavier tails
    assert abs(facts["sampled"] - facts["exact"]) < 4 * math.sqrt(facts["exact"] * (1 - facts["exact"]) / notes.SAMPLES)
    assert table.loc["within_24"].verdict == "right"  # both round to the printed 99.7%
    assert table.loc["within_20"].facts["exact"] == pytest.approx(0.9865, abs=1e-4)


def test_the_softmax_rows_are_judged_by_the_printed_digits():
    assert notes._fits_digits(0.606, math.exp(-0.5), 3)  # 0.60653 cut
    assert notes._fits_digits(0.9999, 1.0, 4, below_one=4e-18)  # 1 - 4e-18: 1.0 in float64, 0.9999... cut
    assert not notes._fits_digits(0.0001, 2e-9, 4)  # neither rounded nor cut
    assert notes._printed((0.95, 0.05), (0.9975, 0.0025), 2)[0] == "wrong"
    assert notes._printed((0.9999, 0.0001), (1.0, 2e-9), 4, [2e-9, 1.0])[0] == "inexact"


def test_the_notes_masks_and_the_bilinear_facts(table):
    assert table.loc["hierarchical"].facts == {"future": 120, "all_visible": True}
    assert table.loc["sliding_window"].facts["notes"] == table.loc["sliding_window"].facts["w"] + 1
    facts = table.loc["shared_equivalent"].facts
    assert facts["shared"] == 0 and facts["separate"] > 0.1 and facts["weights_gap"] > 0.01
    assert table.loc["dl_dq"].facts["true"] > 0.1 and abs(table.loc["dl_dq"].facts["total"]) < 1e-12


def test_check_names_a_claim():
    assert notes.check("softmax_3").verdict == "wrong"
    with pytest.raises(ValueError, match="key"):
        notes.check("nope")
