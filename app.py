"""Attention Explorer: the router. Page config, navigation by section, the sidebar every page shares."""

import streamlit as st

from ui.frame import sidebar
from ui.registry import PAGES, SECTIONS

st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")

home = st.Page("pages/home.py", title="Home", icon=":material/home:", default=True)
navigation = {"": [home]}
for section in SECTIONS:
    navigation[section] = [st.Page(p.path, title=p.title, icon=p.icon) for p in PAGES if p.section == section]

sidebar()
page = st.navigation(navigation)
page.run()
