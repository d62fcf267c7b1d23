"""The strings of both languages: the same keys, the same placeholders, Chinese that is Chinese, and
every key the code names present."""

import pathlib
import re

import pytest

from explorer.ui.i18n import LANGUAGES, catalog, fields

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = re.compile(r"[A-Za-z]{2,}")
CJK = re.compile(r"[\u4e00-\u9fff]")
# t("page.key"), tl("page.key"), td("page.table"): the literal keys the code looks up
LOOKUP = re.compile(r"\bt([ld]?)\(\s*\"([a-z0-9_.]+)\"")


def as_list(value) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_has_every_key_with_the_same_placeholders(lang):
    en, other = catalog("en"), catalog(lang)
    assert sorted(set(en) - set(other)) == [], "missing in " + lang
    assert sorted(set(other) - set(en)) == [], "only in " + lang
    for key, value in en.items():
        mine = other[key]
        assert type(mine) is type(value), key
        assert len(as_list(mine)) == len(as_list(value)), key
        for a, b in zip(as_list(value), as_list(mine), strict=True):
            assert fields(a) == fields(b), key


def test_chinese_prose_is_translated():
    en, zh = catalog("en"), catalog("zh")
    untranslated = [
        key
        for key, value in en.items()
        for a, b in zip(as_list(value), as_list(zh[key]), strict=True)
        if len(WORDS.findall(re.sub(r"\$[^$]*\$|`[^`]*`|\{[^}]*\}", " ", a))) >= 3 and not CJK.search(b)
    ]
    assert untranslated == []


def test_every_key_the_code_names_exists():
    en = catalog("en")
    sources = [*ROOT.glob("views/*.py"), *ROOT.glob("explorer/ui/*.py"), ROOT / "app.py"]
    for path in sources:
        for kind, key in LOOKUP.findall(path.read_text()):
            if kind == "d":
                assert any(k.startswith(key + ".") for k in en), f"{path.name}: table {key}"
            else:
                assert key in en, f"{path.name}: {key}"


def test_a_table_of_strings_is_made_once_per_language_unless_one_is_missing(monkeypatch):
    from explorer.ui import i18n

    assert i18n.td("saturation.series") is i18n.td("saturation.series")  # shared: pages only read it
    assert i18n.td("saturation.charts.entropy", value=1.0) is not i18n.td("saturation.charts.entropy", value=1.0)
    zh = dict(i18n.catalog("zh"))
    gap = {k: v for k, v in zh.items() if k != "scaling.listing.torch"}
    english = i18n.catalog("en")
    monkeypatch.setattr(i18n, "catalog", lambda lang: gap if lang == "zh" else english)
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    monkeypatch.setattr(i18n, "_TD", {})
    first = i18n.td("scaling.listing")
    assert first["torch"] == english["scaling.listing.torch"] and first["run"] == zh["scaling.listing.run"]
    assert i18n.td("scaling.listing") is not first  # made again: each session notes the missing string
