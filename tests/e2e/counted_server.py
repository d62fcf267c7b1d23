"""`python tests/e2e/counted_server.py LOG streamlit run app.py ...`: the app's server with every attention call of
a benchmark entry noted in LOG ("<time.monotonic()> <method> <n>" per call, written as the call starts), so that a
test can count the calls made after a Cancel instead of timing how soon the heavy slot came free. CLOCK_MONOTONIC
is the machine's: the test's time.monotonic() and the server's read the same clock."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, as `streamlit run` from it has

import attn_core.bench as bench  # noqa: E402 - patched before the server imports any page

LOG = sys.argv.pop(1)
_make_call = bench._make_call


def _counted_call(method, q, k, v, config):
    call, extra = _make_call(method, q, k, v, config)
    n = q.shape[-2]

    def counted():
        with open(LOG, "a", encoding="ascii") as log:
            log.write(f"{time.monotonic()} {method} {n}\n")
        return call()

    return counted, extra


bench._make_call = _counted_call

if __name__ == "__main__":
    from streamlit.web import cli

    sys.argv = sys.argv[1:]  # what `streamlit run ...` would see
    sys.exit(cli.main())
