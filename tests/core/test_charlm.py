"""The character model's corpus, encoding, batches, checkpoint round trip and reading of a text."""

import pytest
import torch

from attn_core.learn import charlm
from attn_core.learn.decoder import CausalDecoder


@pytest.fixture(scope="module")
def corpus():
    return charlm.corpus_text()


def test_corpus_is_python_help_text_in_the_alphabet(corpus):
    assert len(corpus) > 100_000
    assert 'The "assert" statement' in corpus
    assert not charlm.unknown_characters(corpus)
    assert charlm.corpus_sha256(corpus) == charlm.corpus_sha256(charlm.corpus_text())  # same text every call


def test_encode_decode_round_trip():
    text = "def f(x):\n    return x ** 2  # ~ {}[]|\\`'\""
    tokens = charlm.encode(text)
    assert tokens.dtype == torch.long and tokens.shape == (len(text),)
    assert charlm.decode(tokens) == text
    assert len(charlm.ALPHABET) == 96 and len(set(charlm.ALPHABET)) == 96


@pytest.mark.parametrize(
    ("text", "unknown"),
    [
        ("注意力", ["注", "意", "力"]),
        ("tab\there", ["\t"]),
        ("naïve", ["ï"]),
        ("a\x00b", ["\x00"]),
        ("\u202e", ["\u202e"]),
    ],
)
def test_hostile_characters_are_named_and_refused(text, unknown):
    assert charlm.unknown_characters(text) == unknown
    with pytest.raises(ValueError, match="outside the model's alphabet"):
        charlm.encode(text)


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["a"]])
def test_encode_refuses_what_is_not_text(bad):
    with pytest.raises(ValueError, match="text must be a str"):
        charlm.encode(bad)


def test_decode_refuses_ids_outside_the_alphabet():
    with pytest.raises(ValueError, match="tokens must lie"):
        charlm.decode([0, 96])


def test_repeated_windows_repeat_a_chunk_of_the_text(corpus):
    cfg = charlm.CharLMConfig(seq_len=64, min_chunk=8, max_chunk=16, repeat_source="text")
    tokens = charlm.encode(corpus[:5000])
    rows = charlm.repeated_windows(tokens, 6, cfg, torch.Generator().manual_seed(0))
    assert rows.shape == (6, 64)
    for row in rows:
        period = next(p for p in range(8, 17) if torch.equal(row[p:], row[:-p]))
        assert charlm.decode(row[:period]) in corpus[:5000]


def test_training_batch_mixes_repeated_and_plain_windows(corpus):
    cfg = charlm.CharLMConfig(seq_len=64, batch=8, repeat_fraction=0.25, max_chunk=32)
    batch = charlm.training_batch(charlm.encode(corpus), cfg, torch.Generator().manual_seed(1))
    assert batch.shape == (8, 64)
    periodic = [any(torch.equal(r[p:], r[:-p]) for p in range(cfg.min_chunk, cfg.max_chunk + 1)) for r in batch]
    assert periodic[:2] == [True, True] and not any(periodic[2:])


def test_random_chunks_are_drawn_from_the_whole_alphabet():
    cfg = charlm.CharLMConfig(seq_len=80, min_chunk=40, max_chunk=40, repeat_source="random")
    rows = charlm.repeated_windows(charlm.encode("ab" * 100), 50, cfg, torch.Generator().manual_seed(3))
    assert torch.equal(rows[:, 40:], rows[:, :40])
    assert len(set(rows.flatten().tolist())) > 90  # not the two characters of the text


def test_the_first_copy_first_steps_train_on_repeated_chunks_only(corpus):
    cfg = charlm.CharLMConfig(seq_len=64, batch=4, repeat_fraction=0.25, max_chunk=32, copy_first=10)
    tokens = charlm.encode(corpus)

    def periodic(batch):
        return [any(torch.equal(r[p:], r[:-p]) for p in range(cfg.min_chunk, cfg.max_chunk + 1)) for r in batch]

    assert periodic(charlm.training_batch(tokens, cfg, torch.Generator().manual_seed(2), step=10)) == [True] * 4
    later = periodic(charlm.training_batch(tokens, cfg, torch.Generator().manual_seed(2), step=11))
    assert later == [True, False, False, False]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("repeat_fraction", 1.5),
        ("max_chunk", 100),
        ("min_chunk", 1),
        ("lr", -1.0),
        ("steps", 0),
        ("copy_first", -1),
        ("repeat_source", "web"),
    ],
)
def test_config_refuses_bad_recipes(field, value):
    with pytest.raises(ValueError, match=field):
        charlm.CharLMConfig(**{field: value})


def test_training_lowers_the_loss_and_a_checkpoint_round_trips(tmp_path, corpus):
    torch.set_num_threads(1)
    cfg = charlm.CharLMConfig(
        d_model=32, seq_len=32, batch=8, steps=30, eval_every=15, max_chunk=16, warmup=5, copy_first=0
    )
    items = list(charlm.train_iter(cfg))
    evals, model = items[:-1], items[-1]
    assert [e.step for e in evals] == [15, 30]
    assert evals[-1].text_loss < evals[0].text_loss
    path = tmp_path / "m.pt"
    size = charlm.save_checkpoint(model, cfg, path, corpus=corpus, measured={"cpu_seconds": 1.0})
    assert size == path.stat().st_size
    loaded, meta = charlm.load_checkpoint(path)
    assert meta["recipe"]["d_model"] == 32 and meta["corpus_sha256"] == charlm.corpus_sha256(corpus)
    tokens = charlm.encode("spam and eggs")[None]
    expected = model.half().float()(tokens)[0]  # the checkpoint holds fp16 weights
    assert torch.allclose(loaded(tokens)[0], expected, atol=1e-5)


def test_a_file_that_is_no_checkpoint_is_refused(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"format": 99}, path)
    with pytest.raises(ValueError, match="not a character model checkpoint"):
        charlm.load_checkpoint(path)


def test_read_returns_maps_scores_and_losses_of_the_text():
    model = CausalDecoder(len(charlm.ALPHABET), 16, d_model=16, num_heads=2, layers=2, generator=torch.Generator())
    r = charlm.read(model.eval(), "abcabc")
    assert r.weights.shape == (2, 2, 6, 6)
    assert torch.allclose(r.weights.sum(-1), torch.ones(2, 2, 6))
    assert r.losses.shape == (5,) and r.repeated.tolist() == [False, False, False, True, True]
    assert set(r.scores) >= {"previous_token", "induction", "local"}
    with pytest.raises(ValueError, match="2 to 16 characters"):
        charlm.read(model, "x" * 17)


def test_roles_follow_the_thresholds_in_order():
    scores = {name: torch.zeros(1, 3) for name in charlm.ROLE_ORDER}
    scores["previous_token"][0, 0] = 0.9
    scores["induction"][0, 1] = 0.9
    scores["previous_token"][0, 1] = 0.9  # induction comes first
    scores["induction"][0, 2] = float("nan")  # undefined: earns nothing
    scores["first_token"][0, 2] = 0.9  # no threshold for it: earns nothing
    thresholds = {"induction": 0.5, "previous_token": 0.5, "first_token": None}
    assert charlm.head_roles(scores, thresholds) == [["previous_token", "induction", "mixed"]]


def test_a_threshold_splits_two_separate_groups_halfway_across_the_gap():
    values = [0.02, 0.05, 0.04, 0.1, float("nan"), 0.6, 0.7, 0.65]
    assert charlm.split_threshold(values) == pytest.approx((0.1 + 0.6) / 2)


@pytest.mark.parametrize(
    "values",
    [
        [0.1 * i for i in range(10)],  # a continuum: no gap wider than the others
        [0.0, 0.1, 0.2, 0.45, 0.6, 0.95],  # the widest split's gap (0.25) no wider than one inside (0.35)
        [0.3, 0.3, 0.3],  # all alike
        [0.1, float("nan")],  # too few values
    ],
)
def test_no_threshold_where_no_group_stands_apart(values):
    assert charlm.split_threshold(values) is None
