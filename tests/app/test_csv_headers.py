"""A chart's CSV export names its columns in the page's language (common.csv_columns) and keeps every value."""

import csv
import io
import re

import pandas as pd
import pytest
from app_helpers import assert_clean, open_link

from explorer.ui import draw

# the pages whose chart exports a student of the 中文 pages opens first (the claim-card pages)
PAGES = ("views/masks.py", "views/equivariance.py", "views/worked_example.py", "views/scaling.py", "views/induction.py")


def english_words(header: str) -> set[str]:
    """Words of two lower-case letters or more, outside a symbol, a unit or a term the 中文 notes keep (d_k, MiB,
    ms, p10, token, logit)."""
    words = re.findall(r"[A-Za-z]{2,}", re.sub(r"(?<![A-Za-z])(MiB|ms|p\d+|token|logit)(?![A-Za-z])", " ", header))
    return {w for w in words if sum(c.islower() for c in w) >= 2}


def exported_csvs(monkeypatch, page: str, lang: str) -> list[str]:
    """Every chart CSV the page offers, made as a click on its button would make it."""
    makers, original = [], draw.pinned

    def spy(make, mime, file_name):
        if mime == "text/csv":
            makers.append(make)
        return original(make, mime, file_name)

    monkeypatch.setattr(draw, "pinned", spy)
    assert_clean(open_link(page, {"lang": lang}))
    return [make() for make in makers]


@pytest.mark.parametrize("page", PAGES)
def test_a_chinese_page_s_csv_headers_are_chinese(monkeypatch, page):
    files = exported_csvs(monkeypatch, page, "zh")
    assert files, "the page offers no chart CSV"
    for text in files:
        assert text.startswith("\ufeff")  # Excel reads the file as UTF-8 only after this mark
        rows = csv.reader(line for line in io.StringIO(text.removeprefix("\ufeff")) if not line.startswith("#"))
        header = next(rows)  # after the `# key: value` lines of a benchmark's results, as attn_core.bench writes them
        assert not set().union(*map(english_words, header)), header


def test_an_english_page_keeps_the_code_s_column_names(monkeypatch):
    files = exported_csvs(monkeypatch, "views/masks.py", "en")
    assert any("allowed" in next(csv.reader(io.StringIO(text))) for text in files)


def test_the_headers_change_and_the_values_do_not():
    data = pd.DataFrame({"time_ms": [1.25, 3.5], "n": [128, 256], "method": ["naive", "tiled"]})
    text = draw.csv_text(data, {"time_ms": "时间_ms", "method": "方法"})
    assert text.startswith("\ufeff")  # Excel reads the file as UTF-8 only after this mark
    back = pd.read_csv(io.BytesIO(text.encode("utf-8")), encoding="utf-8-sig")
    assert list(back.columns) == ["时间_ms", "n", "方法"]
    assert back.to_numpy().tolist() == data.to_numpy().tolist()
    assert draw.csv_text(data, {}) == data.to_csv(index=False)  # English: the file as before, no mark
