"""Streamlit-side helpers shared by every page (the library attn_core never imports these)."""
