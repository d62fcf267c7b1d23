"""The glossary's terms: each term's symbol and the pages it appears on (its name and definition are strings in
`locales/<lang>/glossary.toml`), and the one link every such page draws to the glossary.

A term's anchor is its key (`/glossary#d_k`; the page's contents links use such anchors). Streamlit drops a link's
#fragment when it writes the controls into the address, so links from other pages carry query parameters instead:
a page's link opens the glossary at that page's terms (its `glossary_page` control), a link to one term shows that
term first (its `glossary_term` control).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from explorer.ui.i18n import t

PATH = "views/glossary.py"
PAGE_KEY = "glossary_page"  # the glossary's control: which page's terms it shows ("all": every term)
ALL = "all"
TERM_KEY = "glossary_term"  # the glossary's lookup: one term shown first (a link to one term sets it)
SHOWN = 6  # term names a page's link spells out
CURRENT = "_current_page"  # session key: the name of the page being drawn (app.py sets it before the page runs)


@dataclass(frozen=True)
class Term:
    key: str  # anchor and string key
    latex: str  # the symbol as the pages write it
    group: str  # a key of [groups] in glossary.toml
    pages: tuple[str, ...]  # names of the pages it appears on


TERMS: tuple[Term, ...] = (
    Term("n", r"n", "shapes", ("masks", "flash_walkthrough", "scaling")),
    Term("d_model", r"d_{\text{model}}", "shapes", ("multihead", "positional")),
    Term("d_k", r"d_k", "shapes", ("worked_example", "sqrt_dk", "saturation", "masks", "multihead")),
    Term("d_v", r"d_v", "shapes", ("worked_example",)),
    Term("projections", r"W_Q,\ W_K,\ W_V", "shapes", ("equivariance", "geometry", "multihead")),
    Term("head", r"h,\ d_{\text{model}}/h", "shapes", ("multihead", "flash_walkthrough", "scaling")),
    Term(
        "logits",
        r"s_{ij}=\frac{q_i\cdot k_j}{\sqrt{d_k}}",
        "softmax",
        ("worked_example", "saturation", "equivariance", "geometry", "masks", "flash_walkthrough", "scaling"),
    ),
    Term(
        "softmax",
        r"\mathrm{softmax}(z)_i=\frac{e^{z_i}}{\sum_j e^{z_j}}",
        "softmax",
        ("worked_example", "sqrt_dk", "saturation", "equivariance", "geometry", "masks", "multihead", "scaling"),
    ),
    Term("temperature", r"\mathrm{softmax}(z/T)", "softmax", ("sqrt_dk", "saturation", "geometry")),
    Term("entropy", r"H(p)=-\sum_i p_i\log p_i", "softmax", ("saturation",)),
    Term(
        "jacobian",
        r"\|J\|_F,\quad J_{ij}=\frac{\partial p_i}{\partial z_j}=p_i(\delta_{ij}-p_j)",
        "softmax",
        ("saturation",),
    ),
    Term("gradient", r"\frac{\partial L}{\partial x}", "softmax", ("worked_example", "saturation", "masks")),
    Term("variance", r"\mathrm{Var}(x),\ \mathrm{SE}", "softmax", ("worked_example", "sqrt_dk", "geometry")),
    Term(
        "kurtosis", r"\kappa=\frac{\mathbb{E}[(x-\mu)^4]}{\sigma^4}", "softmax", ("sqrt_dk",)
    ),  # as sqrt_dk: 3 if normal
    Term("kernel", r"\hat f(q)=\sum_i \frac{K(q,k_i)}{\sum_j K(q,k_j)}\,v_i", "softmax", ("geometry",)),
    Term("mask", r"M_{ij}\in\{0,1\}", "masks", ("masks", "equivariance", "flash_walkthrough", "scaling")),
    Term("causal", r"j\le i", "masks", ("masks", "equivariance", "flash_walkthrough", "scaling")),
    Term("padding", r"j<\ell_b", "masks", ("masks",)),
    Term("sliding_window", r"i-w<j\le i", "masks", ("masks",)),
    Term("equivariance", r"f(PX)=P\,f(X)", "masks", ("equivariance", "positional")),
    Term(
        "positional",
        r"PE_{p,2i}=\sin\!\left(p/10000^{2i/d_{\text{model}}}\right)",
        "masks",
        ("positional", "equivariance"),
    ),
    Term("epsilon", r"\varepsilon", "hardware", ("equivariance",)),
    Term("dtypes", r"\text{fp32},\ \text{fp16},\ \text{bf16}", "hardware", ("masks", "flash_walkthrough", "scaling")),
    Term("big_o", r"O(n^2),\ O(n)", "hardware", ("scaling",)),
    Term("flops", r"\text{FLOPs}", "hardware", ("scaling",)),
    Term("macs", r"\text{MACs}", "hardware", ("multihead",)),
    Term("sdpa", r"\text{SDPA}", "hardware", ("scaling",)),
    Term("hbm", r"\text{HBM}", "hardware", ("flash_walkthrough",)),
    Term("sram", r"\text{SRAM},\ \text{SM}", "hardware", ("flash_walkthrough",)),
    Term("tile", r"B_q\times B_k,\ b\times b", "hardware", ("flash_walkthrough", "scaling")),  # the pages' symbols
    Term("previous_token_head", r"A_{i,\,i-1}", "circuits", ("induction",)),
    Term("induction_head", r"x_{j-1}=x_i\ \Rightarrow\ A_{ij}", "circuits", ("induction",)),
    Term("attention_sink", r"A_{i,0}", "circuits", ("induction",)),
    Term("ablation", r"\text{head}_{\ell h}\to 0", "circuits", ("induction",)),
)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(term.group for term in TERMS))


def terms_of(page: str) -> tuple[Term, ...]:
    """The terms that appear on `page` (a page name), in glossary order."""
    return tuple(term for term in TERMS if page in term.pages)


def glossary_link(term: str | None = None, where=st) -> None:
    """A small link to the glossary: at one `term` (a key of TERMS), else at the terms of the page being drawn.

    Pages need not call it for their terms: frame.header draws it under every page's lede.
    """
    if term is not None:
        if term not in {x.key for x in TERMS}:
            raise ValueError(f"term must be a key of glossary.TERMS, got {term!r}")
        label, params = t("glossary.one_link", term=t(f"glossary.terms.{term}.name")), {TERM_KEY: term}
    else:
        page = st.session_state.get(CURRENT)
        terms = terms_of(page) if page else ()
        if not terms:
            return
        names = " · ".join(t(f"glossary.terms.{x.key}.name") for x in terms[:SHOWN])
        label = t("glossary.link", terms=names + (" …" if len(terms) > SHOWN else ""))
        params = {PAGE_KEY: page}
    where.page_link(PATH, label=label, icon=":material/menu_book:", query_params=params, help=t("glossary.link_help"))
