"""Inside a small language model: the role thresholds come from the shipped checkpoint's own scores."""

import math

import pytest
import torch

from attn_core.learn import charlm
from attn_core.learn.decoder import causal_mask
from explorer.tables import language_model as tables


def by_head(score: str):
    model = tables.shipped()[0]
    return tables.calibration()[score].reshape(-1, model.layers, model.num_heads)


def test_thresholds_lie_between_layer_1_and_layer_2():
    # on the probe phrases and the examples, layer 1's induction scores and layer 2's previous-token scores stay in
    # the low group: each threshold lies between the layers
    thresholds = tables.thresholds()
    induction, previous = by_head("induction"), by_head("previous_token")
    assert induction[:, 0].max() < thresholds["induction"] <= induction[:, 1].max()
    assert previous[:, 1].max() < thresholds["previous_token"] <= previous[:, 0].max()
    assert tables.calibration_sizes()["values"] == len(tables.calibration()["induction"])


def test_roles_on_the_probe_put_previous_token_heads_in_layer_1_and_induction_heads_in_layer_2():
    roles = charlm.head_roles(charlm.probe_scores(tables.shipped()[0]), tables.thresholds())
    assert "previous_token" in roles[0] and "induction" not in roles[0]
    assert "induction" in roles[1] and "previous_token" not in roles[1]


def test_a_score_without_a_separate_group_names_no_head():
    thresholds = tables.thresholds()
    for score, threshold in thresholds.items():
        if threshold is None:
            assert charlm.split_threshold(tables.calibration()[score]) is None
            for text in tables.EXAMPLES.values():
                assert score not in set(tables.head_table(text)["role"])


def test_head_range_is_that_heads_lowest_and_highest_score():
    low, high = tables.head_range("first_token", "2.3")
    values = by_head("first_token")[:, 1, 2]
    assert (low, high) == (float(values.min()), float(values.max()))


def test_the_stream_formula_with_its_bias_term_gives_the_models_first_layer():
    # h' = h + sum_h A^h LN(h) W_V^h W_O^h + b, b = b_V W_O + b_O: the value and output biases, the same at every
    # position because each row of A sums to 1 (the page's formula lacked b)
    model = tables.shipped()[0]
    tokens = charlm.encode(tables.EXAMPLES["repeat"])[None]
    block, attn = model.blocks[0], model.blocks[0].attn
    with torch.no_grad():
        h = model.embed(tokens) + model.pos[: tokens.shape[1]]
        after, weights = block(h, causal_mask(tokens.shape[1]))
        x = block.norm_attn(h)
        d_k = attn.d_k
        total = h + attn.w_o.weight @ attn.w_v.bias + attn.w_o.bias
        for head in range(attn.num_heads):
            cols = slice(head * d_k, (head + 1) * d_k)
            w_v, w_o = attn.w_v.weight[cols].T, attn.w_o.weight[:, cols].T
            total = total + weights[:, head] @ x @ w_v @ w_o
    assert torch.allclose(total, after, atol=1e-4)


@pytest.mark.parametrize("text", [tables.EXAMPLES["repeat"], "abcdefgh"])  # the second repeats no pair
def test_the_strongest_head_is_the_head_tables_largest_score_and_says_whether_it_earns_its_role(text):
    heads = tables.head_table(text)
    for score in ("previous_token", "induction", "first_token"):
        top = tables.strongest(text, score)
        best = heads[score].max()  # NaN only when no head has the score
        assert top["value"] == best or (math.isnan(best) and math.isnan(top["value"]))
        row = heads[(heads.layer == top["layer"]) & (heads["head"] == int(top["name"].split(".")[1]))]
        assert top["name"].startswith(f"{top['layer']}.") and len(row) == 1
        threshold = tables.thresholds()[score]
        assert top["role"] == (threshold is not None and top["value"] >= threshold)
    assert math.isnan(tables.strongest("abcdefgh", "induction")["value"])


def test_the_roles_table_and_the_entropy_export_are_cut_from_the_head_table():
    from explorer.ui.cache import check

    text, roles = tables.EXAMPLES["code"], {"previous_token": "prev", "induction": "ind"}
    with check():  # rebuilt on a hit and compared: the key holds every input, nothing is changed in place
        for _ in range(2):
            shown, rows = tables.roles_shown(text, roles), tables.entropy_rows(text)
    heads = tables.head_table(text)
    assert shown[["layer", "head"]].equals(heads[["layer", "head"]])
    assert (shown.role[heads.role == "previous_token"] == "prev").all() and (heads.role == "previous_token").any()
    assert shown.role.equals(heads.role.map(roles))  # a role without words stays empty, as the page had it
    assert rows.equals(heads[["layer", "head", "entropy", "uniform_entropy"]])
