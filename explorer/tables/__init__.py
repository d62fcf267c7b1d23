"""Tidy DataFrames for the pages: each function runs attn_core computations and lays them out for a chart.

Plain parameters in (sizes, seed), DataFrames and plain numbers out, so pages can cache them by value.
"""
