"""Peak memory of the server while one viewer opens every page at its heaviest settings.

    python -m tools.session_memory [--out benchmarks/session_memory.md]

The heaviest settings of a page are found with AppTest: every numeric control at its maximum, every
select-slider at its last option, every multi-choice with all options (choices between methods keep their
defaults). They become the page's URL (the app reproduces a view from its URL), which headless Chromium
opens against a real `streamlit run` server; a form (the scaling page's benchmark) is submitted too.
The server's RSS (with its children) is sampled every 0.1 s.

Each page is opened from its own URL, i.e. in a new session, while the earlier sessions stay in memory until
Streamlit's disconnected-session TTL expires: the overall peak over the baseline is an upper bound on what
one session visiting every page needs.
"""

from __future__ import annotations

import argparse
import datetime
import pathlib
import shlex
import sys
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from browser_helpers import wait_for_app  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from explorer.ui.registry import PAGES  # noqa: E402
from tools.controls import KINDS, real_options  # noqa: E402
from tools.load_test import MemorySampler, machine, tree_rss_mb  # noqa: E402
from tools.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

APP = str(ROOT / "app.py")


def _heaviest_value(kind: str, widget):
    if kind in ("slider", "number_input") and widget.max is not None and not isinstance(widget.value, (list, tuple)):
        return widget.max
    if kind == "select_slider":
        return real_options(widget)[-1]
    if kind == "multiselect":
        return real_options(widget)[: widget.max_selections or None]
    if kind == "button_group" and not widget._is_single_select:
        return real_options(widget)
    return None


def _text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def heaviest_params(path: str) -> dict[str, str]:
    """The URL parameters of `path` at its heaviest settings (see the module's docstring)."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.switch_page(path)
    at.run()
    in_form = {}
    keys = [(kind, w.key) for kind in KINDS for w in getattr(at.main, kind) if w.key]
    for kind, key in keys:
        widget = next((w for w in getattr(at.main, kind) if w.key == key), None)  # the tree after the last run
        value = None if widget is None else _heaviest_value(kind, widget)
        if key.startswith(("_", "csv_", "svg_")) or value is None:
            continue
        if getattr(widget, "form_id", ""):
            in_form[key] = _text(value)  # published on submit: the browser submits the form
        elif not getattr(widget, "disabled", False):
            widget.set_value(value)
            at.run()
    return {**dict(at.query_params), **in_form}


def measure(
    timeout_s: float, names: list[str] | None = None, overrides: dict[str, str] | None = None
) -> tuple[float, list[dict]]:
    """overrides: URL values that replace the found ones where a page has that parameter (e.g. the smallest
    tile, heaviest in time although last is not smallest on its slider)."""
    from playwright.sync_api import sync_playwright

    plans = [(p, heaviest_params(p.path)) for p in PAGES if names is None or p.name in names]
    plans = [(p, {k: (overrides or {}).get(k, v) for k, v in params.items()}) for p, params in plans]
    rows = []
    with streamlit_server() as srv, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
        page.goto(srv.url)
        wait_for_app(page, 120_000)
        baseline = tree_rss_mb(srv.proc.pid)
        sampler = MemorySampler(srv.proc.pid, interval=0.1)
        sampler.start()
        for info, params in plans:
            before, t0 = tree_rss_mb(srv.proc.pid), time.monotonic()
            page.goto(f"{srv.url}/{info.name}?{urllib.parse.urlencode(params)}")
            wait_for_app(page, int(timeout_s * 1000))
            submit = page.locator('[data-testid="stFormSubmitButton"] button')
            if submit.count():
                submit.first.click()
                page.wait_for_timeout(500)
                wait_for_app(page, int(timeout_s * 1000))
            errors = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count()
            t1 = time.monotonic()
            rows.append(
                {
                    "page": info.name,
                    "params": params,
                    "before": before,
                    "peak": sampler.peak_between(t0, t1),
                    "after": tree_rss_mb(srv.proc.pid),
                    "seconds": t1 - t0,
                    "errors": errors,
                }
            )
            print(f"{info.name}: peak {rows[-1]['peak']:.0f} MB ({rows[-1]['seconds']:.1f} s)", flush=True)
        sampler.stop.set()
        browser.close()
    return baseline, rows


def report(baseline: float, rows: list[dict], command: str) -> str:
    peak = max(r["peak"] for r in rows)
    lines = [
        "# One session's peak memory at the heaviest settings",
        "",
        f"Date: {datetime.datetime.now():%Y-%m-%d %H:%M}. Command: `{command}`.",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine().items()) + ".",
        "",
        f"Server RSS after the home page loaded (baseline): **{baseline:.0f} MB**. Highest RSS while every page "
        f"ran at its heaviest settings: **{peak:.0f} MB** (goal: within 1 GB = 1024 MB; "
        f"{peak - baseline:+.0f} MB over the baseline).",
        "",
        "Each page was opened from its own URL, so earlier sessions were still held in memory (Streamlit keeps a "
        "disconnected session for a while): the figures are an upper bound for one session.",
        "",
        "| page | RSS before (MB) | peak (MB) | after (MB) | seconds | errors | heaviest settings (URL) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        params = "&".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(
            f"| {r['page']} | {r['before']:.0f} | {r['peak']:.0f} | {r['after']:.0f} | {r['seconds']:.1f} | "
            f"{r['errors']} | `{params}` |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, help="write the Markdown report here")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a page may take")
    parser.add_argument("--pages", nargs="*", help="only these pages (names as in the URL), e.g. scaling")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="replace a found URL value on the pages that have it, e.g. bench_block=32",
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    baseline, rows = measure(args.timeout, args.pages, overrides)
    text = report(baseline, rows, "python -m tools.session_memory " + shlex.join(sys.argv[1:]))
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
