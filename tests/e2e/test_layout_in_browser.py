"""Nothing drawn over anything, nothing cut: every page, in both languages, on a 1366x768 laptop screen.

One browser and one page in sequence (a few minutes on 2 cores). What the DOM tells:
- a chart's drawing lies inside its column and over no neighbouring element;
- no text of a chart is cut by the edge of its drawing or shortened by Vega to "…". Streamlit draws a chart as SVG
  (each text an element with its own box) or, for larger data, on a canvas: there an init script records every
  fillText with its box in the canvas's pixels;
- a KaTeX formula and a table are no wider than their column (scrollWidth against clientWidth, element rects).
"""

from __future__ import annotations

import pytest
from browser_helpers import SCREENSHOTS, wait_for_app

from explorer.ui.registry import PAGES

pytestmark = pytest.mark.e2e

SCREEN = {"width": 1366, "height": 768}
PATHS = [""] + [p.name for p in PAGES]
LANGS = ("en", "zh")

# The canvas's own transform maps Vega's coordinates to its pixels (device pixel ratio and rotation included). A clear
# of the whole canvas starts a new frame: only the last frame's texts count.
RECORD_CANVAS_TEXT = """
(() => {
  const proto = CanvasRenderingContext2D.prototype, fill = proto.fillText, clear = proto.clearRect;
  proto.clearRect = function (x, y, w, h) {
    const t = this.getTransform();
    if (x * t.a + t.e <= 0 && y * t.d + t.f <= 0 && (x + w) * t.a + t.e >= this.canvas.width - 1) {
      this.canvas.__texts = [];
    }
    return clear.apply(this, arguments);
  };
  proto.fillText = function (text, x, y) {
    const m = this.measureText(String(text)), align = this.textAlign, t = this.getTransform();
    const left = align === 'center' ? x - m.width / 2 : (align === 'right' || align === 'end') ? x - m.width : x;
    const top = y - m.actualBoundingBoxAscent, bottom = y + m.actualBoundingBoxDescent;
    const xy = [[left, top], [left + m.width, top], [left, bottom], [left + m.width, bottom]]
      .map(([u, v]) => [t.a * u + t.c * v + t.e, t.b * u + t.d * v + t.f]);
    (this.canvas.__texts = this.canvas.__texts || []).push({text: String(text), xy});
    return fill.apply(this, arguments);
  };
})();
"""

FAULTS = """
() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const faults = [];
  const seen = el => {  // drawn on the screen: a folded expander keeps the boxes of what it hides
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !el.closest('details:not([open])') && el.checkVisibility();
  };
  const column = el => el.parentElement.closest('[data-testid="stColumn"]') || main;
  const inner = el => {  // the column's content box: its padding is not room for a chart
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return {left: r.left + parseFloat(s.paddingLeft), right: r.right - parseFloat(s.paddingRight)};
  };
  const clip = text => Array.from(text.trim().replace(/\\s+/g, ' ')).slice(0, 60).join('');
  const name = el => {
    const title = el.querySelector('svg.marks .role-title-text'), canvas = el.querySelector('canvas.marks');
    const texts = canvas && (canvas.__texts || []).map(t => t.text).join(' ');
    return clip((title && title.textContent) || texts || el.innerText || el.textContent || '');
  };
  const texts = (drawing, r) => {  // [text, its box on the screen] of a chart's drawing
    if (drawing.tagName !== 'CANVAS') {
      return [...drawing.querySelectorAll('text')].map(e => [e.textContent, e.getBoundingClientRect()]);
    }
    const sx = r.width / drawing.width, sy = r.height / drawing.height;
    return (drawing.__texts || []).map(({text, xy}) => {
      const xs = xy.map(p => r.left + p[0] * sx), ys = xy.map(p => r.top + p[1] * sy);
      const left = Math.min(...xs), right = Math.max(...xs), top = Math.min(...ys), bottom = Math.max(...ys);
      return [text, {left, right, top, bottom, width: right - left}];
    });
  };
  const labelsOverData = drawing => {  // texts of an SVG chart's text marks that lie on a line or a point
    const labels = [...drawing.querySelectorAll('g.mark-text.role-mark text')]
      .map(e => [e.textContent, e.getBoundingClientRect()]).filter(([t, b]) => t.trim() && b.width);
    if (!labels.length) return [];
    const dots = [...drawing.querySelectorAll('g.mark-symbol.role-mark path')].map(e => e.getBoundingClientRect());
    const points = [];  // every 2 px along each line, in the page's coordinates (as the boxes are)
    for (const line of drawing.querySelectorAll('g.mark-line.role-mark path[d]:not([d=""])')) {
      const m = line.getScreenCTM(), length = line.getTotalLength();
      for (let at = 0; at <= length; at += 2) {
        const p = line.getPointAtLength(at);
        points.push([m.a * p.x + m.c * p.y + m.e, m.b * p.x + m.d * p.y + m.f]);
      }
    }
    const overlap = (b, d) => Math.min(b.right, d.right) - Math.max(b.left, d.left) > 1
      && Math.min(b.bottom, d.bottom) - Math.max(b.top, d.top) > 1;
    const inside = b => ([x, y]) => x > b.left + 1 && x < b.right - 1 && y > b.top + 1 && y < b.bottom - 1;
    return labels.filter(([t, b]) => dots.some(d => overlap(b, d)) || points.some(inside(b))).map(l => l[0]);
  };
  const leaves = [...main.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter(e => seen(e) && !e.querySelector('[data-testid="stElementContainer"]'));
  for (const chart of main.querySelectorAll('[data-testid="stVegaLiteChart"]')) {
    const drawing = chart.querySelector('svg.marks, canvas.marks');
    if (!drawing || !seen(drawing)) continue;
    const r = drawing.getBoundingClientRect(), col = inner(column(chart));
    if (r.left < col.left - 1 || r.right > col.right + 1) {
      faults.push(`chart beyond its column (${Math.round(r.left)}..${Math.round(r.right)} in `
        + `${Math.round(col.left)}..${Math.round(col.right)}): ${name(chart)}`);
    }
    const own = chart.closest('[data-testid="stElementContainer"]');
    for (const other of leaves) {
      if (other === own || other.contains(chart)) continue;
      const o = other.getBoundingClientRect();
      const w = Math.min(r.right, o.right) - Math.max(r.left, o.left);
      const h = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
      if (w > 2 && h > 2) faults.push(`chart drawn over "${name(other)}": ${name(chart)}`);
    }
    for (const [t, box] of texts(drawing, r)) {
      if (!t.trim() || !box.width) continue;
      if (t.endsWith('\u2026')) faults.push(`chart text shortened to "${t}": ${name(chart)}`);
      if (box.left < r.left - 1 || box.right > r.right + 1 || box.top < r.top - 1 || box.bottom > r.bottom + 1) {
        faults.push(`chart text cut at the edge of its chart "${t}": ${name(chart)}`);
      }
    }
  }
  // A label written on a chart's plot (a text mark, not an axis, legend or title) over its data: a line or a dot
  for (const chart of main.querySelectorAll('[data-testid="stVegaLiteChart"]')) {
    const drawing = chart.querySelector('svg.marks');
    if (drawing && seen(drawing)) labelsOverData(drawing).forEach(t => faults.push(`chart label "${clip(t)}" drawn `
      + `over its data: ${name(chart)}`));
  }
  // A formula or a table wider than its box scrolls or is hidden there: its scrollWidth tells (KaTeX's struts reach
  // 2 px past a formula that fits, hence the slack).
  const wide = (el, what, slack) => {
    const col = inner(column(el)), r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + slack || r.right > col.right + 1 || r.left < col.left - 1) {
      faults.push(`${what} wider than its column (${el.scrollWidth} px, column `
        + `${Math.round(col.right - col.left)} px): ${clip(el.innerText || '')}`);
    }
  };
  main.querySelectorAll('.katex-display').forEach(el => seen(el) && wide(el, 'formula', 3));
  main.querySelectorAll('[data-testid="stMarkdownContainer"] table, [data-testid="stTable"]')
    .forEach(el => seen(el) && wide(el.closest('[data-testid="stTable"]') || el, 'table', 1));
  return faults;
}
"""


def charts_drawn(page) -> None:
    """Wait until every chart of the page is drawn (Vega draws after the script's run has ended)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
                 .every(c => !c.getBoundingClientRect().width || c.querySelector('svg.marks, canvas.marks'))""",
        timeout=30_000,
    )
    page.wait_for_timeout(500)


def layout_faults(page, base: str, path: str, lang: str, shot: str | None = None) -> list[str]:
    page.goto(f"{base}/{path}?lang={lang}")
    wait_for_app(page)
    charts_drawn(page)
    if shot:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / shot), full_page=True)
    return [f"{path or 'home'} [{lang}]: {fault}" for fault in page.evaluate(FAULTS)]


@pytest.fixture
def laptop(browser):
    context = browser.new_context(viewport=SCREEN)
    context.add_init_script(RECORD_CANVAS_TEXT)
    page = context.new_page()
    yield page
    context.close()


def test_nothing_is_cut_or_drawn_over_anything_at_1366x768(server, laptop):
    faults = [f for lang in LANGS for path in PATHS for f in layout_faults(laptop, server, path, lang)]
    assert not faults, "\n".join(faults)


def test_the_checks_see_a_chart_too_wide_for_its_column(server, laptop):
    """The test above can fail: a chart forced wider than the page is reported, and so is a formula."""
    laptop.goto(f"{server}/sqrt_dk")
    wait_for_app(laptop)
    charts_drawn(laptop)
    laptop.add_style_tag(
        content='[data-testid="stVegaLiteChart"] svg.marks { margin-left: 900px; }'
        " .katex-display > .katex { padding-right: 2000px; }"
    )
    faults = laptop.evaluate(FAULTS)
    assert any("chart beyond its column" in f for f in faults)
    assert any("formula wider than its column" in f for f in faults)


def test_the_checks_see_a_label_written_over_a_line(server, laptop):
    """Scaling's O(n) and O(n²) names sat on the lines and dots at the guides' left end: a label placed on a line of a
    chart is reported."""
    laptop.goto(f"{server}/sqrt_dk")
    wait_for_app(laptop)
    charts_drawn(laptop)
    assert not [f for f in laptop.evaluate(FAULTS) if "over its data" in f]
    laptop.evaluate(
        """() => {
          const line = document.querySelector('svg.marks g.mark-line.role-mark path');
          const p = line.getPointAtLength(line.getTotalLength() / 2), ns = 'http://www.w3.org/2000/svg';
          const group = document.createElementNS(ns, 'g'), text = document.createElementNS(ns, 'text');
          group.setAttribute('class', 'mark-text role-mark');
          text.setAttribute('x', p.x - 10);
          text.setAttribute('y', p.y + 4);
          text.textContent = 'O(n)';
          group.appendChild(text);
          line.parentNode.parentNode.appendChild(group);
        }"""
    )
    assert any('chart label "O(n)" drawn over its data' in f for f in laptop.evaluate(FAULTS))
