"""The one list of pages: navigation, the home page's cards (and later the lesson path) read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    path: str  # script under pages/
    title: str
    icon: str  # a Material Symbols name, shown in the navigation and on the cards
    section: str
    summary: str  # one sentence for the home page's card


PAGES: tuple[PageInfo, ...] = (
    PageInfo(
        "pages/sqrt_dk.py",
        "Why divide by √d_k",
        ":material/functions:",
        "Foundations",
        "Dot products of random vectors have variance d_k; dividing by √d_k brings them back to 1.",
    ),
)

SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(p.section for p in PAGES))
