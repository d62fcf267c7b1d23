"""The one list of pages, in teaching order: navigation, the home page's cards and lesson mode read it.

Titles, summaries and section names are strings in `locales/<lang>/pages.toml`, keyed by the page's name.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    path: str  # script under views/
    icon: str  # a Material Symbols name, shown in the navigation and on the cards
    section: str  # a key of [sections] in pages.toml
    lesson: bool = True  # a stop of lesson mode (the glossary is not)

    @property
    def name(self) -> str:
        """The page's URL path and the key of its strings."""
        return pathlib.Path(self.path).stem


PAGES: tuple[PageInfo, ...] = (
    PageInfo("views/worked_example.py", ":material/calculate:", "foundations"),
    PageInfo("views/sqrt_dk.py", ":material/functions:", "foundations"),
    PageInfo("views/saturation.py", ":material/thermostat:", "foundations"),
    PageInfo("views/equivariance.py", ":material/shuffle:", "foundations"),
    PageInfo("views/positional.py", ":material/linear_scale:", "geometry"),
    PageInfo("views/geometry.py", ":material/scatter_plot:", "geometry"),
    PageInfo("views/masks.py", ":material/grid_on:", "masks"),
    PageInfo("views/multihead.py", ":material/view_module:", "masks"),
    PageInfo("views/flash_walkthrough.py", ":material/view_comfy:", "efficiency"),
    PageInfo("views/scaling.py", ":material/speed:", "efficiency"),
    PageInfo("views/learning.py", ":material/model_training:", "learning"),
    PageInfo("views/learning_scale.py", ":material/trending_down:", "learning"),
    PageInfo("views/induction.py", ":material/hub:", "learning"),
    PageInfo("views/language_model.py", ":material/text_fields:", "learning"),
    PageInfo("views/glossary.py", ":material/menu_book:", "reference", lesson=False),
)
LESSON: tuple[PageInfo, ...] = tuple(p for p in PAGES if p.lesson)

SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(p.section for p in PAGES))
