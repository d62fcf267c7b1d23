import streamlit as st

from explorer.ui.i18n import t
from explorer.ui.registry import PAGES, SECTIONS
from explorer.ui.sidebar import page_title

CARDS_PER_ROW = 3

st.title(t("home.title"))
st.markdown(t("home.story"))

for section in SECTIONS:
    st.subheader(t(f"pages.sections.{section}"))
    pages = [p for p in PAGES if p.section == section]
    columns = st.columns(CARDS_PER_ROW)
    for i, info in enumerate(pages):
        with columns[i % CARDS_PER_ROW].container(border=True):
            st.markdown(f"**{page_title(info)}**")
            st.caption(t(f"pages.{info.name}.summary"))
            st.page_link(info.path, label=t("home.open"), icon=info.icon)

left, right = st.columns([3, 1], vertical_alignment="center")
left.info(t("home.lesson"), icon=":material/school:")


def start_lesson() -> None:
    st.session_state["lesson"] = True


if right.button(t("common.lesson.start"), icon=":material/play_arrow:", type="primary", on_click=start_lesson):
    st.switch_page(PAGES[0].path)
