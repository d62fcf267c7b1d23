"""Altair chart builders, one module per page topic, fed by tidy pandas DataFrames.

A builder only draws: it never computes attention (that happens in attn_core and explorer.tables).
"""
