"""The √d_k-under-training page's tables: what it exports and shows is cut from the kept frames of the run."""

import pandas as pd

from attn_core.learn import compare_scaling
from explorer.tables import learning as tables
from explorer.ui import training
from explorer.ui.cache import check


def test_the_charts_csvs_and_the_summary_table_are_cut_from_the_kept_frames():
    both = compare_scaling(tables.scale_config("reverse", 8, 1.0, 20, 0))
    training.stamp(both, ("scale", "reverse", 8, 1.0, 20, 0))
    names = {"scaled": "with", "unscaled": "without"}
    with check():  # rebuilt on a hit and compared: the key holds every input, nothing is changed in place
        for _ in range(2):
            rows = tables.scale_columns(both, ("grad_norm_q", "grad_norm_k"))
            shown = tables.summary_shown(both, names)
    df, summary = tables.scale_frames(both)
    pd.testing.assert_frame_equal(rows, df[["step", "series", "grad_norm_q", "grad_norm_k"]])
    assert list(shown.columns) == list(tables.SUMMARY_SHOWN) and list(shown.series) == ["with", "without"]
    pd.testing.assert_frame_equal(shown.drop(columns="series"), summary[list(tables.SUMMARY_SHOWN[1:])])
