"""Projector mode for a chart: the same Vega-Lite spec, readable from the back of a classroom.

One function for every chart of the app, applied by explorer.ui.draw.chart, never by a page:
- a `config` sets every axis, legend, header, title and text mark to at least PROJECTOR_FONT px, black on white;
- sizes a builder wrote into the spec grow together: plot widths, heights and band steps, explicit font sizes,
  text offsets and point areas, by one factor per chart (at least SCALE, more where a builder chose a small font
  for a dense heatmap, so that its cells grow with their numbers and the numbers still fit);
- long chart and axis titles break into lines instead of ending in "…" or running past the chart's edge.
The spec handed in is never changed: a cached spec is shared by every session on the server.
"""

from __future__ import annotations

import functools
import json
import re

PROJECTOR_FONT = 17  # px: the smallest chart text on a projector
SCALE = 1.4  # fixed chart sizes grow at least this much (larger type needs a larger plot)
MAX_SCALE = 2.2  # a dense heatmap's 8 px numbers grow to PROJECTOR_FONT, not more
TITLE_FONT = 21
AXIS_TITLE_FONT = 19
TITLE_WIDTH = 340  # px a title may take when the chart's width is the container's (unknown to the server: a third
# of a projector page's width, the narrowest column a chart is drawn in)
PROJECTED = "projected"  # usermeta key marking a spec already made for the projector

PROJECTOR_CHART = {
    "axis": {
        "labelFontSize": PROJECTOR_FONT,
        "titleFontSize": AXIS_TITLE_FONT,
        "labelColor": "#000",
        "titleColor": "#000",
        "domainColor": "#000",
        "tickColor": "#000",
        "domainWidth": 2,
        "tickWidth": 2,
        "gridColor": "#bbb",
        "labelLimit": 400,
    },
    "legend": {
        "labelFontSize": PROJECTOR_FONT,
        "titleFontSize": PROJECTOR_FONT,
        "symbolSize": 220,
        "labelColor": "#000",
        "titleColor": "#000",
        "labelLimit": 400,
        "titleLimit": 400,
    },
    "title": {"fontSize": TITLE_FONT, "color": "#000", "subtitleFontSize": PROJECTOR_FONT, "limit": 0},
    "header": {"labelFontSize": PROJECTOR_FONT, "titleFontSize": 19, "labelColor": "#000"},
    "line": {"strokeWidth": 4},
    "rule": {"strokeWidth": 3},
    "point": {"size": 180, "strokeWidth": 3},
    "text": {"fontSize": PROJECTOR_FONT},
}

_VIEW_KEYS = ("mark", "layer", "hconcat", "vconcat", "concat", "facet", "repeat", "spec")
_SKIP = ("datasets", "data", "config", "usermeta")
_FONT = re.compile(r"(^f|F)ontSize$")
_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")
_TOKENS = re.compile(_WIDE.pattern + r"|[^\s" + _WIDE.pattern[1:-1] + r"]+|\s+")


def projected(spec: dict) -> dict:
    """`spec` restyled for a projector (a new dict; `spec` and its parts are left as they were)."""
    if spec.get("usermeta", {}).get(PROJECTED):
        return spec
    factor = _factor(spec)
    body = fitted(_grow(spec, factor), TITLE_FONT)  # a wide chart's title on one or two lines, not four
    width = spec.get("width")
    room = max(TITLE_WIDTH, width * factor) if isinstance(width, int | float) else TITLE_WIDTH
    body = _wrap_titles(body, room)  # the titles fitted() cannot place by the chart's width
    config = dict(spec.get("config", {}))
    for part, settings in PROJECTOR_CHART.items():
        config[part] = {**config.get(part, {}), **settings}
    return {**body, "config": config, "usermeta": {**spec.get("usermeta", {}), PROJECTED: True}}


def _font_sizes(node) -> list[float]:
    if isinstance(node, dict):
        found = [v for k, v in node.items() if _FONT.search(k) and isinstance(v, int | float)]
        for k, v in node.items():
            if k not in _SKIP:
                found += _font_sizes(v)
        return found
    if isinstance(node, list):
        return [size for item in node for size in _font_sizes(item)]
    return []


def _factor(spec: dict) -> float:
    """SCALE, or more when the builder's smallest font size needs it to reach PROJECTOR_FONT."""
    sizes = [s for s in _font_sizes(spec) if s > 0]
    return min(MAX_SCALE, max(SCALE, PROJECTOR_FONT / min(sizes))) if sizes else SCALE


def _grow(node, factor: float, key: str = ""):
    """A copy of node with its fixed sizes multiplied by factor (data, config and expressions untouched)."""
    if isinstance(node, list):
        return [_grow(item, factor, key) for item in node]
    if not isinstance(node, dict):
        return node
    grown = {}
    for k, v in node.items():
        if k in _SKIP:
            grown[k] = v
        elif isinstance(v, bool) or not isinstance(v, int | float):
            grown[k] = _grow(v, factor, k)
        elif k in ("width", "height", "dx", "dy") or _FONT.search(k) or (k == "step" and key in ("width", "height")):
            grown[k] = round(v * factor, 1)
        elif k in ("x", "y") and key == "mark":
            grown[k] = round(v * factor, 1)  # a text's place in pixels
        elif k == "size" and key == "mark" and node.get("type") in ("point", "circle", "square"):
            grown[k] = round(v * factor * factor, 1)  # an area
        else:
            grown[k] = v
    return grown


def _width(text: str) -> float:
    """Roughly how wide text is, in ems of its font (a CJK character is one em, a Latin one about half)."""
    return sum(1.0 if _WIDE.match(c) else 0.56 for c in text)


# A line never starts with a closing mark nor ends with an opening one (a lone "）" on the last line of a title)
_CLOSING = set(")]}）】」』》〉，。、：；！？,.;:!?%…’”")
_OPENING = set("([{（【「『《〈‘“")


def wrap(text: str, ems: float) -> list[str]:
    """text in lines of at most `ems` ems (a longer word keeps a line of its own); CJK text breaks anywhere, but
    not before a closing mark or after an opening one: the word beside such a mark moves to the next line with it."""
    lines, line = [], []
    for token in _TOKENS.findall(text):
        if "".join(line).strip() and _width("".join(line) + token.rstrip()) > ems:
            if _words(line) == 1 and not token.isspace() and (token[0] in _CLOSING or line[-1][-1] in _OPENING):
                line.append(token)  # a lone word with its mark: a line a little too wide beats a line of a mark
                continue
            carried = [] if token.isspace() else [token]
            while _words(line) > 1 and carried and carried[0][0] in _CLOSING:
                carried.insert(0, _pop_word(line))
            while _words(line) > 0 and line[-1][-1] in _OPENING:
                carried.insert(0, _pop_word(line))
            if "".join(line).strip():
                lines.append("".join(line).strip())
            line = carried
        else:
            line.append(token)
    if "".join(line).strip():
        lines.append("".join(line).strip())
    return lines or [text]


def _words(tokens: list[str]) -> int:
    return sum(not token.isspace() for token in tokens)


def _pop_word(tokens: list[str]) -> str:
    """The last word of a line, taken off it with the spaces before it."""
    word = tokens.pop()
    while tokens and tokens[-1].isspace():
        tokens.pop()
    return word


def _wrap_title(title, room: float, font: float = TITLE_FONT):
    ems = room / font
    if isinstance(title, dict):
        return {**title, "text": _wrap_title(title["text"], room, font)} if "text" in title else title
    if isinstance(title, str):
        lines = wrap(title, ems)
    elif isinstance(title, list) and all(isinstance(line, str) for line in title):
        lines = [part for line in title for part in wrap(line, ems)]
    else:
        return title  # an expression: left as it is
    return lines[0] if len(lines) == 1 else lines


# Rooms (px of the plot's width) a chart's title is laid out for on a plain screen, where the server does not know
# how wide the chart's column will be: the title is broken into lines for each, and Vega picks the widest room that
# the chart's `width` holds (the plot's width: the title has at least that).
ROOMS = (120, 180, 240, 320, 420, 540, 700, 900, 1200)
SCREEN_TITLE_FONT = 16  # px: Streamlit's theme for a chart's title
# The room a title starting at the chart's left edge has: the whole drawing, not only the plot (a heatmap in a third
# of the page, its legend beside it, broke "A: weights of X" after "of" in a plot of 145 px). Vega re-evaluates it
# whenever `width` changes, which a resize of the container does; the padding is the frame's CHART_PADDING.
TITLE_ROOM = "max(width, containerSize()[0] - 19)"


def fitted(spec: dict, font: float = SCREEN_TITLE_FONT) -> dict:
    """`spec` whose title breaks into lines to fit the chart's width instead of ending in "…" (Vega shortens a
    title to the plot's width) or taking four lines of a wide chart on a projector. Only a single or layered
    view's own title: a concatenation has no `width` to read. A new dict; `spec` is left as it is."""
    title = spec.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    if not isinstance(text, str) or any(k in spec for k in _VIEW_KEYS[2:]):
        return spec
    expr = _title_expr(text, font)
    if expr is None:
        return spec
    titled = {**title} if isinstance(title, dict) else {}
    return {**spec, "title": {**titled, "text": {"expr": expr}, "limit": 0}}


# Kept per title: the frame fits every chart on every run, and wrapping a title for each of the nine rooms cost about
# 0.8 ms of CPU a chart, some 15 % of a warm rerun of the saturation or walkthrough pages (cProfile of a server).
@functools.lru_cache(maxsize=1024)
def _title_expr(text: str, font: float) -> str | None:
    """The Vega expression choosing `text`'s lines by the room the chart has; None if it fits the narrowest room
    on one line."""
    if len(wrap(text, ROOMS[0] / font)) == 1:
        return None
    expr = json.dumps(wrap(text, ROOMS[0] / font), ensure_ascii=False)
    for room in ROOMS[1:]:
        expr = f"{TITLE_ROOM} >= {room} ? {json.dumps(wrap(text, room / font), ensure_ascii=False)} : ({expr})"
    return expr


def _wrap_titles(node, room: float):
    if isinstance(node, list):
        return [_wrap_titles(item, room) for item in node]
    if not isinstance(node, dict) or not any(k in node for k in _VIEW_KEYS):
        return node
    out = {k: v if k in _SKIP else _wrap_titles(v, room) for k, v in node.items()}
    if "title" in out:
        out["title"] = _wrap_title(out["title"], room)
    if isinstance(out.get("encoding"), dict):  # axis titles: the larger type made long ones wider than the plot
        encoding = dict(out["encoding"])
        for channel in ("x", "y"):
            field = encoding.get(channel)
            if isinstance(field, dict) and isinstance(field.get("title"), str):
                encoding[channel] = {**field, "title": _wrap_title(field["title"], TITLE_WIDTH, AXIS_TITLE_FONT)}
        out["encoding"] = encoding
    return out
