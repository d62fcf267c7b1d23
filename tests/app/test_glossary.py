"""The glossary: every term in both languages with its anchor, and a link to it from every page that uses a term."""

import pathlib
import re

import pytest
import torch
from app_helpers import assert_clean, open_link

from attn_core.naive import naive_attention
from attn_core.stats import score_statistics
from attn_core.tiled import default_blocks
from explorer.ui.glossary import PATH, TERMS, glossary_link, terms_of
from explorer.ui.i18n import catalog
from explorer.ui.registry import PAGES

ROOT = pathlib.Path(__file__).resolve().parents[2]
BY_NAME = {p.name: p for p in PAGES}
# What shows that a page uses a term: a pattern found in the page's English strings or its code, as a word of its
# own ("seed_value" is no use of d_v).
USES = {
    "n": r"\bn\b",
    "d_model": r"\bd_model\b",
    "d_k": r"\bd_k\b",
    "d_v": r"\bd_v\b",
    "projections": r"W_[QKVqkv]",
    "head": r"\bheads?\b",
    "logits": r"logit",
    "softmax": r"softmax",
    "temperature": r"temperature",
    "entropy": r"entropy",
    "jacobian": r"‖J‖",
    "gradient": r"gradient",
    "variance": r"\bvariance|\bVar\b|standard error|\bSE\b",
    "kurtosis": r"kurtosis",
    "kernel": r"kernel",
    "mask": r"mask",
    "causal": r"causal",
    "padding": r"padding",
    "sliding_window": r"sliding",
    "equivariance": r"equivarian",
    "positional": r"position",
    "epsilon": r"ε",
    "dtypes": r"float16|float32|fp16|fp32|bf16|bfloat16",
    "big_o": r"O\(n",
    "flops": r"\bFLOPs?\b",
    "macs": r"\bMACs?\b",
    "sdpa": r"SDPA",
    "hbm": r"HBM",
    "sram": r"SRAM|\bSMs?\b",
    "tile": r"\btiles?\b",
    "previous_token_head": r"previous-token head",
    "induction_head": r"induction head",
    "attention_sink": r"attention sink",
    "ablation": r"ablation",
}


def page_text(name: str) -> str:
    strings = [v for k, v in catalog("en").items() if k.startswith(f"{name}.")]
    return "\n".join(map(str, strings)) + (ROOT / "views" / f"{name}.py").read_text()


def test_every_term_is_used_on_the_pages_it_names():
    assert set(USES) == {term.key for term in TERMS}
    assert len({term.key for term in TERMS}) == len(TERMS)
    for term in TERMS:
        for name in term.pages:
            assert name in BY_NAME, (term.key, name)
            assert re.search(USES[term.key], page_text(name), re.IGNORECASE), (term.key, name)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_glossary_shows_every_term_with_its_anchor(lang):
    at = open_link(PATH, {"lang": lang})
    assert_clean(at)
    anchors = [h.proto.anchor for h in at.subheader]
    assert sorted(anchors) == sorted(term.key for term in TERMS)  # each once
    names = {catalog(lang)[f"glossary.terms.{term.key}.name"] for term in TERMS}
    assert {h.value for h in at.subheader} == names
    assert len(at.latex) == len(TERMS)
    linked = [e.proto.page for e in at.get("page_link")]
    assert all(linked.count(name) >= 1 for term in TERMS for name in term.pages)


@pytest.mark.parametrize("info", [p for p in PAGES if terms_of(p.name)], ids=lambda p: p.name)
def test_every_page_that_uses_a_term_links_to_the_glossary_at_its_terms(info):
    at = open_link(info.path, {"lang": "zh"})
    assert_clean(at)
    (link,) = [e.proto for e in at.get("page_link") if e.proto.page == "glossary"]
    assert link.query_string == f"glossary_page={info.name}"
    assert catalog("zh")[f"glossary.terms.{terms_of(info.name)[0].key}.name"] in link.label
    shown = open_link(PATH, {"glossary_page": info.name})
    assert sorted(h.proto.anchor for h in shown.subheader) == sorted(term.key for term in terms_of(info.name))


def test_pages_without_terms_draw_no_glossary_link():
    at = open_link("views/home.py", {})
    assert_clean(at)
    assert not [e for e in at.get("page_link") if e.proto.page == "glossary" and e.proto.query_string]


def test_a_link_to_one_term_shows_it_first():
    at = open_link(PATH, {"glossary_term": "jacobian", "glossary_page": "masks"})
    assert_clean(at)
    first = at.subheader[0]
    assert first.value == catalog("en")["glossary.terms.jacobian.name"] and not first.proto.anchor
    assert sorted(h.proto.anchor for h in at.subheader[1:]) == sorted(term.key for term in terms_of("masks"))
    with pytest.raises(ValueError, match="term"):
        glossary_link("no_such_term")


def test_the_tile_symbols_are_the_ones_its_pages_use():
    """Issue 25: the glossary's B_r × B_c appeared on no page (B_q/B_k on FlashAttention, b on scaling)."""
    (tile,) = [term for term in TERMS if term.key == "tile"]
    symbols = {"flash_walkthrough": ["B_q", "B_k"], "scaling": ["b × b"]}
    assert set(symbols) == set(tile.pages)
    definition = catalog("en")["glossary.terms.tile.definition"]
    for name, used in symbols.items():
        for symbol in used:
            assert symbol in page_text(name) and symbol in definition, (name, symbol)
    for name in BY_NAME:
        if (ROOT / "views" / f"{name}.py").exists():
            assert not re.search(r"B_r|B_c", page_text(name)), name
    assert "B_r" not in tile.latex and "B_r" not in definition
    # audit (issue 25): "square tiles of b × b", while the scaling page's automatic tiles are 256×512
    auto = default_blocks(1024, 1024)
    for lang in ("en", "zh"):
        text = catalog(lang)["glossary.terms.tile.definition"]
        assert auto[0] == auto[1] or f"{auto[0]} × {auto[1]}" in text, (lang, auto)


def test_the_kurtosis_is_the_one_the_sqrt_dk_page_quotes():
    """Issue 25: the glossary subtracted 3 (excess kurtosis); the √d_k page quotes plain kurtosis, 3 for a normal."""
    (kurtosis,) = [term for term in TERMS if term.key == "kurtosis"]
    assert not kurtosis.latex.rstrip().endswith("-3")
    assert "a normal distribution has 3" in catalog("en")["sqrt_dk.not_normal.text"]
    normal = torch.randn(200_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert abs(score_statistics(normal)["kurtosis"] - 3) < 0.05  # what the page measures: plain, 3 when normal
    assert "κ = 3 for a normal" in catalog("en")["glossary.terms.kurtosis.definition"]


def test_the_kernel_rewards_alignment_and_length_not_closeness():
    """Issue 25: the glossary said the kernel is large when q is near k_i; recomputed, the farther key wins."""
    definition = catalog("en")["glossary.terms.kernel.definition"]
    assert "near" not in definition
    assert "q = (1, 0) the key (3, 0), at distance 2, outweighs the key (1, 0), at distance 0" in definition
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.tensor([[3.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    _, weights = naive_attention(q, k, torch.eye(2, dtype=torch.float64))
    assert torch.linalg.vector_norm(q - k, dim=-1).tolist() == [2.0, 0.0]
    assert weights[0, 0] > weights[0, 1]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_definitions_name_pages_by_their_titles(lang):
    at = open_link(PATH, {"lang": lang})
    assert_clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "{" not in text
    assert catalog(lang)["pages.geometry.title"] in text and catalog(lang)["pages.scaling.title"] in text
