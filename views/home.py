import streamlit as st

from ui.registry import PAGES, SECTIONS

CARDS_PER_ROW = 3

st.title("Attention Explorer")
st.markdown(
    "Attention is one formula, $\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})\\,V$, and a handful of claims about it: "
    "that dot products grow like $\\sqrt{d_k}$, that a saturated softmax stops passing gradients, that shuffling "
    "the tokens only shuffles the output, that the whole thing can be computed tile by tile without ever storing "
    "the $n\\times n$ score matrix. Here you do not have to take any of it on trust. Every page lets you move the "
    "knobs (d_k, temperature, the permutation, the mask, the sequence length) and recomputes the numbers live, "
    "with the formula beside the chart that tests it."
)

for section in SECTIONS:
    st.subheader(section)
    pages = [p for p in PAGES if p.section == section]
    columns = st.columns(CARDS_PER_ROW)
    for i, info in enumerate(pages):
        with columns[i % CARDS_PER_ROW].container(border=True):
            st.markdown(f"**{info.title}**")
            st.caption(info.summary)
            st.page_link(info.path, label="Open", icon=info.icon)
