"""The induction page's tables: what the page shows and exports is cut from the kept tables, keyed by the pair."""

import pandas as pd

from explorer.tables import induction as tables
from explorer.ui.cache import check


def test_the_knockout_table_and_the_score_export_are_cut_from_the_kept_tables():
    pair = tables.untrained(tables.STEPS[0], 0)
    names = {split: split.upper() for split in ("all", *tables.SPLITS)}  # the table has "all" too
    labels = tuple(tables.head_options(pair.two.config)[:1])
    with check():  # rebuilt on a hit and compared: the key holds every input, nothing is changed in place
        for _ in range(2):
            table = tables.knockouts(pair, labels, "zero")
            shown = tables.knockout_rows(pair, labels, "zero", names)
            rows = tables.score_rows(pair, 0)
    assert list(shown.split) == [names[split] for split in table.split]
    numbers = table.drop(columns="split").round(3)
    pd.testing.assert_frame_equal(shown.drop(columns="split"), numbers)
    assert tables.knockout_rows(pair, labels, "zero", {}).split.isna().all()  # the names are part of the key
    columns = ["model", "layer", "head", "score", "value"]
    pd.testing.assert_frame_equal(rows, tables.score_cells(pair, 0)[columns])
