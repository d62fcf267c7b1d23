import math

import pytest
import torch

from attn_core import (
    LearnConfig,
    compare_scaling,
    make_task,
    predict,
    snapshot_steps,
    train,
)
from attn_core.learn.__main__ import main
from attn_core.learn.tasks import REORDER, TASK_NAMES, is_heldout, parse_tokens

# small budgets, each a few times the step at which seed 0 first passes (measured: reverse 40, reorder 50,
# recall 50; seeds 0-4 all pass by 100, 50 and 125 at the default 300 steps)
BUDGET = {"reverse": 80, "reorder": 100, "recall": 150}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matrices: one thread is fastest, and two spin against each other on a loaded machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def trained(one_thread):
    return {
        name: train(LearnConfig(task=name, steps=steps, snapshots=5, eval_size=128)) for name, steps in BUDGET.items()
    }


@pytest.mark.parametrize("name", TASK_NAMES)
def test_generators_follow_their_alignment(name):
    task = make_task(name)
    gen = torch.Generator().manual_seed(0)
    batch = task.sample(200, gen)
    b, n_t, n_s = batch.alignment.shape
    assert (b, n_t, n_s) == (200, task.target_len, task.source_len)
    assert torch.equal(batch.alignment.sum(-1), torch.ones(b, n_t))  # one right source position per target
    copied = (batch.alignment * batch.source[:, None, :].float()).sum(-1).long()
    assert torch.equal(copied, batch.target)
    s = batch.source
    if name == "reverse":
        assert torch.equal(batch.target, s.flip(1))
    elif name == "copy_offset":
        assert torch.equal(batch.target, s.roll(-3, dims=1))
    elif name == "reorder":
        assert torch.equal(batch.target, s[:, list(REORDER)])
        assert torch.equal(batch.alignment[0], torch.eye(7)[list(REORDER)])  # a permutation matrix
    else:  # recall: the value right after the key that equals the query, keys distinct
        keys, values = s[:, 0::2], s[:, 1::2]
        hit = keys == batch.query
        assert torch.equal(hit.sum(1), torch.ones(b, dtype=torch.long))
        assert torch.equal(values[hit], batch.target[:, 0])
        assert all(len(set(row.tolist())) == row.numel() for row in keys)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_heldout_sequences_never_reach_training(name):
    task = make_task(name)
    train_batch = task.sample(300, torch.Generator().manual_seed(1))
    heldout = task.sample(300, torch.Generator().manual_seed(1), "heldout")
    assert not is_heldout(train_batch.source, train_batch.query).any()
    assert is_heldout(heldout.source, heldout.query).all()
    again = task.sample(300, torch.Generator().manual_seed(1))
    assert torch.equal(train_batch.source, again.source)


@pytest.mark.parametrize("name", BUDGET)
def test_training_reaches_accuracy_and_the_right_alignment(trained, name):
    final = trained[name].final
    assert final.step == BUDGET[name]
    assert final.heldout_accuracy >= 0.95
    assert final.best_alignment_mass >= 0.8
    first = trained[name].snapshots[0]
    assert first.heldout_accuracy < 0.5 and first.best_alignment_mass < 0.5  # it was learned, not built in
    attn = final.attention["cross1"]
    assert attn.shape == (1, trained[name].task.target_len, trained[name].task.source_len)
    torch.testing.assert_close(attn.sum(-1), torch.ones(attn.shape[:-1]))


def test_reorder_attention_is_the_permutation(trained):
    attn = trained["reorder"].final.attention["cross1"][0]  # (7, 7) averaged over the probe batch
    assert torch.equal(attn.argmax(dim=1), torch.tensor(REORDER))
    assert float(attn[range(7), list(REORDER)].min()) >= 0.8


def test_same_seed_same_curves_other_seed_other_curves():
    cfg = LearnConfig(task="copy_offset", steps=12, snapshots=4, d_model=16, batch_size=16, eval_size=32)
    a, b, c = train(cfg), train(cfg), train(LearnConfig(**{**cfg.__dict__, "seed": 1}))
    for field in ("train_loss", "heldout_loss", "grad_norm_q", "qk_var", "entropy"):
        assert a.curve(field) == b.curve(field)
    assert torch.equal(a.final.attention["cross1"], b.final.attention["cross1"])
    assert a.curve("train_loss") != c.curve("train_loss")
    assert [s.step for s in a.snapshots] == snapshot_steps(12, 4) == [0, 4, 8, 12]


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"task": "nope"}, "task"),
        ({"d_model": 7}, "d_model"),
        ({"d_model": 1024}, "d_model"),
        ({"num_heads": 5}, "num_heads"),
        ({"d_model": 20, "num_heads": 3}, "d_model"),
        ({"d_model": 9, "num_heads": 3}, "d_model"),
        ({"layers": 3}, "layers"),
        ({"encoder_layers": -1}, "encoder_layers"),
        ({"scaled": "yes"}, "scaled"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"init_scale": 11.0}, "init_scale"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"lr": 0}, "lr"),
        ({"lr": 2.0}, "lr"),
        ({"batch_size": 0}, "batch_size"),
        ({"steps": 0}, "steps"),
        ({"steps": 10**6}, "steps"),
        ({"snapshots": 1}, "snapshots"),
        ({"seed": -1}, "seed"),
        ({"length": 1}, "length"),
        ({"vocab_size": 27}, "vocab_size"),
        ({"task": "copy_offset", "offset": 8}, "offset"),
        ({"task": "reverse", "offset": "3"}, "offset"),
        ({"task": "reverse", "length": 2, "vocab_size": 2}, "too few distinct sequences"),
        ({"task": "reorder", "length": 8}, "length"),
        ({"task": "recall", "length": 5, "vocab_size": 4}, "length"),
        ({"d_model": 512, "batch_size": 512, "steps": 5000}, "steps x batch_size"),
    ],
)
def test_bad_settings_name_the_argument(changes, name):
    with pytest.raises(ValueError, match=name):
        train(LearnConfig(**changes))


def test_keep_going_stops_and_progress_reports():
    seen = []
    result = train(
        LearnConfig(steps=50, snapshots=3, d_model=16, batch_size=8, eval_size=16),
        keep_going=lambda step: step < 7,
        progress=lambda done, total, loss: seen.append((done, total, loss)),
    )
    assert result.stopped and result.final.step == 7
    assert [s.step for s in result.snapshots] == [0, 7]
    assert [d for d, _, _ in seen] == list(range(1, 8)) and all(t == 50 and math.isfinite(x) for _, t, x in seen)


def test_scale_matters_measured_relationship():
    """d_k = 64, init_scale 2 (Var(q.k) ~ 1000 at step 0), reverse, seed 0, 60 steps of Adam.

    Measured (see attn_core/learn/scaling.py): the scaled run learns; the unscaled one saturates its
    softmax on wrong positions, its gradient at W_Q collapses while the loss stays near chance, and it stalls.
    """
    both = compare_scaling(LearnConfig(init_scale=2.0, steps=60, snapshots=7, eval_size=128), d_k=64)
    s, u = both.scaled.snapshots, both.unscaled.snapshots
    # step 0: identical weights, so the logits differ exactly by the missing 1/sqrt(d_k) = 1/8
    assert u[0].logit_std == pytest.approx(8 * s[0].logit_std, rel=1e-4)
    assert u[0].qk_var == pytest.approx(s[0].qk_var, rel=1e-4)
    assert u[0].max_weight > 0.85 and s[0].max_weight < 0.65  # unscaled starts peaked
    assert u[0].grad_norm_q > s[0].grad_norm_q  # and its gradient is not small yet...
    assert u[3].grad_norm_q < 0.25 * u[0].grad_norm_q  # ...until the logits grow and saturate (step 30)
    assert s[3].grad_norm_q > 0.5 * s[0].grad_norm_q
    assert u[3].entropy < 0.1 and u[3].logit_std > 10 * s[3].logit_std
    assert u[-1].train_loss > 1.5 and u[-1].heldout_accuracy < 0.5  # stalled near chance (ln 10 = 2.3)
    assert s[-1].heldout_accuracy >= 0.95 and s[-1].best_alignment_mass >= 0.8
    summary = both.summary()
    assert summary["scaled"]["steps_to_accuracy"] is not None and summary["unscaled"]["steps_to_accuracy"] is None
    assert summary["scaled"]["d_k"] == summary["unscaled"]["d_k"] == 64


def test_compare_scaling_checks_d_k():
    with pytest.raises(ValueError, match="d_k"):
        compare_scaling(LearnConfig(), d_k=1)
    with pytest.raises(ValueError, match="d_k"):
        compare_scaling(LearnConfig(num_heads=4), d_k=256)


def test_predict_on_typed_input(trained):
    rev = predict(trained["reverse"], "a b c d e f g h")
    assert rev.words == list("hgfedcba") and rev.tokens == rev.expected
    assert rev.attention["cross1"].shape == (1, 8, 8) and rev.alignment.shape == (8, 8)
    assert torch.equal(rev.attention["cross1"][0].argmax(1), torch.arange(7, -1, -1))
    assert predict(trained["reverse"], [9, 0, 9, 0, 1, 2, 3, 4]).tokens == [4, 3, 2, 1, 0, 9, 0, 9]
    reo = predict(trained["reorder"], "ka lo mi nu pe ri so")
    assert reo.words == ["ka", "mi", "lo", "pe", "so", "ri", "nu"]
    rec = predict(trained["recall"], "A 3 B 5 C 7 D 1 C")
    assert rec.words == ["7"] and int(rec.attention["cross1"][0, 0].argmax()) == 5  # the position of "7"
    assert set(rec.attention) == {"self1", "cross1"}


@pytest.mark.parametrize(
    ("task", "tokens", "match"),
    [
        ("reverse", "a b c", "exactly 8 tokens"),
        ("reverse", "a b c d e f g z", "unknown token"),
        ("reverse", [0, 1, 2, 3, 4, 5, 6, 11], "integer in"),
        ("reverse", [0, 1, 2, 3, 4, 5, 6, 10], "blank"),
        ("reverse", "a;b", "letters or digits"),
        ("reverse", "a " * 300, "at most"),
        ("recall", "A 3 A 5 C 7 D 1 C", "distinct"),
        ("recall", "A 3 B 5 C 7 D 1 E", "query"),
        ("recall", "A B B 5 C 7 D 1 C", "values"),
    ],
)
def test_predict_rejects_bad_input(trained, task, tokens, match):
    with pytest.raises(ValueError, match=match):
        predict(trained[task], tokens)


def test_parse_tokens_is_strict():
    assert parse_tokens(" a, b  c ") == ["a", "b", "c"]
    for bad in ("", "a <b>", "a\x00", 3):
        with pytest.raises(ValueError, match="tokens"):
            parse_tokens(bad)


def test_cli_prints_progress_and_final_numbers(capsys):
    assert main(["--task", "reverse", "--steps", "4", "--snapshots", "2", "--d-model", "16"]) == 0
    out = capsys.readouterr()
    assert "final: held-out accuracy" in out.out and "alignment mass" in out.out and "step 4/4" in out.err
    assert main(["--task", "reverse", "--steps", "0"]) == 2
    assert "steps must be" in capsys.readouterr().err
    assert main(["--compare", "--d-k", "1"]) == 2
    assert "d_k must be" in capsys.readouterr().err


def test_divergence_stops_training_with_a_flag():
    cfg = LearnConfig(optimizer="sgd", lr=1.0, init_scale=10.0, d_model=16, batch_size=8, eval_size=16, steps=200)
    result = train(cfg)
    assert result.diverged and result.stopped and 0 < result.final.step < 200
    assert all(math.isfinite(s.heldout_loss) for s in result.snapshots)  # stopped before any weight became NaN
    assert not train(LearnConfig(steps=5, snapshots=2, d_model=16, batch_size=8, eval_size=16)).diverged


def test_two_layers_four_heads_and_a_source_self_attention():
    cfg = LearnConfig(task="recall", layers=2, num_heads=4, d_model=16, encoder_layers=2, steps=3, snapshots=2)
    result = train(cfg)
    n_s = result.task.source_len
    shapes = {name: tuple(w.shape) for name, w in result.final.attention.items()}
    assert shapes == {"self1": (4, n_s, n_s), "self2": (4, n_s, n_s), "cross1": (4, 1, n_s), "cross2": (4, 1, n_s)}
    assert set(result.final.alignment_mass) == {"cross1", "cross2"}
    assert result.final.alignment_mass["cross1"].shape == (4,)
    causal = result.final.attention["self1"][0]
    assert float(causal.triu(diagonal=1).abs().max()) == 0.0  # the source reads left to right


def test_one_thread_sets_the_calling_thread_only():
    import threading

    from attn_core.learn import one_thread

    seen = {}

    def inside():
        with one_thread() as done:
            seen["inside"], seen["set"] = torch.get_num_threads(), done
        seen["after"] = torch.get_num_threads()

    before = torch.get_num_threads()
    worker = threading.Thread(target=inside)
    worker.start()
    worker.join()
    if not seen["set"]:
        pytest.skip("this torch build has no OpenMP runtime to set")
    assert seen == {"inside": 1, "set": True, "after": before} and torch.get_num_threads() == before


@pytest.mark.parametrize("scaled", [True, False])
def test_the_initial_snapshot_is_train_s_step_0_on_the_probe_without_the_training_batch(scaled):
    """What the √d_k page's untrained models show (explorer.tables.learning.untrained_pair, init_variance): every
    probe measurement bit for bit the step-0 snapshot train() reports; the training batch's fields are NaN."""
    from attn_core.learn.train import initial_snapshot

    cfg = LearnConfig(task="reverse", d_model=32, init_scale=2.0, scaled=scaled, steps=5, seed=4)
    full = train(cfg, keep_going=lambda step: step < 0).snapshots[0]
    alone = initial_snapshot(cfg)
    probe = ("heldout_loss", "heldout_accuracy", "heldout_sequence_accuracy", "best_alignment_mass", "entropy")
    for name in (*probe, "max_weight", "qk_var", "qk_var_iid", "logit_std", "step", "diverged"):
        assert getattr(alone, name) == getattr(full, name), name
    for name in ("attention", "example_attention", "alignment_mass"):
        kept, made = getattr(full, name), getattr(alone, name)
        assert kept.keys() == made.keys() and all(torch.equal(kept[k], made[k]) for k in kept), name
    assert all(math.isnan(getattr(alone, f)) for f in ("train_loss", "train_accuracy", "grad_norm_q", "grad_norm_k"))
    assert not math.isnan(full.grad_norm_q)  # train's step 0 has them: the batch was left out, not lost
