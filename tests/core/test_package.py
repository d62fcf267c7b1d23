"""attn_core as a package: its public names, and the input checks its attention paths share."""

import math

import pytest
import torch
from helpers import rand
from hypothesis import given
from hypothesis import strategies as st

import attn_core
from attn_core import _checks, naive, tiled
from attn_core._checks import broadcast_shape


def test_all_names_each_public_name_once_from_one_module():
    assert len(attn_core.__all__) == len(set(attn_core.__all__))  # random_logits was listed twice
    listed = [name for names in attn_core._EXPORTS.values() for name in names]
    assert sorted(listed) == sorted(attn_core.__all__)  # no name given by two modules (the later would win)
    for module, names in attn_core._EXPORTS.items():
        home = __import__(f"attn_core.{module}", fromlist=["_"])
        assert all(getattr(attn_core, name) is getattr(home, name) for name in names), module


BAD = [
    (dict(q=[[1.0]]), "^q must be a torch.Tensor"),
    (dict(k=rand(5, 3)), "k must have the same last dimension"),
    (dict(scale=-1.0), "scale must be a finite number > 0"),
    (dict(temperature=math.inf), "temperature must be a finite number > 0"),
    (dict(v=torch.full((5, 2), math.nan, dtype=torch.float64)), "v must contain only finite numbers"),
    (dict(q=torch.full((3, 4), 1e200, dtype=torch.float64)), "q and k are too large for torch.float64"),
    (dict(q=rand(3, 4), temperature=0, scale=0), "^scale"),  # two faults: both name the first in one order
]


@pytest.mark.parametrize(("kwargs", "match"), BAD)
def test_naive_and_tiled_reject_bad_inputs_with_one_message(kwargs, match):
    args = dict(q=rand(3, 4), k=rand(5, 4, seed=1), v=rand(5, 2, seed=2)) | kwargs
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
    messages = []
    for attend in (naive.naive_attention, tiled.tiled_attention):
        with pytest.raises(ValueError, match=match) as error:
            attend(q, k, v, **args)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_naive_and_tiled_check_their_inputs_through_one_checker(monkeypatch):
    seen = []

    def checker(*args):
        seen.append(args[3:])
        return _checks.check_attention(*args)

    for module in (naive, tiled):
        monkeypatch.setattr(module, "check_attention", checker)
    q, k, v = rand(3, 4), rand(5, 4, seed=1), rand(5, 2, seed=2)
    naive.naive_attention(q, k, v, scale=0.5, temperature=2.0)
    tiled.tiled_attention(q, k, v, scale=0.5, temperature=2.0, block_q=2, block_k=2)
    assert seen == [(0.5, 2.0), (0.5, 2.0)]


_shape = st.lists(st.integers(min_value=0, max_value=3), max_size=4)


@given(st.lists(_shape, min_size=1, max_size=3))
def test_broadcast_shape_agrees_with_torch(shapes):
    try:
        want = torch.broadcast_shapes(*shapes)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            broadcast_shape(*shapes)
    else:
        assert broadcast_shape(*shapes) == want
