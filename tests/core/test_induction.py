import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core.learn import (
    CausalDecoder,
    InductionConfig,
    InductionResult,
    head_scores,
    knockout_losses,
    phase_change,
    probe_sequence,
    repeated_batch,
    split_losses,
    train_induction,
    train_induction_iter,
    work,
)
from attn_core.learn.heads import SCORES, repeated_pairs
from attn_core.learn.induction import heldout_batch, restore


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matrices: one thread is fastest, and two spin against each other on a loaded machine.

    torch.set_num_threads, not attn_core.learn.one_thread: after tests/conftest.py's torch.set_num_threads(2),
    one_thread's per-thread OpenMP setting left the recipe's training ~20x slower (measured: 40 steps 33 s wall,
    4.9 s CPU, against 1.2 s and 0.6 s), while torch.set_num_threads(1) is as fast as in a fresh process.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SEGMENT = 5  # hand-made maps: a segment of 5 distinct tokens repeated to 17 positions
N = 17


def _repeated(segment=SEGMENT, n=N):
    return (torch.arange(n) % segment)[None, :] + 3  # (1, n), tokens 3..7


def _one_key_map(keys) -> torch.Tensor:
    """(1, 1, n, n): query i puts all its weight on key keys[i] (<= i)."""
    n = len(keys)
    w = torch.zeros(1, 1, n, n)
    w[0, 0, torch.arange(n), torch.tensor(keys)] = 1.0
    return w


def _uniform_map(n=N) -> torch.Tensor:
    w = torch.tril(torch.ones(n, n))
    return (w / w.sum(-1, keepdim=True))[None, None]


def test_previous_token_map_scores_one_as_previous_token_and_nothing_else():
    s = head_scores([_one_key_map([0] + list(range(N - 1)))], _repeated())
    assert set(s) == set(SCORES)
    assert s["previous_token"].item() == pytest.approx(1.0)
    assert s["induction"].item() == pytest.approx(0.0)
    assert s["duplicate_token"].item() == pytest.approx(0.0)
    assert s["first_token"].item() == pytest.approx(1 / (N - 1))  # only query 1's previous token is token 0
    assert s["entropy"].item() == pytest.approx(0.0)


def test_induction_map_on_a_repeated_sequence_scores_one_as_induction():
    # queries in the copies look at the token after the previous occurrence of their own token: i - SEGMENT + 1;
    # the first copy's queries have none and look at themselves
    keys = list(range(SEGMENT)) + [i - SEGMENT + 1 for i in range(SEGMENT, N)]
    s = head_scores([_one_key_map(keys)], _repeated())
    assert s["induction"].item() == pytest.approx(1.0)
    assert s["previous_token"].item() == pytest.approx(0.0)
    assert s["duplicate_token"].item() == pytest.approx(0.0)


def test_duplicate_token_map_scores_one_as_duplicate_token():
    keys = [0] * SEGMENT + [i - SEGMENT for i in range(SEGMENT, N)]
    s = head_scores([_one_key_map(keys)], _repeated())
    assert s["duplicate_token"].item() == pytest.approx(1.0)
    assert s["induction"].item() == pytest.approx(0.0)


def test_uniform_map_entropy_is_log_of_keys_seen_and_sink_is_one_over_them():
    s = head_scores([_uniform_map()], _repeated())
    i = torch.arange(1, N, dtype=torch.float64)
    assert s["entropy"].item() == pytest.approx(float(torch.log(i + 1).mean()), rel=1e-5)
    assert s["first_token"].item() == pytest.approx(float((1 / (i + 1)).mean()), rel=1e-5)
    assert s["previous_token"].item() == pytest.approx(float((1 / (i + 1)).mean()), rel=1e-5)


def test_induction_counts_every_earlier_occurrence_and_only_queries_that_have_one():
    tokens = torch.tensor([[1, 2, 1, 3, 1]])  # query 4 has earlier 1s at 0 and 2: induction keys 1 and 3
    w = torch.zeros(1, 1, 5, 5)
    w[0, 0, :, 0] = 1.0  # queries without an earlier copy (0, 1, 3) do not count, whatever they do
    w[0, 0, 2] = torch.tensor([0.0, 0.7, 0.3, 0, 0])
    w[0, 0, 4] = torch.tensor([0.1, 0.2, 0.1, 0.4, 0.2])
    s = head_scores([w], tokens)
    assert s["induction"].item() == pytest.approx((0.7 + 0.6) / 2)
    assert s["duplicate_token"].item() == pytest.approx((0.0 + 0.2) / 2)


def test_scores_land_in_their_layer_and_head():
    prev = _one_key_map([0] + list(range(N - 1)))
    ind = _one_key_map([0] * SEGMENT + [i - SEGMENT + 1 for i in range(SEGMENT, N)])
    layer0 = torch.cat([_uniform_map(), prev], dim=1)  # (1, 2, n, n)
    layer1 = torch.cat([ind, _uniform_map()], dim=1)
    s = head_scores([layer0, layer1.half()], _repeated())
    assert s["induction"].shape == (2, 2)
    assert s["previous_token"][0, 1] == pytest.approx(1.0) and s["previous_token"][0, 0] < 0.3
    assert s["induction"][1, 0] == pytest.approx(1.0) and s["induction"][1, 1] < 0.3


def test_a_score_with_no_qualifying_query_is_nan():
    s = head_scores([_uniform_map(4)], torch.tensor([[1, 2, 3, 4]]))
    assert math.isnan(s["induction"].item()) and math.isnan(s["duplicate_token"].item())


@pytest.mark.parametrize(
    "weights, tokens, word",
    [
        ([], _repeated(), "weights"),
        (torch.zeros(1, 1, N, N), _repeated(), "weights"),
        ([torch.zeros(1, 1, N, N - 1)], _repeated(), r"weights\[0\]"),
        ([torch.zeros(1, 1, N, N), torch.zeros(1, 2, N, N)], _repeated(), r"weights\[1\]"),
        ([torch.zeros(1, 1, N, N, dtype=torch.long)], _repeated(), r"weights\[0\]"),
        ([_uniform_map()], _repeated().float(), "tokens"),
        ([_uniform_map()], _repeated()[0], "tokens"),
    ],
)
def test_head_scores_bad_arguments_name_themselves(weights, tokens, word):
    with pytest.raises(ValueError, match=word):
        head_scores(weights, tokens)


def test_repeated_pairs_mark_pairs_seen_before():
    tokens = torch.tensor([[1, 2, 3, 1, 2, 4, 1, 2]])
    # pairs: 12 23 31 12 24 41 12 -> the 4th and 7th repeat an earlier pair
    assert repeated_pairs(tokens)[0].tolist() == [False, False, False, True, False, False, True]


def test_split_losses_on_logits_that_copy_only_where_copying_can():
    tokens = _repeated()
    vocab = 9
    logits = torch.zeros(1, N, vocab)
    right = torch.nn.functional.one_hot(tokens[0, 1:], vocab).float() * 50
    # confident from position SEGMENT on; position SEGMENT - 1 predicts the first copy's start after its end,
    # a pair never seen: copying cannot know the segment ended there
    logits[0, SEGMENT : N - 1] = right[SEGMENT:]
    out = split_losses(logits, tokens)
    assert out["repeated"] == pytest.approx(0.0, abs=1e-6)
    assert out["first_seen"] == pytest.approx(math.log(vocab), rel=1e-6)
    n_first = SEGMENT
    assert out["all"] == pytest.approx(n_first * math.log(vocab) / (N - 1), rel=1e-6)


def test_split_losses_bad_arguments():
    with pytest.raises(ValueError, match="logits"):
        split_losses(torch.zeros(1, N, 3, 2), _repeated())
    with pytest.raises(ValueError, match="tokens"):
        split_losses(torch.zeros(1, 1, 3), torch.zeros(1, 1, dtype=torch.long))


# --- the decoder ---


def _model(**kw):
    args = dict(d_model=16, num_heads=2, layers=2)
    args.update(kw)
    return CausalDecoder(11, 12, generator=torch.Generator().manual_seed(0), **args)


def _tokens(b=3, n=12, seed=1):
    return torch.randint(0, 11, (b, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kw", [{}, {"mlp": True}, {"positions": "sinusoidal"}, {"layers": 1, "num_heads": 4}])
def test_decoder_shapes_causality_and_rebuild_from_config(kw):
    model = _model(**kw)
    x = _tokens()
    logits, weights = model(x)
    assert logits.shape == (3, 12, 11)
    assert len(weights) == model.config["layers"]
    for w in weights:
        assert w.shape == (3, model.config["num_heads"], 12, 12)
        assert torch.allclose(w.sum(-1), torch.ones(()))
        assert float(torch.triu(w.detach(), diagonal=1).abs().max()) == 0.0  # no query sees a later key
    changed = x.clone()
    changed[:, 7] = (changed[:, 7] + 1) % 11
    assert torch.equal(model(changed)[0][:, :7], logits[:, :7])  # a later token never changes earlier logits
    twin = CausalDecoder(**model.config, generator=torch.Generator().manual_seed(5))
    twin.load_state_dict(model.state_dict())
    assert torch.equal(twin(x)[0], logits)


def test_decoder_attention_matches_multihead_attention():
    """The per-head path (needed for knockout) computes what MultiHeadAttention.forward (naive_attention) does."""
    from attn_core.masks import causal_mask

    model = _model()
    block = model.blocks[0]
    h = model.embed(_tokens()) + model.pos[:12]
    mask = causal_mask(12)
    ours, w = block(h, mask)
    ref_out, ref_w = block.attn(block.norm_attn(h), mask=mask)
    assert torch.allclose(ours, h + ref_out, atol=1e-6)
    assert torch.allclose(w, ref_w)


def test_maps_attention_is_naive_attention_at_the_recipes_size_with_gradients():
    """The snapshots' path (one baddbmm with a -inf bias) against naive_attention, values and gradients."""
    from attn_core.learn.decoder import _attention
    from attn_core.masks import causal_mask
    from attn_core.naive import naive_attention

    gen = torch.Generator().manual_seed(0)
    qkv = [torch.randn(8, 32, 4, 16, generator=gen).transpose(1, 2).requires_grad_() for _ in range(3)]
    mask, grad = causal_mask(32), torch.randn(8, 4, 32, 16, generator=gen)
    results = []
    for attention in (_attention, lambda q, k, v, m, s: naive_attention(q, k, v, m, scale=s)):
        out, weights = attention(*qkv, mask, 0.25)
        out.backward(grad)
        results.append((out.detach(), weights.detach(), [x.grad.clone() for x in qkv]))
        for x in qkv:
            x.grad = None
    (out, weights, grads), (ref_out, ref_weights, ref_grads) = results
    assert torch.allclose(out, ref_out, atol=1e-6) and torch.allclose(weights, ref_weights, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(grads, ref_grads, strict=True))


@pytest.mark.parametrize("kw", [{}, {"mlp": True}, {"positions": "sinusoidal"}])
def test_decoder_without_maps_computes_the_same_logits_and_gradients(kw):
    """maps=False (torch's fused causal kernel, for training) is the same function as the naive path with maps."""
    x = _tokens()
    grads = []
    for maps in (True, False):
        model = _model(**kw)
        logits, weights = model(x, knockout={(1, 0)}, knockout_mode="mean", maps=maps)
        assert len(weights) == (model.config["layers"] if maps else 0)
        logits.square().mean().backward()
        grads.append((logits.detach(), [p.grad for p in model.parameters()]))
    (with_maps, g_maps), (without, g_fused) = grads
    assert torch.allclose(without, with_maps, atol=1e-5)
    for a, b in zip(g_maps, g_fused, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_training_steps_make_no_attention_maps(monkeypatch):
    """Only snapshots (every snapshot_every steps) build maps; the steps between them take the fused path."""
    import attn_core.learn.decoder as decoder

    calls = []
    real = decoder._attention
    monkeypatch.setattr(decoder, "_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    train_induction(InductionConfig(steps=6, snapshot_every=3, d_model=16, num_heads=2))
    snapshots, layers, forwards = 3, 2, 2  # steps 0, 3, 6; the held-out batch and the probe
    assert len(calls) == snapshots * layers * forwards


def test_decoder_bad_maps_argument():
    with pytest.raises(ValueError, match="maps"):
        _model()(_tokens(), maps=1)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_knockout_removes_only_that_heads_contribution(mode):
    """Knocking out head 1 of layer 1 equals removing its columns of W_o (plus, for mean, a constant bias)."""
    model, x = _model(), _tokens()
    d_k = model.config["d_model"] // model.config["num_heads"]
    cols = slice(d_k, 2 * d_k)
    with torch.no_grad():
        base_logits, base_w = model(x)
        knocked_logits, knocked_w = model(x, knockout=frozenset({(1, 1)}), knockout_mode=mode)
        edited = _model()
        edited.load_state_dict(model.state_dict())
        w_o = edited.blocks[1].attn.w_o
        if mode == "mean":
            block = model.blocks[1]
            h = model.embed(x) + model.pos[:12]
            h = model.blocks[0](h, torch.ones(12, 12).tril().bool())[0]
            xn = block.norm_attn(h)
            b, n, _ = xn.shape
            v = block.attn.w_v(xn).view(b, n, 2, d_k).transpose(1, 2)
            heads = base_w[1] @ v  # (B, H, n, d_k)
            w_o.bias += w_o.weight[:, cols] @ heads[:, 1].mean(dim=(0, 1))
        w_o.weight[:, cols] = 0.0
        expected = edited(x)[0]
    assert torch.allclose(knocked_logits, expected, atol=1e-5)
    assert not torch.allclose(knocked_logits, base_logits, atol=1e-3)
    # the knocked head still attends; layer 1 is the last, so no map moves
    for a, b in zip(base_w, knocked_w, strict=True):
        assert torch.equal(a, b)


def test_knocking_out_layer_0_moves_layer_1s_maps_not_layer_0s():
    model, x = _model(), _tokens()
    with torch.no_grad():
        _, base = model(x)
        _, knocked = model(x, knockout={(0, 0)})
    assert torch.equal(base[0], knocked[0])
    assert not torch.allclose(base[1], knocked[1])


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"knockout": {(2, 0)}}, "knockout"),
        ({"knockout": {(0, 2)}}, "knockout"),
        ({"knockout": {(0,)}}, "knockout"),
        ({"knockout": "0,1"}, "knockout"),
        ({"knockout_mode": "resample"}, "knockout_mode"),
    ],
)
def test_decoder_bad_knockout_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        _model()(_tokens(), **kwargs)


@pytest.mark.parametrize(
    "tokens",
    [torch.zeros(2, 13, dtype=torch.long), torch.full((1, 4), 11), torch.zeros(1, 4), torch.zeros(4, dtype=torch.long)],
)
def test_decoder_bad_tokens(tokens):
    with pytest.raises(ValueError, match="tokens"):
        _model()(tokens)


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"d_model": 15}, "d_model"),
        ({"num_heads": 0}, "num_heads"),
        ({"layers": 0}, "layers"),
        ({"mlp": 1}, "mlp"),
        ({"positions": "rotary"}, "positions"),
        ({"generator": 0}, "generator"),
    ],
)
def test_decoder_bad_architecture(kw, word):
    args = dict(d_model=16, num_heads=2, layers=2, generator=torch.Generator())
    args.update(kw)
    with pytest.raises(ValueError, match=word):
        CausalDecoder(11, 12, **args)


# --- the task ---


def test_repeated_batch_rows_are_distinct_segments_repeated():
    cfg = InductionConfig(vocab=40, seq_len=48, min_segment=3, max_segment=20)
    x = repeated_batch(cfg, 200, torch.Generator().manual_seed(0))
    assert x.shape == (200, 48) and x.dtype == torch.long
    assert int(x.min()) >= 0 and int(x.max()) < 40
    lengths = set()
    for row in x.tolist():
        period = next(p for p in range(1, 49) if all(row[t] == row[t % p] for t in range(48)))
        assert len(set(row[:period])) == period  # distinct within the segment
        lengths.add(period)
    assert min(lengths) == 3 and max(lengths) == 20  # the whole range is drawn
    assert torch.equal(x, repeated_batch(cfg, 200, torch.Generator().manual_seed(0)))


def test_probe_sequence_is_fixed_and_repeats_its_longest_segment():
    cfg = InductionConfig()
    p = probe_sequence(cfg, seed=3)
    assert p.shape == (1, cfg.seq_len)
    assert torch.equal(p, probe_sequence(cfg, seed=3)) and not torch.equal(p, probe_sequence(cfg, seed=4))
    L = cfg.max_segment
    assert torch.equal(p[0, L : 2 * L], p[0, :L]) and len(set(p[0, :L].tolist())) == L


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"layers": 0}, "layers"),
        ({"d_model": 30, "num_heads": 4}, "d_model"),
        ({"positions": "none"}, "positions"),
        ({"mlp": "yes"}, "mlp"),
        ({"max_segment": 17}, "max_segment"),  # two copies no longer fit in seq_len 32
        ({"min_segment": 1}, "min_segment"),
        ({"vocab": 12}, "vocab"),  # fewer symbols than a segment's distinct tokens
        ({"steps": 0}, "steps"),
        ({"lr": 0.0}, "lr"),
        ({"lr": 2.0}, "lr"),
        ({"batch": 0}, "batch"),
        ({"seed": -1}, "seed"),
        ({"snapshot_every": 0}, "snapshot_every"),
    ],
)
def test_config_bad_arguments_name_themselves(kw, word):
    with pytest.raises(ValueError, match=word):
        InductionConfig(**kw)


def test_task_functions_check_their_arguments():
    with pytest.raises(ValueError, match="cfg"):
        repeated_batch({"vocab": 64}, 2, torch.Generator())
    with pytest.raises(ValueError, match="batch"):
        repeated_batch(InductionConfig(), 0, torch.Generator())
    with pytest.raises(ValueError, match="generator"):
        repeated_batch(InductionConfig(), 2, 0)
    with pytest.raises(ValueError, match="seed"):
        probe_sequence(InductionConfig(), seed=-1)


# --- training, phase change, knockout losses, work ---

TINY = dict(d_model=16, num_heads=2, vocab=12, seq_len=16, min_segment=2, max_segment=6, batch=4)


def test_train_iter_snapshots_then_result_and_is_deterministic():
    cfg = InductionConfig(**TINY, steps=7, snapshot_every=3)
    items = list(train_induction_iter(cfg))
    snaps, result = items[:-1], items[-1]
    assert isinstance(result, InductionResult) and not result.stopped
    assert [s.step for s in snaps] == [0, 3, 6, 7] and result.snapshots == tuple(snaps)
    first = snaps[0]
    assert set(first.losses) == {"first_seen", "repeated", "all"} and math.isnan(first.train_loss)
    assert math.isfinite(snaps[1].train_loss)
    assert all(first.scores[name].shape == (2, 2) for name in SCORES)
    assert first.probe_maps.shape == (2, 2, 16, 16) and first.probe_maps.dtype == np.float16
    assert result.seconds > 0 and result.cpu_seconds >= 0
    again = train_induction(cfg)
    assert [s.losses for s in again.snapshots] == [s.losses for s in snaps]
    assert all(torch.equal(result.state[k], again.state[k]) for k in result.state)


def test_training_steps_with_fused_adam_as_the_foreach_adam_would():
    """The fused optimizer (a third of the foreach one's cost on CPU) makes the same updates within rounding."""
    from attn_core.learn.induction import _update, build_model, optimizer

    cfg = InductionConfig(**TINY, steps=8)
    models = [build_model(cfg), build_model(cfg)]
    fused = optimizer(models[0], cfg)
    assert fused.defaults["fused"]
    foreach = torch.optim.Adam(models[1].parameters(), lr=cfg.lr, foreach=True)
    data = torch.Generator().manual_seed(1)
    for _ in range(cfg.steps):
        x = repeated_batch(cfg, cfg.batch, data)
        assert _update(models[0], fused, x) == pytest.approx(_update(models[1], foreach, x), abs=1e-5)
    held = heldout_batch(cfg)
    assert torch.allclose(models[0](held)[0], models[1](held)[0], atol=1e-4)
    # Key biases excepted: they shift each query's scores by a constant, so their gradient is rounding noise
    # (~1e-9) that Adam scales up to steps of up to lr / 10, different in each kernel and without effect.
    for (name, a), b in zip(models[0].named_parameters(), models[1].parameters(), strict=True):
        assert name.endswith("w_k.bias") or torch.allclose(a, b, atol=1e-5, rtol=1e-4), name


def test_stop_ends_the_run_with_a_last_snapshot():
    cfg = InductionConfig(**TINY, steps=50, snapshot_every=10)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 4  # asked before steps 0..4: stops before update 5

    result = train_induction(cfg, stop=stop)
    assert result.stopped and [s.step for s in result.snapshots] == [0, 4]
    untrained = train_induction(cfg, stop=lambda: True)
    assert untrained.stopped and [s.step for s in untrained.snapshots] == [0]
    with pytest.raises(ValueError, match="stop"):
        train_induction(cfg, stop=True)


def _fall(at, steps=range(0, 401, 20), high=4.2, low=0.2, width=15.0):
    return list(steps), [low + (high - low) / (1 + math.exp((s - at) / width)) for s in steps]


FLAT = [4.2] * 21  # a first-seen loss that stays while the repeated one falls


def test_phase_change_finds_the_steepest_sustained_fall_away_from_the_first_seen_loss():
    steps, losses = _fall(250)
    assert abs(phase_change(steps, losses, FLAT) - 250) <= 10  # the middle of the steepest 20-step interval
    steps, losses = _fall(130)
    losses[3] += 0.5  # a noisy bump before the fall does not move it
    assert abs(phase_change(steps, losses, FLAT) - 130) <= 10
    steps, losses = _fall(250)
    _, rising = _fall(250, high=4.2, low=4.5)  # the first-seen loss rising a little as copying takes over
    assert abs(phase_change(steps, losses, rising) - 250) <= 10


def test_phase_change_ignores_a_fall_of_both_losses_together():
    # A model learning which tokens are common lowers both losses at once (the 1-layer model's early fall): no
    # copying starts, so no phase change, though the repeated-token loss alone falls 4 nats.
    steps, losses = _fall(100)
    assert phase_change(steps, losses, losses) is None
    assert phase_change(steps, losses, [x + 0.3 for x in losses]) is None
    _, common = _fall(60, high=6.2, low=4.2)  # both fall 2 nats around step 60...
    _, copying = _fall(250, low=1.2)  # ...then the repeated one 3 nats more around step 250
    repeated = [c - (4.2 - k) for c, k in zip(common, copying, strict=True)]
    assert abs(phase_change(steps, repeated, common) - 250) <= 10


def test_phase_change_needs_the_run_to_end_copying():
    # A sudden 2-nat fall that leaves the repeated-token loss at half the first-seen one is guessing among the
    # tokens seen (what one layer can do), not copying; the same fall to a quarter of it is.
    steps, guessing = _fall(200, high=4.2, low=2.2)
    assert phase_change(steps, guessing, FLAT) is None
    _, copying = _fall(200, high=3.0, low=1.0)
    assert abs(phase_change(steps, copying, FLAT) - 200) <= 10


@pytest.mark.parametrize(
    "losses",
    [
        [4.2] * 21,  # flat
        [4.2 - 0.02 * i for i in range(21)],  # a slow slide of 0.4 nats
        [4.2 - 0.1 * i for i in range(21)],  # 2 nats, but spread evenly over the run: no sudden fall
        [4.2] * 10 + [2.0] * 2 + [4.2] * 9,  # falls, then comes back: not sustained
    ],
)
def test_phase_change_none_without_a_sudden_lasting_fall(losses):
    assert phase_change(list(range(0, 401, 20)), losses, FLAT) is None


@pytest.mark.parametrize(
    "steps, losses, word",
    [
        ([0], [1.0], "steps"),
        ([0, 1.5], [1.0, 2.0], "steps"),
        ([0, 2, 1], [1.0, 2.0, 3.0], "steps"),
        ([0, 1, 2], [1.0, 2.0], "repeated_losses"),
        ([0, 1, 2], [1.0, float("nan"), 2.0], "repeated_losses"),
    ],
)
def test_phase_change_bad_arguments(steps, losses, word):
    with pytest.raises(ValueError, match=word):
        phase_change(steps, losses, [4.0] * len(steps) if len(steps) > 1 else [4.0])
    with pytest.raises(ValueError, match="first_seen_losses"):
        phase_change([0, 1, 2], [1.0, 2.0, 3.0], [4.0, 4.0])


def test_knockout_losses_on_a_result_and_on_a_model():
    cfg = InductionConfig(**TINY, steps=5, snapshot_every=5)
    result = train_induction(cfg)
    intact = knockout_losses(result, frozenset())
    assert intact == result.snapshots[-1].losses  # the held-out batch the snapshots were measured on
    model = restore(result)
    tokens = heldout_batch(cfg)
    assert knockout_losses(model, {(0, 1)}, "mean", tokens=tokens) == knockout_losses(result, {(0, 1)}, "mean")
    assert knockout_losses(result, {(0, 1)}) != intact
    with pytest.raises(ValueError, match="tokens"):
        knockout_losses(model, {(0, 1)})
    with pytest.raises(ValueError, match="mode"):
        knockout_losses(result, {(0, 1)}, "resample")
    with pytest.raises(ValueError, match="result_or_model"):
        knockout_losses(cfg, {(0, 1)})
    with pytest.raises(ValueError, match="knockout"):
        knockout_losses(result, {(2, 0)})


def test_work_grows_with_each_cost():
    base = InductionConfig()
    w = work(base)
    assert w > 0
    for change in ({"steps": 1200}, {"batch": 64}, {"layers": 3}, {"d_model": 128}, {"mlp": True}, {"vocab": 256}):
        assert work(InductionConfig(**{**base.__dict__, **change})) > w, change
    with pytest.raises(ValueError, match="cfg"):
        work({"steps": 10})


def test_cli_prints_losses_phase_change_grid_and_knockouts(capsys):
    from attn_core.learn.__main__ import main

    tiny = "--d-model 16 --num-heads 2 --vocab 12 --seq-len 16 --min-segment 2 --max-segment 6 --batch 4"
    assert main(["induction", *tiny.split(), "--steps", "4", "--snapshot-every", "2", "--mode", "mean"]) == 0
    out = capsys.readouterr().out
    table = [line.split() for line in out.splitlines() if line[:5].strip().isdigit()]
    assert [int(row[0]) for row in table] == [0, 2, 4]
    assert "phase change" in out and "none" in out.split("phase change")[1].splitlines()[0]  # 4 steps: no fall
    for name in SCORES:
        assert f"\n{name}:\n[[" in out
    assert "knockout (mean)" in out and "L1H1" in out and "all of L0" in out


def test_cli_bad_argument_is_a_clear_error(capsys):
    from attn_core.learn.__main__ import main

    assert main(["induction", "--lr", "0"]) == 2
    assert "lr must be" in capsys.readouterr().err


# --- the recipe (InductionConfig's defaults), seed 0: one run of each model, shared by the tests below ---
# Thresholds from benchmarks/induction.md (python -m tools.induction_runs --seeds 5: 2 layers and 1 layer, seeds
# 0-4, 400 steps), each set between what the two models reached, with room on both sides:
# - strongest layer-1 induction score, 2 layers: 0.90-0.99 (seed 0: 0.97); strongest induction score of the
#   1-layer model: 0.16-0.18; untrained: about 0.1. Halfway: 0.5.
# - strongest previous-token score, always in layer 0, 2 layers: 0.35-0.47 (seed 0: 0.47); 1 layer: 0.05-0.06;
#   untrained: about 0.1. Threshold 0.25.
# - knocking out that head (zero or mean) raised the repeated-token loss from 0.00-0.08 to 2.35-4.04 nats
#   (seed 0: 0.01 -> 3.14): a rise of at least 1 nat is asked.
INDUCTION_FORMED = 0.5  # a layer-1 head above this is an induction head
PREVIOUS_FORMED = 0.25  # a layer-0 head above this is a previous-token head
KNOCKOUT_RISE = 1.0  # nats the repeated-token loss must rise when the previous-token head is knocked out


@pytest.fixture(scope="module")
def recipe(one_thread):
    cfg = InductionConfig()
    return train_induction(cfg), train_induction(replace(cfg, layers=1))


def _phase(result):
    snaps = result.snapshots
    return phase_change(
        [s.step for s in snaps], [s.losses["repeated"] for s in snaps], [s.losses["first_seen"] for s in snaps]
    )


def test_recipe_forms_an_induction_head_in_layer_1_fed_by_a_previous_token_head_in_layer_0(recipe):
    two, _ = recipe
    last = two.snapshots[-1]
    assert float(last.scores["induction"][1].max()) > INDUCTION_FORMED
    prev = last.scores["previous_token"]
    layer, _ = np.unravel_index(int(np.argmax(prev)), prev.shape)
    assert layer == 0 and float(prev.max()) > PREVIOUS_FORMED
    assert float(last.scores["induction"][0].max()) < INDUCTION_FORMED  # layer 0 alone cannot do it
    step = _phase(two)
    assert step is not None and 0 < step < two.config.steps
    assert last.losses["repeated"] < 1.0 < last.losses["first_seen"]


def test_one_layer_forms_no_induction_head(recipe):
    _, one = recipe
    last = one.snapshots[-1]
    assert float(last.scores["induction"].max()) < INDUCTION_FORMED
    assert _phase(one) is None
    assert last.losses["repeated"] > 2.0


def test_one_layer_has_no_phase_change_in_the_pages_longest_run(one_thread):
    # 1000 steps (the induction page's largest, its cadence of snapshots): the 1-layer model's repeated-token loss
    # falls more than 1 nat in its first tenth, but its first-seen loss falls with it (it learns which tokens are
    # common) and then the gap between them opens slowly: no copying starts. Marked at step 16 before the fix.
    one = train_induction(InductionConfig(layers=1, steps=1000, snapshot_every=33))
    losses = [s.losses for s in one.snapshots]
    assert losses[0]["repeated"] - losses[3]["repeated"] > 1.0  # step 0 -> 99: the fall the old rule marked
    assert _phase(one) is None


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_knocking_out_the_previous_token_head_raises_the_repeated_token_loss(recipe, mode):
    two, _ = recipe
    prev = two.snapshots[-1].scores["previous_token"][0]
    head = (0, int(np.argmax(prev)))
    intact = knockout_losses(two, frozenset(), mode)
    knocked = knockout_losses(two, frozenset({head}), mode)
    assert knocked["repeated"] > intact["repeated"] + KNOCKOUT_RISE
    weakest = (1, int(np.argmin(two.snapshots[-1].scores["induction"][1])))
    assert knockout_losses(two, frozenset({weakest}), mode)["repeated"] < knocked["repeated"]
