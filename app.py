"""Attention Explorer: the router. Page config, navigation by section, the sidebar every page shares."""

import streamlit as st
import torch

from ui.frame import sidebar
from ui.registry import PAGES, SECTIONS
from ui.state import url_notices

# The pages' tensors are small: one thread per op wastes no time waking a pool and lets 30 sessions
# share two cores instead of fighting over them.
torch.set_num_threads(1)

st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")

home = st.Page("views/home.py", title="Home", icon=":material/home:", default=True)
navigation = {"": [home]}
for section in SECTIONS:
    navigation[section] = [st.Page(p.path, title=p.title, icon=p.icon) for p in PAGES if p.section == section]

sidebar()
page = st.navigation(navigation)
page.run()
url_notices()
