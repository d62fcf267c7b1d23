"""Streamlit's connection dialog in the viewer's language, and honest about the cause.

When the page loses its server (a restart, a laptop asleep, the network), Streamlit 1.67 shows its own dialog:
"Connection error - Streamlit server is not responding. Are you connected to the internet?", in English on every
page and blaming the student's network even when the server is restarting. Its frontend is compiled, and no option
(config.toml, st.set_page_config) changes that text (streamlit/streamlit#12661 asks for it, open). The page's own
script keeps running while the server is away, so a small one drawn on every page rewrites that dialog's title and
text in the viewer's language whenever Streamlit shows it; everything else about the dialog, and the reconnection,
stays Streamlit's. The words are the locale's common.connection.
"""

from __future__ import annotations

import json

import streamlit as st

from explorer.ui.i18n import t

# Matched by its English title, which Streamlit 1.67 gives every connection dialog; the element holding the
# script hides itself (:has), so the page keeps no empty gap for it. Installed once per browser tab; a new
# language only replaces the words.
_SCRIPT = """<span id="attn-connection"></span>
<style>.stElementContainer:has(#attn-connection) {{ display: none; }}</style>
<script>
(() => {{
  window.attnConnectionWords = {words};
  if (window.attnConnectionWatch) return;
  window.attnConnectionWatch = true;
  const say = () => {{
    const words = window.attnConnectionWords;
    for (const title of document.querySelectorAll('[role="dialog"] h2')) {{
      if (title.textContent.trim() !== "Connection error") continue;
      title.textContent = words.title;
      if (title.nextElementSibling) title.nextElementSibling.textContent = words.text;
    }}
  }};
  new MutationObserver(say).observe(document.body, {{ childList: true, subtree: true, characterData: true }});
}})();
</script>"""


def connection_words() -> None:
    """Draw (invisibly) the script that says Streamlit's connection dialog in the viewer's language."""
    words = {"title": t("common.connection.title"), "text": t("common.connection.text")}
    text = json.dumps(words, ensure_ascii=False).replace("</", "<\\/")  # never closes the script early
    st.html(_SCRIPT.format(words=text), unsafe_allow_javascript=True)
