"""The one list of pages: navigation, the home page's cards (and later the lesson path) read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    path: str  # script under views/
    title: str
    icon: str  # a Material Symbols name, shown in the navigation and on the cards
    section: str
    summary: str  # one sentence for the home page's card


PAGES: tuple[PageInfo, ...] = (
    PageInfo(
        "views/sqrt_dk.py",
        "Why divide by √d_k",
        ":material/functions:",
        "Foundations",
        "Dot products of random vectors have variance d_k; dividing by √d_k brings them back to 1.",
    ),
    PageInfo(
        "views/saturation.py",
        "Softmax saturation and temperature",
        ":material/thermostat:",
        "Foundations",
        "Large logits make softmax one-hot and its gradient vanish; temperature moves between argmax and uniform.",
    ),
    PageInfo(
        "views/equivariance.py",
        "Permutation equivariance",
        ":material/shuffle:",
        "Foundations",
        "Shuffle the tokens and attention shuffles its output the same way, until a mask or positions break it.",
    ),
    PageInfo(
        "views/scaling.py",
        "Memory and time scaling",
        ":material/speed:",
        "Efficiency",
        "Naive attention stores n² scores; the tiled algorithm computes the same output in O(n) memory.",
    ),
)

SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(p.section for p in PAGES))
