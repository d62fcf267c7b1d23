"""The app's own code: the Streamlit frame (ui), per-page tables (DataFrames from attn_core) and chart builders."""
