"""Long pages open with a contents line whose links reach their section headings, in both languages."""

import re

import pytest
from app_helpers import assert_clean, open_link

from explorer.ui.i18n import catalog

LONG = ["worked_example", "saturation", "positional", "geometry", "masks", "glossary"]  # over ~3,500 px at 1400 px
LINK = re.compile(r"\]\(#([a-z0-9_]+)\)")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", LONG)
def test_a_long_page_lists_its_sections_and_each_link_reaches_one(name, lang):
    at = open_link(f"views/{name}.py", {"lang": lang})
    assert_clean(at)
    lead = catalog(lang)["common.frame.contents"]
    (line,) = [m.value for m in at.markdown if m.value.startswith(f"**{lead}**")]
    targets = LINK.findall(line)
    headings = {h.proto.anchor for h in [*at.header, *at.subheader]}
    assert len(targets) >= 2 and set(targets) <= headings, (targets, headings)


def test_a_short_page_has_no_contents_line():
    at = open_link("views/sqrt_dk.py", {})
    assert not [m for m in at.markdown if m.value.startswith("**On this page:**")]
