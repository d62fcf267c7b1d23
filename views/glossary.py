import streamlit as st

from explorer.ui import state
from explorer.ui.glossary import ALL, GROUPS, PAGE_KEY, TERM_KEY, TERMS, Term
from explorer.ui.i18n import t
from explorer.ui.page import contents, header
from explorer.ui.registry import PAGES
from explorer.ui.sidebar import page_title

by_name = {p.name: p for p in PAGES}
by_key = {term.key: term for term in TERMS}
used = [p.name for p in PAGES if any(p.name in term.pages for term in TERMS)]


def name(key: str) -> str:
    return t(f"glossary.terms.{key}.name")


def card(term: Term, *, anchor: bool = True) -> None:
    """One term: its name (the anchor /glossary#key), its symbol, one plain sentence, the pages it appears on."""
    st.subheader(name(term.key), anchor=term.key if anchor else False)
    st.latex(term.latex)
    st.markdown(t(f"glossary.terms.{term.key}.definition", **titles))  # a definition names pages by their titles
    row = st.container(horizontal=True, gap="small")
    row.caption(t("glossary.appears"))
    for page_name in term.pages:
        info = by_name[page_name]
        row.page_link(info.path, label=page_title(info), icon=info.icon)


titles = {p.name: page_title(p) for p in PAGES}
header(t("glossary.title"), t("glossary.lede"))
left, right = st.columns(2)
page = state.selectbox(
    t("glossary.show"),
    [ALL, *used],
    ALL,
    key=PAGE_KEY,
    where=left,
    format_func=lambda p: t("glossary.all") if p == ALL else page_title(by_name[p]),
)
asked = state.selectbox(
    t("glossary.lookup"), ["", *by_key], "", key=TERM_KEY, where=right, format_func=lambda k: name(k) if k else "—"
)
if asked:  # a link to one term (or the lookup): that term first, whatever the page filter
    with st.container(border=True):
        card(by_key[asked], anchor=False)

shown = [term for term in TERMS if page == ALL or page in term.pages]
groups = [g for g in GROUPS if any(term.group == g for term in shown)]
contents([(t(f"glossary.groups.{g}"), f"group_{g}") for g in groups])
for group in groups:
    st.header(t(f"glossary.groups.{group}"), anchor=f"group_{group}")
    columns = st.columns(2)
    for i, term in enumerate(term for term in shown if term.group == group):
        with columns[i % 2].container(border=True):
            card(term)
