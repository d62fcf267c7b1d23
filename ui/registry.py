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
        "views/worked_example.py",
        "Worked example, step by step",
        ":material/calculate:",
        "Foundations",
        "The notes' small examples computed one matrix at a time, with a table that re-checks their numbers.",
    ),
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
        "views/positional.py",
        "Positional encoding",
        ":material/linear_scale:",
        "Positions and geometry",
        "Sinusoids give every position a code; shifting a position is a rotation, and positions break the symmetry.",
    ),
    PageInfo(
        "views/geometry.py",
        "Geometry and kernel regression",
        ":material/scatter_plot:",
        "Positions and geometry",
        "The output is a convex combination of the values: Nadaraya-Watson regression with an exponential kernel.",
    ),
    PageInfo(
        "views/masks.py",
        "Masks lab",
        ":material/grid_on:",
        "Masks and heads",
        "Padding, causal, sliding-window and block masks: hidden keys get exactly zero weight and zero gradient.",
    ),
    PageInfo(
        "views/multihead.py",
        "Multi-head attention",
        ":material/view_module:",
        "Masks and heads",
        "Split d_model into h heads of width d_model/h: same parameter count, h different attention maps.",
    ),
    PageInfo(
        "views/flash_walkthrough.py",
        "FlashAttention, tile by tile",
        ":material/view_comfy:",
        "Efficiency",
        "Step through the tiles: a running max and sum rescale partial outputs into the exact answer.",
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
