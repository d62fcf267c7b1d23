"""The notes' claims: every verdict recomputed, and the ones the issue names pinned to their true values."""

import math
import re

import numpy as np
import pytest

from explorer import notes
from explorer.notes import registry, rules
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
        "within_3_scaled",
        "range_512",
        "three_sqrt",
        "minus_1e9",
        "renormalise",
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
    assert rules.fits_digits(0.606, math.exp(-0.5), 3)  # 0.60653 cut
    assert rules.fits_digits(0.9999, 1.0, 4, below_one=4e-18)  # 1 - 4e-18: 1.0 in float64, 0.9999... cut
    assert not rules.fits_digits(0.0001, 2e-9, 4)  # neither rounded nor cut
    assert rules.printed_verdict((0.95, 0.05), (0.9975, 0.0025), 2)[0] == "wrong"
    assert rules.printed_verdict((0.9999, 0.0001), (1.0, 2e-9), 4, [2e-9, 1.0])[0] == "inexact"


def test_the_notes_masks_and_the_bilinear_facts(table):
    assert table.loc["hierarchical"].facts == {"future": 120, "all_visible": True, "form": "hierarchical"}
    assert table.loc["sliding_window"].facts["notes"] == table.loc["sliding_window"].facts["w"] + 1
    facts = table.loc["shared_equivalent"].facts
    assert facts["shared"] == 0 and facts["separate"] > 0.1 and facts["weights_gap"] > 0.01
    assert table.loc["dl_dq"].facts["true"] > 0.1 and abs(table.loc["dl_dq"].facts["total"]) < 1e-12


def test_the_claims_come_by_topic_each_registered_once_in_its_module():
    topics = [t.__name__ for t in notes.TOPICS]
    where = [topics.index(c.check.__module__) for c in notes.CLAIMS]  # every check lives in a listed topic
    assert where == sorted(where) and set(where) == set(range(len(topics)))  # grouped, in order, none empty
    assert notes.CLAIMS[0].key == "softmax_8_2_1" and notes.CLAIMS[-1].key == "exp_neg_inf"  # the table's order
    assert [c.key for c in notes.CLAIMS] == list(notes.check_claims(0).key)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("softmax_3", "000", check=notes.check)
    with pytest.raises(ValueError, match="files"):
        registry.register("new_claim", "005", check=notes.check)
    with pytest.raises(ValueError, match="theory"):
        registry.in_order(topics[:-1])
    assert registry.in_order(topics) == notes.CLAIMS  # the failed calls changed nothing


def test_check_names_a_claim():
    assert notes.check("softmax_3").verdict == "wrong"
    with pytest.raises(ValueError, match="key"):
        notes.check("nope")


# Issue 25: one verdict per claim at every seed, bounds that are bounds, one rule for ranges, exact small numbers.

# Checks that use the seed, by cost (CPU of one check): the cheap ones (~1 ms) are swept over seeds 1-300, the others
# over a spread of seeds. All 34 seeded claims at every seed 1-300 were checked once (no verdict differed from
# seed 0's; 55 min on this shared 2-core machine): too slow for the suite.
SAMPLED = {  # thousands of pairs or a 256-token tiled pass from the seed: 15-400 ms each
    "score_mean", "product_var", "score_var_64", "scaled_var", "gaussian", "score_std_64", "within_24", "within_20",
    "within_16", "within_3_scaled", "range_512", "cos_512", "three_sqrt", "unit_sphere", "flash_exact",
}  # fmt: skip
MIDDLE = {"self_attention_qkv", "layernorm", "qk_kq", "minus_inf", "minus_1e9", "shared_equivalent", "shared_symmetric"}


@pytest.fixture(scope="module")
def seeded(table):
    """The claims whose check uses the seed (its result differs between two seeds)."""
    return [c.key for c in notes.CLAIMS if notes.check(c.key, 1) != notes.check(c.key, 0)]


def changed_verdicts(table, keys, seeds) -> list[tuple[int, str]]:
    return [(s, k) for s in seeds for k in keys if notes.check(k, s).verdict != table.loc[k].verdict]


def test_every_cheap_seeded_verdict_is_the_one_of_seed_0_at_seeds_1_to_300(table, seeded):
    cheap = [key for key in seeded if key not in SAMPLED | MIDDLE]
    assert "temperature" in cheap and len(cheap) >= 10
    assert not changed_verdicts(table, cheap, range(1, 301))  # temperature at T = 0.01 flipped at 31, 35, 37, 46, ...


def test_the_costlier_seeded_verdicts_are_the_ones_of_seed_0_across_the_seeds(table, seeded):
    assert set(seeded) >= MIDDLE and len(set(seeded) & SAMPLED) >= 10
    assert not changed_verdicts(table, [k for k in seeded if k in MIDDLE], range(5, 301, 10))
    assert not changed_verdicts(table, [k for k in seeded if k in SAMPLED], range(11, 301, 58))


def test_the_temperature_limits_are_followed_not_read_at_one_temperature():
    for seed in (31, 35, 37, 46):  # where a largest weight below 0.99 at T = 0.01 made a true statement "wrong"
        r = notes.check("temperature", seed)
        cold = [float(x) for x in r.facts["cold"].split(", ")]
        hot = [float(x) for x in r.facts["hot"].split(", ")]
        assert r.verdict == "right" and cold[-1] == 0 and cold == sorted(cold, reverse=True)
        assert all(b < a / 5 for a, b in zip(hot, hot[1:], strict=False))


@pytest.mark.parametrize("x", [1.4e-4, 0.1249, 9.96, 0.3, 1e-300, 4.2e-18, 12345.0, 0.5, 1.0])
def test_upper_prints_a_true_bound(x):
    for digits in (1, 2, 3):
        assert float(rules.upper(x, digits)) >= x
    assert rules.upper(1.4e-4, 1) == "2e-4"  # the reviewer's case: .0e printed 1e-04


BOUND_WORDS = r"(within|up to|below|at most|less than|不超过|最多|不到|以内|以下)"


def test_every_bound_a_sentence_states_is_a_true_bound(table):
    for lang in ("en", "zh"):
        strings = catalog(lang)
        for key in table.index:
            why = strings[f"notes.why.{key}"]
            for name in re.findall(BOUND_WORDS + r"[^{。.;；]{0,12}\{(\w+)", why):
                assert name[1].endswith("_bound"), (lang, key, why)  # a rounded value there could be too small
    for key, row in table.iterrows():
        for name, value in row.facts.items():
            if name.endswith("_bound"):
                assert float(value) >= row.facts[name.removesuffix("_bound")], (key, name)


def test_range_claims_follow_one_rule(table):
    ranges = table[table.facts.map(lambda f: "stated" in f)]
    assert set(ranges.index) >= {"within_24", "within_20", "within_16", "within_3_scaled", "range_512", "three_sqrt"}
    for key, row in ranges.iterrows():
        if row.facts["stated"] is None:  # "q·k lies in [a, b]": all values, which no range of q·k holds
            assert row.verdict == "inexact", key
    assert table.loc["within_3_scaled"].verdict == table.loc["within_20"].verdict == "inexact"


def test_the_saturated_jacobian_is_computed_without_cancellation(table):
    p2 = math.exp(-40) / (1 + math.exp(-40))  # softmax([20, -20])'s small weight
    assert table.loc["saturated_gradient"].facts["norm"] == pytest.approx(2 * (1 - p2) * p2, rel=1e-12)  # 8.5e-18
    assert "8.5e-18" in table.loc["saturated_gradient"].computed


def test_the_notes_cells_quote_the_notes(table):
    assert table.loc["product_var"].notes == "Var(qᵢkᵢ) = 1 × 1 − 0 × 0 = 1"  # not "Var(q·k) = d_k = 1"


def test_masking_padding_rescales_the_kept_weights_and_keeps_their_ratios(table):
    row = table.loc["renormalise"]
    assert row.verdict == "inexact" and row.facts["factor"] == pytest.approx(1.518, abs=1e-3)
    assert row.facts["ratio_spread"] < 1e-12


def test_one_share_for_one_range_of_q_dot_k(table):
    """|q·k| ≤ 24 at d_k = 64 is |q·k/8| ≤ 3: three rows state that share, and they state one value."""
    share = f"{100 * table.loc['within_24'].facts['exact']:.2f}%"
    assert share in table.loc["within_24"].computed and share in table.loc["within_3_scaled"].computed
    assert share in table.loc["three_sqrt"].computed.split("(")[0]  # the exact share first, the sample after
