"""tools/load_train.py: the links a class opens before pressing Train at once."""

import urllib.parse

from explorer.tables import learning as tables
from tools.load_train import PAGES, train_query


def test_same_is_one_link_and_different_is_thirty_links_of_the_default_work():
    same = {train_query(k, "same") for k in range(30)}
    different = [dict(urllib.parse.parse_qsl(train_query(k, "different"))) for k in range(30)]
    assert len(same) == 1 and len({tuple(sorted(d.items())) for d in different}) == 30
    for d in different:  # each a setting the page offers, at its default work per click
        assert d["learn_task"] in tables.TASKS and int(d["learn_heads"]) in tables.HEADS
        assert (d["learn_d_model"], d["learn_steps"]) == ("64", "300")
    assert dict(urllib.parse.parse_qsl(train_query(0, "same", {"learn_steps": "20"})))["learn_steps"] == "20"


def test_the_induction_page_gives_each_session_its_own_seed():
    page = PAGES["induction"]
    same = {page.query(k, "same") for k in range(30)}
    seeds = [dict(urllib.parse.parse_qsl(page.query(k, "different")))["seed"] for k in range(30)]
    assert same == {"seed=0"}
    assert len(set(seeds)) == 30 and "0" not in seeds
