import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from explorer.tables import multihead as T

SENTENCE = T.parse_tokens("the cat sat on the mat because it was tired")


@given(st.integers(1, 5000))
def test_divisors_are_exactly_the_numbers_that_divide(n):
    got = T.divisors(n)
    assert got == tuple(sorted(got)) and got[0] == 1 and got[-1] == n
    assert all(n % h == 0 for h in got)
    assert len(got) == sum(1 for h in range(1, n + 1) if n % h == 0)


def test_divisors_of_the_page_sizes_and_bad_input():
    assert T.divisors(12) == (1, 2, 3, 4, 6, 12)
    assert T.divisors(64) == (1, 2, 4, 8, 16, 32, 64)
    for bad in (0, -4, True, 2.0):
        with pytest.raises(ValueError, match="positive integer"):
            T.divisors(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the cat sat", ("the", "cat", "sat")),
        ("  le   chat\tdort ", ("le", "chat", "dort")),
        ("it's tired.", ("it's", "tired.")),
        ("猫 坐 在 垫子 上", ("猫", "坐", "在", "垫子", "上")),
        (" ".join(["w"] * 12), ("w",) * 12),
    ],
)
def test_parse_tokens_splits_on_whitespace(text, expected):
    assert T.parse_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (" ".join(["w"] * 13), "13 words; at most 12"),
        ("ok " + "x" * 17, "word 2 of the sentence is longer than 16 characters"),
        ("a" * 201, "longer than 200 characters"),
        ("<b>hi</b>", "word 1 of the sentence is not a plain word"),
        ("see [a](http://x.y)", "word 2 of the sentence is not a plain word"),
        ("**bold**", "not a plain word"),
        ("a\x00b", "not a plain word"),
        ("_x", "not a plain word"),
    ],
)
def test_parse_tokens_rejects_bad_text(text, match):
    with pytest.raises(ValueError, match=match):
        T.parse_tokens(text)


def test_toy_embeddings_depend_on_word_and_seed_only():
    e = T.toy_embeddings(("the", "cat", "the"), 16, seed=0)
    assert e.shape == (3, 16) and e.dtype == torch.float64
    assert torch.equal(e[0], e[2]) and not torch.equal(e[0], e[1])
    assert torch.equal(T.toy_embeddings(("cat",), 16, seed=0)[0], e[1])  # position does not matter
    assert not torch.equal(T.toy_embeddings(("the",), 16, seed=1)[0], e[0])


def test_toy_module_weights_do_not_depend_on_h_nor_touch_the_global_generator():
    state = torch.get_rng_state()
    one, four = T.toy_module(16, 1, seed=3), T.toy_module(16, 4, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    for a, b in zip(one.parameters(), four.parameters(), strict=True):
        assert torch.equal(a, b)
    assert four.d_k == 4


def _manual_head_maps(q_tokens, k_tokens, d_model, h, seed):
    """softmax(X W_q^i (Y W_k^i)^T / sqrt(d_k)) head by head, written out independently of the module."""
    mha = T.toy_module(d_model, h, seed)
    x, y = T.toy_embeddings(q_tokens, d_model, seed), T.toy_embeddings(k_tokens, d_model, seed)
    d_k = d_model // h
    q = x @ mha.w_q.weight.T.detach() + mha.w_q.bias.detach()  # (n_q, d_model)
    k = y @ mha.w_k.weight.T.detach() + mha.w_k.bias.detach()  # (n_k, d_model)
    maps = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)  # head i owns d_k consecutive columns
        maps.append(torch.softmax(q[:, cols] @ k[:, cols].T / math.sqrt(d_k), dim=-1))
    return torch.stack(maps).numpy()  # (h, n_q, n_k)


@pytest.mark.parametrize(("d_model", "h"), [(16, 4), (24, 3), (8, 1), (12, 12)])
def test_self_attention_maps_match_a_hand_written_split(d_model, h):
    r = T.forward_tables(SENTENCE, None, d_model, h, 0)
    maps = r["maps"].sort_values(["head", "query", "key"])["weight"].to_numpy().reshape(h, 10, 10)
    # float64 throughout: only summation order differs
    np.testing.assert_allclose(maps, _manual_head_maps(SENTENCE, SENTENCE, d_model, h, 0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(maps.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert r["d_k"] == d_model // h and r["check"] < 1e-12


def test_cross_attention_is_rectangular_and_uses_the_second_sentence():
    keys = T.parse_tokens("le chat dort")
    r = T.forward_tables(SENTENCE, keys, 16, 4, 0)
    assert (r["n_q"], r["n_k"]) == (10, 3)
    maps = r["maps"].sort_values(["head", "query", "key"])["weight"].to_numpy().reshape(4, 10, 3)
    np.testing.assert_allclose(maps, _manual_head_maps(SENTENCE, keys, 16, 4, 0), rtol=0, atol=1e-12)
    shapes = r["shapes"].set_index("tensor")["shape"]
    assert shapes["K = Y W_k"] == "(3, 16)" and shapes["softmax(Q_i K_iᵀ/√d_k)"] == "4 × (10, 3)"
    assert shapes["Concat(head_1..head_h)"] == "(10, 16)" and shapes["output = Concat W_o"] == "(10, 16)"


def test_heads_differ_but_a_repeated_word_has_identical_rows():
    maps = T.forward_tables(SENTENCE, None, 16, 4, 0)["maps"]
    per_head = maps.sort_values(["head", "query", "key"])["weight"].to_numpy().reshape(4, 10, 10)
    assert np.abs(per_head[0] - per_head[1]).max() > 0.05  # different slices, different maps
    np.testing.assert_array_equal(per_head[:, 0], per_head[:, 4])  # "the" at positions 0 and 4


def test_concat_blocks_belong_to_their_heads():
    concat = T.forward_tables(SENTENCE, None, 24, 6, 0)["concat"]
    assert len(concat) == 10 * 24
    assert (concat["head"] == concat["feature"] // 4).all() and concat["head"].nunique() == 6


@pytest.mark.parametrize("d_model", T.D_MODELS)
def test_parameter_count_is_the_same_for_every_h(d_model):
    sweep = T.parameter_sweep(d_model)
    assert tuple(sweep["heads"]) == T.divisors(d_model)
    assert (sweep["parameters"] == 4 * (d_model**2 + d_model)).all()
    assert (sweep["heads"] * sweep["d_k"] == d_model).all()
    assert (sweep["macs_per_pair"] == d_model).all()


def test_references_compute_d_k_and_counts_from_real_modules():
    ref = T.references().set_index("model")
    assert ref["d_k"].tolist() == [64, 128]
    assert ref.loc["BERT-base", "parameters"] == 4 * (768**2 + 768)
    assert ref.loc["GPT-3 175B", "parameters"] == 4 * (12288**2 + 12288)
    assert ref["same_count"].all()
    assert ref["n_divisors"].tolist() == [len(T.divisors(768)), len(T.divisors(12288))]


def test_shapes_name_every_step_by_an_identifier():
    self_attn = T.forward_tables(SENTENCE, None, 16, 4, 0)["shapes"]
    steps = ["input_q", "input_kv", "project", "project", "project", "split", "split", "attend", "attend"]
    assert self_attn["step"].tolist() == [*steps, "concat", "mix"]
    assert self_attn.set_index("tensor")["shape"]["K = X W_k"] == "(10, 16)"
    cross = T.forward_tables(SENTENCE, T.parse_tokens("le chat dort"), 16, 4, 0)["shapes"].set_index("step")
    assert cross.loc["input_kv", "tensor"] == "Y" and cross.loc["input_kv", "shape"] == "(3, 16)"
