"""An export click in a busy class: the file the click made is still there when the browser fetches it.

Streamlit 1.67 makes a deferred download's file on the click and ties it to no session, so the next two script
runs that end anywhere on the server used to delete it: a student whose browser fetched the URL after two other
students' reruns got a 404 (explorer.ui.draw.pinned keeps it).
"""

import asyncio
import csv
import io

from browser_helpers import run_async

from tools.ws_client import WsSession

PAGE = "worked_example"  # a cheap page with charts, each offering CSV and SVG


async def _click_then_others_rerun(url: str, reruns: int):
    async with WsSession(url) as student, WsSession(url) as other:
        run = await student.rerun(PAGE, timeout=120)
        await other.rerun(PAGE, timeout=120)
        urls = [await student.make_file(file_id, timeout=120) for file_id in run.exports[:2]]  # a CSV and an SVG
        for _ in range(reruns):  # each finished run sweeps the server's unreferenced files
            await other.rerun(timeout=120)
        fetched = []
        for u in urls:
            got = await student.fetch(u, timeout=60)
            fetched.append((u, got.status, student.last_body))
        return fetched


def test_an_export_survives_other_sessions_reruns_between_click_and_fetch(server):
    fetched = run_async(asyncio.wait_for(_click_then_others_rerun(server, reruns=3), 300))
    assert [status for _, status, _ in fetched] == [200, 200], [(u, s) for u, s, _ in fetched]
    (_, _, table), (_, _, picture) = fetched
    rows = list(csv.reader(io.StringIO(table.decode("utf-8"))))
    assert len(rows) > 1 and rows[0]  # a header and data
    assert picture.decode("utf-8").lstrip().startswith("<svg")
