import os

# Deployments redact tracebacks (.streamlit/config.toml); tests want the full message when a page fails.
os.environ.setdefault("STREAMLIT_CLIENT_SHOW_ERROR_DETAILS", "full")

import torch
from hypothesis import HealthCheck, settings

# Deterministic property tests: the same examples on every run, and no deadline on a slow CI.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
