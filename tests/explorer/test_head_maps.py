"""The attention maps of the induction and language-model pages: one facet builder (charts.common.head_maps)."""

import numpy as np
import pandas as pd
import pytest

from explorer.charts import common
from explorer.charts import induction as induction_charts
from explorer.charts import language_model as lm_charts

TEXT = {"title": "T", "head": "head", "query": "q", "key": "k", "weight": "w", "token": "tok"}


def cells(n: int, heads: int) -> pd.DataFrame:
    q, k = np.tril_indices(n)
    labels = {"q_token": q % 5, "k_token": k % 5, "q_label": q.astype(str), "k_label": k.astype(str)}
    frames = [pd.DataFrame({"head": h, "query": q, "key": k, **labels, "weight": 0.5}) for h in range(heads)]
    return pd.concat(frames, ignore_index=True)


def build_both(n: int) -> dict:
    return {
        "induction": induction_charts.probe_maps(cells(n, 2), n, TEXT).to_dict(),
        "language_model": lm_charts.layer_maps(cells(n, 4), n, TEXT).to_dict(),
    }


def test_both_pages_draw_their_maps_with_the_common_builder(monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[1])  # the panel's side in px
        return common.head_maps(*args, **kwargs)

    monkeypatch.setattr(induction_charts, "head_maps", counted)
    monkeypatch.setattr(lm_charts, "head_maps", counted)
    build_both(16)
    assert calls == [6 * 16, lm_charts.MIN_MAP]  # induction: 6 px a cell; the LM's maps: at least MIN_MAP a side


@pytest.mark.parametrize("n", [8, 48])
def test_the_maps_share_their_look(n):
    for page, spec in build_both(n).items():
        inner = spec["spec"]
        assert spec["columns"] == 2 and spec["title"] == "T", page
        assert spec["facet"]["field"] == "head" and spec["facet"]["header"]["labelExpr"] == '"head " + datum.value'
        assert inner["mark"]["type"] == "rect" and inner["width"] == inner["height"], page
        assert inner["encoding"]["color"]["scale"] == {"scheme": "blues", "domain": [0, 1]}, page
        assert (inner["encoding"]["x"]["field"], inner["encoding"]["y"]["field"]) == ("key", "query"), page
    assert build_both(n)["induction"]["facet"]["header"]["labelFontSize"] == 12  # as the page drew it before
