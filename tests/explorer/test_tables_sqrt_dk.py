"""The √d_k page's facts beside its histograms come from the tables, computed from the kept histograms."""

import pytest

from attn_core.stats import theoretical_score_variance
from explorer.tables import sqrt_dk as tables
from explorer.ui.cache import check

SETTINGS = [(1, "normal", 0.0), (256, "normal", 0.0), (4, "shifted", 1.0)]


@pytest.mark.parametrize(("d_k", "distribution", "mean"), SETTINGS)
def test_the_histograms_facts_are_their_bands_theory_and_whether_they_look_normal(d_k, distribution, mean):
    setting = (d_k, 2000, distribution, mean, 0)
    with check():  # rebuilt on a hit and compared
        facts = tables.histogram_facts(*setting)
        assert tables.histogram_facts(*setting) is facts
    _, _, stats = tables.score_histograms(*setting)
    for name, s in stats.items():  # the caption counts its share within the sample mean +- 3 sample sigmas
        assert facts["bands"][name] == (s["mean"] - 3 * s["std"], s["mean"] + 3 * s["std"])
    assert facts["theory_var"] == theoretical_score_variance(d_k, distribution=distribution, mean=mean)
    if distribution == "normal":  # 3 + 6/d_k: far from a bell curve at d_k = 1, close to one at 256
        assert facts["kurtosis_theory"] == pytest.approx(3 + 6 / d_k)
        assert facts["not_normal"] == (d_k == 1)
    else:
        excess = stats["scaled"]["kurtosis"] - 3
        assert facts["kurtosis_theory"] is None and facts["not_normal"] == (abs(excess) >= tables.NOT_NORMAL)
