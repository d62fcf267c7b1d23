"""The claim cards say in the page's language everything the app computes: on a 中文 page the computed value of a
card is Chinese too (locales/*/notes.toml [computed]), not the English sentence notes.check builds."""

import re
import tomllib
from pathlib import Path

import pytest
from app_helpers import assert_clean, open_link

from explorer import notes
from explorer.ui.claims import computed_text

ROOT = Path(__file__).resolve().parents[2]
CARD_PAGES = ("views/masks.py", "views/equivariance.py")
# Latin words a 中文 card may keep: operators of its formulas, the notes' own terms, the notes' titles.
FORMULA_WORDS = {"max", "softmax", "logit", "token", "Day", "Attention"}
# function names in the notes' formulas, the paper's names
NOTES_FORMULA_WORDS = set("Var cos det exp argmax lcm output pos code inf Nadaraya Watson".split())
CODE_WORDS = {"autograd", "Concat", "heads", "out", "float", "fp", "nan", "RuntimeError"}  # float32, fp16
IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*_[\w.]*|\w+\.\w+|\w+(?==)")  # code: attn_core.x, a_mask(levels=1)


def td_zh(part: str) -> dict:
    return tomllib.loads((ROOT / "locales/zh/notes.toml").read_text(encoding="utf-8"))[part]


def cards(at) -> list[str]:
    """The claim cards' Markdown (each starts with its verdict badge), unescaped."""
    return [m.value.replace("\\", "") for m in at.markdown if re.match(r":\w+-badge\[", m.value)]


def english_words(text: str) -> set[str]:
    text = IDENTIFIER.sub(" ", re.sub(r":\w+-badge\[", " ", text))
    words = re.findall(r"[A-Za-z]{2,}", text)  # a word has two lower-case letters; WWᵀ or QK is a formula
    return {w for w in words if sum(c.islower() for c in w) >= 2 and w not in FORMULA_WORDS}


@pytest.mark.parametrize("page", CARD_PAGES)
def test_a_chinese_page_s_claim_cards_have_no_english_words(page):
    at = open_link(page, {"lang": "zh"})
    assert_clean(at)
    shown = cards(at)
    assert shown, "no claim card on the page"
    for card in shown:
        assert not english_words(card), card


def test_an_english_page_s_claim_cards_stay_english():
    at = open_link("views/masks.py", {"lang": "en"})
    assert any("keys per row" in card for card in cards(at))


def test_the_english_templates_say_exactly_what_notes_check_computes():
    """Every [computed] line in English reproduces the computed sentence: its facts hold every number it shows, and
    the Chinese line, filled from the same facts, can show them too."""
    templates = {
        lang: tomllib.loads((ROOT / "locales" / lang / "notes.toml").read_text(encoding="utf-8"))["computed"]
        for lang in ("en", "zh")
    }
    table = notes.check_claims(0)
    used = set()
    for key, computed, facts in zip(table.key, table.computed, table.facts, strict=True):
        used.add(facts.get("form", key))
        assert computed_text(key, computed, facts, templates["en"]) == computed, key
    assert set(templates["en"]) - used <= {
        *"hierarchical_partial block_causal_differs minus_1e9_fp16_ok mha_mask_ok".split()
    }  # other branches


def test_the_english_printed_forms_are_the_claims_table_s():
    printed = tomllib.loads((ROOT / "locales/en/notes.toml").read_text(encoding="utf-8"))["printed"]
    table = notes.check_claims(0).set_index("key")
    for key in printed:
        assert computed_text(key, "", table.facts[key], printed) == table.notes[key], key


def test_the_chinese_claims_table_has_no_english_words_in_what_the_notes_print_and_what_we_computed():
    at = open_link("views/worked_example.py", {"lang": "zh"})
    column = td_zh("columns")["notes"]
    shown = next(t.value for t in at.table if column in t.value.columns)
    assert len(shown) == len(notes.CLAIMS)  # every claim, every file at the defaults
    for cell in shown[column]:
        assert not english_words(cell.replace("\\", "")) - NOTES_FORMULA_WORDS, cell
    computed = td_zh("columns")["computed"]
    for cell in shown[computed]:  # library, dtype and exception names are code
        assert not english_words(cell.replace("\\", "")) - NOTES_FORMULA_WORDS - CODE_WORDS, cell
