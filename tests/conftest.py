import os

import torch
from hypothesis import HealthCheck, settings
from streamlit import config as streamlit_config

# Deployments redact error messages (.streamlit/config.toml); AppTest failures should show them in full.
streamlit_config.set_option("client.showErrorDetails", "full")

# Deterministic property tests: the same examples on every run, and no deadline on a slow CI.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
