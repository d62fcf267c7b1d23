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


def test_the_pages_settings_are_frozen_records_that_key_their_runs():
    """The learning pages pass their settings as one frozen record (not a positional tuple): equal settings find
    the same untrained run, its config is the one of the named fields, and a record cannot change under its key."""
    import dataclasses

    import pytest

    settings = tables.LearnSettings("reverse", 16, 1, 1, tables.AUTO, 20, True, 3)
    same = tables.LearnSettings(
        task="reverse", d_model=16, heads=1, layers=1, lr=tables.AUTO, steps=20, scaled=True, seed=3
    )
    assert tables.untrained_run(settings) is tables.untrained_run(same)
    assert settings.config() == tables.learn_config("reverse", 16, 1, 1, tables.AUTO, 20, True, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 4  # type: ignore[misc]
    scale = tables.ScaleSettings("reverse", 8, 1.0, 20, 0)
    assert scale.config() == tables.scale_config("reverse", 8, 1.0, 20, 0)
    s0, u0 = tables.untrained_pair(scale)
    assert tables.untrained_pair(tables.ScaleSettings("reverse", 8, 1.0, 20, 0)) == (s0, u0)
    assert tables.compare_scaling is compare_scaling  # the view's trainer, through its tables module
