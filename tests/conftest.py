import os

# Every chart the tests draw is checked against the Vega-Lite schema (a server skips the check: charts.common).
os.environ.setdefault("ATTN_VALIDATE_CHARTS", "1")
# The test process is no 1 GB server: after a few hundred AppTests in one process its resident memory alone passed
# the default ATTN_SERVER_MEMORY_MB (1024) less the reserve, and every benchmark entry of the scaling page's tests
# was skipped for memory (13 failures in a full run, none when the file ran alone). Tests of that limit set their own.
os.environ.setdefault("ATTN_SERVER_MEMORY_MB", "65536")

import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from streamlit import config as streamlit_config  # noqa: E402

from explorer.ui.sidebar import THREADS  # noqa: E402

# Deployments redact error messages (.streamlit/config.toml); AppTest failures should show them in full.
streamlit_config.set_option("client.showErrorDetails", "full")

# Deterministic property tests: the same examples on every run, and no deadline on a slow CI.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# The server's thread count (app.py sets it for the whole process on a page's first run): every test computes with
# it from the start, so a number a test checks is the one the server shows, to the last bit, whatever ran before.
torch.set_num_threads(THREADS)
