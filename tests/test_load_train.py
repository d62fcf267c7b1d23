"""tools/load_train.py: the links a class opens before pressing Train at once."""

import urllib.parse

from explorer.tables import learning as tables
from tools.load_train import train_query


def test_same_is_one_link_and_different_is_thirty_links_of_the_default_work():
    same = {train_query(k, "same") for k in range(30)}
    different = [dict(urllib.parse.parse_qsl(train_query(k, "different"))) for k in range(30)]
    assert len(same) == 1 and len({tuple(sorted(d.items())) for d in different}) == 30
    for d in different:  # each a setting the page offers, at its default work per click
        assert d["learn_task"] in tables.TASKS and int(d["learn_heads"]) in tables.HEADS
        assert (d["learn_d_model"], d["learn_steps"]) == ("64", "300")
    assert dict(urllib.parse.parse_qsl(train_query(0, "same", {"learn_steps": "20"})))["learn_steps"] == "20"
