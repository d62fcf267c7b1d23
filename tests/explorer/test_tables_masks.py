import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_core import block_causal_mask, causal_mask, padding_mask, sliding_window_mask
from explorer.tables import masks as T

# The page's default: batch lengths (6, 2), padding AND a sliding window of 3, sequence 1 shown.
DEFAULT = T.MaskSpec(6, ("padding", "sliding window"), (6, 2), 3, 2, None, 1)


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [("6, 2", 6, (6, 2)), (" 3 4 ", 6, (3, 4)), ("0", 5, (0,)), ("1,2,3,4", 4, (1, 2, 3, 4)), ("12", 12, (12,))],
)
def test_parse_lengths_reads_whole_numbers(text, n, expected):
    assert T.parse_lengths(text, n) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "enter one length"),
        ("   ", "enter one length"),
        ("6, x", "item 2 is not"),
        ("-1", "item 1 is not"),
        ("2.5", "item 1 is not"),
        ("7", "cannot exceed the sequence length n = 6"),
        ("1, 2, 3, 4, 5", "at most 4 sequences"),
        ("1" * 41, "under 40 characters"),
        ("<b>3</b>", "item 1 is not"),
    ],
)
def test_parse_lengths_rejects_bad_input_with_a_reason(text, match):
    with pytest.raises(ValueError, match=match):
        T.parse_lengths(text, 6)


def test_parse_grid_accepts_python_and_numpy_bools_only():
    rows = np.array([[True, False], [True, True]]).tolist()
    assert T.parse_grid(rows, 2) == ((True, False), (True, True))
    assert T.parse_grid([[np.bool_(True), np.bool_(False)], [True, True]], 2) == ((True, False), (True, True))
    with pytest.raises(ValueError, match="2 rows of 2"):
        T.parse_grid([[True, True]], 2)
    with pytest.raises(ValueError, match=r"cell \(query 1, key 0\)"):
        T.parse_grid([[True, True], [None, True]], 2)
    with pytest.raises(ValueError, match="ticked or not"):
        T.parse_grid([[1, 0], [1, 1]], 2)  # ints are not ticks: the editor only ever sends bools


@given(
    n=st.integers(1, T.MAX_N),
    window=st.integers(1, T.MAX_N),
    block=st.integers(1, T.MAX_N),
    data=st.data(),
)
def test_combined_mask_is_the_and_of_the_library_masks(n, window, block, data):
    lengths = tuple(data.draw(st.lists(st.integers(0, n), min_size=1, max_size=T.MAX_BATCH)))
    custom = tuple(tuple(data.draw(st.booleans()) for _ in range(n)) for _ in range(n))
    masks = T.build_masks(n, T.PARTS, lengths, window, block, custom)
    expected = (
        padding_mask(list(lengths), n)
        & causal_mask(n)
        & sliding_window_mask(n, window)
        & block_causal_mask(n, block)
        & torch.tensor(custom)
    )
    assert masks["combined"].shape == (len(lengths), n, n)
    assert torch.equal(masks["combined"], expected.expand(len(lengths), n, n))


def test_no_part_chosen_hides_nothing_and_bad_parts_are_refused():
    assert bool(T.build_masks(4, (), (4,), 2, 2)["combined"].all())
    with pytest.raises(ValueError, match="parts must be among"):
        T.build_masks(4, ("diagonal",), (4,), 2, 2)
    with pytest.raises(ValueError, match="4 x 4 grid"):
        T.build_masks(4, ("custom",), (4,), 2, 2, custom=None)


def test_mask_stats_at_the_default_counted_by_hand():
    cells, stats = T.mask_parts(DEFAULT)
    # Sequence 0 (length 6) keeps the window's 1+2+3+3+3+3 = 15 cells; sequence 1 (length 2) keeps 1+2+2+1 = 6.
    assert stats["hidden_share"] == pytest.approx((72 - 15 - 6) / 72, abs=1e-12)
    assert stats["padding_share"] == pytest.approx(1 - 8 / 12, abs=1e-12)
    assert stats["fully_masked"] == [4, 5]
    assert set(cells["part"]) == {"padding", "sliding window", "combined"}
    combined = cells[cells.part == "combined"].pivot(index="query", columns="key", values="allowed")
    assert combined.sum(axis=1).tolist() == [1, 2, 2, 1, 0, 0]


def test_scores_and_weights_rows_sum_to_one_or_zero_and_hidden_weights_are_exactly_zero():
    cells, rows = T.scores_and_weights(DEFAULT, seed=0)
    assert (cells.loc[cells.hidden, "weight"] == 0).all()
    # float64 softmax: a visible row's sum is 1 to within a few ulps
    np.testing.assert_allclose(rows["row_sum"], (rows["visible_keys"] > 0).astype(float), rtol=0, atol=1e-12)
    other, _ = T.scores_and_weights(DEFAULT, seed=1)
    assert not np.allclose(cells["score"], other["score"])  # the seed drives the scores


def _summary(dtype, spec=DEFAULT):
    _, _, summary = T.fill_comparison(spec, dtype, 0)
    return summary.set_index("method")


def test_fully_masked_row_nan_for_minus_inf_uniform_for_finite_fills_zero_for_the_library():
    s = _summary("float32")
    assert math.isnan(s.loc["torch.softmax, fill -inf", "fully masked row weight"])
    assert s.loc["torch.softmax, fill -inf", "NaN in weights"] == 2 * 6  # rows 4 and 5, six keys each
    for fill in ("-1e9", "finfo.min"):
        # all six logits equal: exp(0) / 6, rounded once in float32 (relative error <= 2^-24)
        assert s.loc[f"torch.softmax, fill {fill}", "fully masked row weight"] == pytest.approx(1 / 6, rel=2**-23)
        assert s.loc[f"torch.softmax, fill {fill}", "fully masked row sum"] == pytest.approx(1, rel=1e-6)
    assert s.loc[T.LIBRARY, "fully masked row weight"] == 0
    assert s.loc[T.LIBRARY, "fully masked row sum"] == 0
    assert (s["max weight on hidden keys (other rows)"] == 0).all()  # exp underflows to exactly 0 for every recipe


def test_the_page_names_each_recipe_as_the_fill_comparison_does():
    """The view finds a fill's row and words its name through plain_method: one spelling of the recipes' names."""
    assert list(_summary("float32").index) == [T.plain_method(fill) for fill in T.FILLS] + [T.LIBRARY]
    assert T.plain_method("-inf") == "torch.softmax, fill -inf"  # the name the tests above look rows up by


def test_uniform_weight_follows_n():
    spec = T.MaskSpec(8, ("padding",), (8, 0), 3, 2, None, 1)  # sequence 1 is all padding: every row is fully masked
    s = _summary("float32", spec)
    assert s.loc["torch.softmax, fill -1e9", "fully masked row weight"] == pytest.approx(1 / 8, rel=2**-23)


def test_gradient_at_hidden_logits_is_exactly_zero_except_finite_fills_on_fully_masked_rows():
    s = _summary("float32")
    assert (s["max |grad| hidden logits (other rows)"] == 0).all()
    assert s.loc[T.LIBRARY, "max |grad| hidden logits"] == 0
    assert s.loc[T.LIBRARY, "NaN in grad"] == 0 and math.isfinite(s.loc[T.LIBRARY, "loss"])
    assert s.loc[T.LIBRARY, "max |grad| visible logits"] > 0.01  # the gradient is not zero everywhere
    for fill in ("-1e9", "finfo.min"):  # uniform weights: the hidden logits of an empty row do get a gradient
        assert s.loc[f"torch.softmax, fill {fill}", "max |grad| hidden logits (fully masked rows)"] > 0.01
    assert s.loc["torch.softmax, fill -inf", "NaN in grad"] == 12 and math.isnan(
        s.loc["torch.softmax, fill -inf", "loss"]
    )


def test_library_gradient_matches_the_softmax_jacobian_formula():
    cells, _, _ = T.fill_comparison(DEFAULT, "float64", 0)
    lib = cells[cells.method == T.LIBRARY]
    w = lib.pivot(index="query", columns="key", values="weight").to_numpy()
    g = lib.pivot(index="query", columns="key", values="grad").to_numpy()
    gen = torch.Generator().manual_seed(1)  # fill_comparison draws U from seed + 1
    u = torch.randn(6, 6, generator=gen, dtype=torch.float64).numpy()
    expected = w * (u - (w * u).sum(axis=1, keepdims=True))  # dL/dz_ij = w_ij (u_ij - sum_l w_il u_il)
    np.testing.assert_allclose(g, expected, rtol=0, atol=1e-14)


def test_visible_rows_agree_between_recipes():
    cells, _, _ = T.fill_comparison(DEFAULT, "float32", 0)
    wide = cells.pivot_table(index=["query", "key"], columns="method", values="weight", dropna=False)
    visible_rows = wide.index.get_level_values("query") < 4
    lib = wide.loc[visible_rows, T.LIBRARY]
    for fill in T.FILLS:
        np.testing.assert_allclose(wide.loc[visible_rows, f"torch.softmax, fill {fill}"], lib, rtol=0, atol=1e-6)


def test_float16_cannot_hold_minus_1e9_and_bfloat16_rounds_it():
    half = _summary("float16")
    assert "overflow" in half.loc["torch.softmax, fill -1e9", "error"]
    assert half.loc["torch.softmax, fill finfo.min", "fill value"] == "-65504"
    assert half.loc["torch.softmax, fill finfo.min", "fully masked row weight"] == pytest.approx(1 / 6, rel=1e-3)
    bf16 = _summary("bfloat16")
    assert bf16.loc["torch.softmax, fill -1e9", "error"] == ""
    assert bf16.loc["torch.softmax, fill -1e9", "fill value"] == "-9.98244e+08"  # 8 bits of mantissa


def test_summary_text_writes_nan_and_marks_refused_recipes():
    _, _, summary = T.fill_comparison(DEFAULT, "float16", 0)
    text = T.summary_text(summary).set_index("fact")
    assert list(text.columns) == [f"torch.softmax, fill {f}" for f in T.FILLS] + [T.LIBRARY]
    assert text.loc["fully masked row weight", "torch.softmax, fill -inf"] == "NaN"
    assert text.loc["fully masked row weight", "torch.softmax, fill -1e9"] == "—"
    assert "overflow" in text.loc["error", "torch.softmax, fill -1e9"]
    assert text.loc["error", T.LIBRARY] == "—"
    assert text.loc["fully masked row weight", T.LIBRARY] == "0"
    assert text.map(lambda v: isinstance(v, str)).all().all()  # ready for a table, no float NaN left


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="dtype must be one of"):
        T.fill_comparison(DEFAULT, "int8", 0)
    with pytest.raises(ValueError, match=r"sequence must lie in \[0, 1\]"):
        T.scores_and_weights(T.MaskSpec(6, (), (6, 2), 3, 2, None, 2), 0)
    with pytest.raises(ValueError, match="fill must be one of"):
        T.fill_value("-1e4", torch.float32)


@pytest.mark.parametrize("real", [1, 2, 3, 4, 5])
def test_hiding_padding_divides_the_kept_weights_by_their_old_sum(real):
    rows, stats = T.padding_renormalisation(real)
    kept = rows[rows.real]
    np.testing.assert_allclose(kept.after, kept.before / kept.before.sum(), rtol=1e-14)
    np.testing.assert_allclose(rows.after, rows.rescaled, atol=1e-16)
    assert (rows[~rows.real].after == 0).all() and stats["gap"] < 1e-15
    assert stats["factor"] == pytest.approx(1 / stats["kept"])
    ratios = kept.after / kept.before  # one common factor: every ratio between real tokens is kept
    assert ratios.max() - ratios.min() < 1e-14


def test_the_notes_padding_example_prints_logit_over_sum():
    rows, _ = T.padding_renormalisation(3)
    np.testing.assert_allclose(rows.after[:3], [0.3322, 0.3006, 0.3672], atol=5e-5)
    np.testing.assert_allclose(rows.by_sum[:3].round(2), T.NOTES_PRINTED)  # [0.33, 0.22, 0.44]
    with pytest.raises(ValueError, match="real"):
        T.padding_renormalisation(0)


@pytest.mark.parametrize("n", [2, 8, 16])
def test_the_notes_hierarchical_mask_sees_every_key_up_to_16(n):
    cells, stats = T.notes_masks(n, 1)
    notes_cells = cells[cells.part == "notes hierarchical"]
    assert notes_cells.allowed.all()
    by_part = stats.set_index("part")
    assert by_part.loc["notes hierarchical", "future"] == n * (n - 1) // 2
    assert by_part.loc["hierarchical", "causal"] and not by_part.loc["notes hierarchical", "causal"]


def test_the_notes_sliding_window_is_one_key_wider():
    _, stats = T.notes_masks(20, 4)
    by_part = stats.set_index("part")
    assert by_part.loc["notes sliding window", "widest"] == 5 and by_part.loc["sliding window", "widest"] == 4
    assert by_part.loc["notes hierarchical", "future"] == 120 + 6  # one full 16-block, one of 4
    for bad in ((1, 1), (33, 2), (8, 9)):
        with pytest.raises(ValueError):
            T.notes_masks(*bad)


def test_summary_text_says_none_for_facts_about_rows_that_do_not_exist():
    _, _, summary = T.fill_comparison(dataclasses.replace(DEFAULT, sequence=0), "float32", 0)
    assert (summary["fully masked rows"] == 0).all()
    text = T.summary_text(summary, none="none").set_index("fact")
    assert (text.loc["fully masked row weight"] == "none").all()
    assert (text.loc["max |grad| hidden logits (fully masked rows)"] == "none").all()
    assert text.loc["max weight on hidden keys (other rows)", T.LIBRARY] == "0"  # such keys exist: a number


def test_a_mask_spec_is_frozen_and_equal_specs_share_one_cached_result():
    from explorer.ui.cache import key_of

    listed = T.MaskSpec(6, ["padding", "sliding window"], [6, 2], 3, 2, None, 1)  # as a page might build it
    assert listed == DEFAULT and hash(listed) == hash(DEFAULT) and key_of(listed) == key_of(DEFAULT)
    assert (listed.parts, listed.lengths) == (("padding", "sliding window"), (6, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        listed.sequence = 0
    assert key_of(dataclasses.replace(DEFAULT, sequence=0)) != key_of(DEFAULT)
    assert T.mask_parts(listed)[0] is T.mask_parts(DEFAULT)[0]  # one entry for the whole server, not two
    custom = T.MaskSpec(2, ("custom",), (2,), 1, 1, [[True, False], [True, True]])
    assert custom.custom == ((True, False), (True, True))
