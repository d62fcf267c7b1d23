import os
from pathlib import Path

import pandas as pd
import streamlit as st

from attn_core.charts import scaling as charts
from attn_core.tables import scaling as tables
from ui.frame import formula, friendly_errors, header, notice, predict_first, seed

# recorded runs; the variable lets a test point the page at a folder of its own
BENCHMARKS = Path(os.environ.get("ATTN_BENCHMARKS_DIR") or Path(__file__).resolve().parents[1] / "benchmarks")
DEVICE = tables.live_device()
LIVE, RECORDED = "live", "recorded"  # the `source` of the points: solid and dashed lines
LABELS = tables.METHOD_LABELS


recorded_runs = st.cache_data(max_entries=8)(tables.recorded_runs)
fits = st.cache_data(max_entries=32)(tables.slopes)
slope_summary = st.cache_data(max_entries=32)(tables.slope_summary)


@st.cache_data(max_entries=64, show_spinner=False)
def measure(method, max_n, d, heads, causal, block, budget_mb, seed, device):
    """One method's live rows. Its progress bar is made and emptied in here: a cache hit replays an empty slot."""
    bar = st.progress(0.0, text=f"Benchmarking {LABELS[method]} …")

    def progress(done, total, label):
        bar.progress(done / total, text=f"Benchmarking {LABELS[method]}: {label} ({done}/{total})")

    rows = tables.run_method(method, max_n, d, heads, causal, block, budget_mb, seed, device, progress)
    bar.empty()
    return rows


@st.cache_data(max_entries=32, show_spinner=False)
def chart_specs(pts, log):
    """Both charts as Vega-Lite specs. Cached by the points and the axes: building and validating an
    altair chart takes tens of ms, most of a rerun, so hiding a method or flipping the axes back is instant."""
    fitted = fits(pts)
    time_chart = charts.scaling_chart(
        pts,
        tables.guide_lines(pts, "time_ms", LIVE),
        value="time_ms",
        y_title="median time, ms",
        title="Time against n (bars: p10–p90 of the timed calls)",
        slopes=tables.legend_slopes(fitted, "time_slope", LIVE),
        log=log,
        band=("time_p10", "time_p90"),
    )
    memory_chart = charts.scaling_chart(
        pts,
        tables.guide_lines(pts, "peak_mib", LIVE),
        value="peak_mib",
        y_title="peak memory, MiB",
        title="Peak memory against n (above the inputs)",
        slopes=tables.legend_slopes(fitted, "memory_slope", LIVE),
        log=log,
        theory=tables.score_matrix_line(pts, LIVE),
        theory_label="one n×n score matrix",
    )
    # validated in tests/core/test_tables_scaling.py; here it would add ~25 ms to every miss
    return time_chart.to_dict(validate=False), memory_chart.to_dict(validate=False)


header(
    "Memory and time scaling",
    "Time every attention path and measure its peak memory as the sequence grows: naive attention stores the "
    "n × n score matrix, the tiled algorithm never does.",
)
predict_first(
    "n doubles from 512 to 1024. By what factor grows the peak memory of naive attention? Of tiled attention? "
    "And their running times?",
    "Naive memory grows **×4**: it holds three n × n fp32 matrices at once (logits, their exponentials, the weights), "
    "3 · 4 · H · n² bytes, 12 MiB → 48 MiB at H = 4. Tiled memory grows about **×2**: only arrays of n × d and a few "
    "fixed tiles. Time grows about ×4 for both, since both do 4n²d FLOPs: tiling saves memory, not arithmetic "
    "(at small n a CPU's fixed overheads pull the measured time slopes below 2).",
)

runs = recorded_runs(tables.recorded_files(BENCHMARKS))
readable = [r for r in runs if "error" not in r]
with st.container(border=True):
    with st.form("scaling_run", border=False):
        c1, c2, c3, c4, c5, c6 = st.columns([3, 2, 2, 2, 3, 3], vertical_alignment="bottom")
        max_n = c1.select_slider("max n", options=list(tables.MAX_N_OPTIONS), value=1024, key="max_n")
        d = c2.select_slider("head dim d", options=[16, 32, 64, 128], value=64, key="d")
        heads = c3.select_slider("heads H", options=[1, 2, 4, 8], value=4, key="heads")
        block = c4.select_slider("tile size b", options=[32, 64, 128, 256, 512], value=64, key="block")
        budgets = tables.budget_options()
        budget_mb = c5.select_slider(
            "naive budget, MiB",
            options=budgets,
            value=max([b for b in budgets if b <= 256] or budgets[:1]),
            key="budget_mb",
            help="A naive entry needing more than this for its n × n score copies is skipped, not run. "
            f"The app's own memory budget, {budgets[-1]:g} MiB here, caps it.",
        )
        causal = c6.checkbox("causal", key="causal", help="Tiled, SDPA and Triton skip the hidden upper triangle.")
        c6.form_submit_button("Run benchmark", type="primary", icon=":material/play_arrow:")
    m1, m2, m3 = st.columns([5, 2, 4], vertical_alignment="bottom")
    methods = m1.multiselect(
        "methods",
        tables.method_options(),
        default=tables.shown_by_default(DEVICE),
        format_func=LABELS.get,
        key="methods",
        help="Each method is measured once per setting and cached: hiding or showing one is instant.",
    )
    log = m2.toggle(
        "log-log axes", value=True, key="log_axes", help="Off: linear axes, where n² bends and n stays straight."
    )
    choices = ["none"] + [r["label"] for r in readable]
    mine = next((i + 1 for i, r in enumerate(readable) if r["gpu"] == (DEVICE == "cuda")), 0)
    overlay = m3.selectbox(
        "recorded run drawn beside the live one", choices, index=mine, key="recorded", disabled=not readable
    )
    st.caption(
        f"n = 128, 256, …, max n; {tables.REPEATS} timed calls per entry after {tables.WARMUP} warm-up, batch 1, "
        "fp32, forward only. Large n takes long on a CPU (max n = 8192: about a minute): hence the button."
    )

if not methods:
    st.info("Choose at least one method to measure.", icon=":material/info:")
    st.stop()

rows = pts = None
with friendly_errors("The benchmark"):
    config = tables.live_config(methods, max_n, d, heads, causal, block, budget_mb, seed(), DEVICE)
    args = (max_n, d, heads, causal, block, budget_mb, seed(), DEVICE)
    rows = pd.concat([measure(m, *args) for m in methods], ignore_index=True)
    chosen = next((r for r in readable if r["label"] == overlay), None)
    recorded_rows = chosen["rows"][chosen["rows"].method.isin(methods)] if chosen else None
    pts = pd.concat(
        [tables.points(rows, LIVE)] + ([tables.points(recorded_rows, RECORDED)] if chosen else []),
        ignore_index=True,
    )
if pts is None:
    st.stop()

left, right = st.columns([3, 2])
with left, friendly_errors("The charts"):
    if pts.empty:
        st.warning("No entry could be measured: see the table of skipped entries below.", icon=":material/warning:")
    else:
        time_spec, memory_spec = chart_specs(pts, log)
        st.vega_lite_chart(time_spec, width="stretch")
        st.vega_lite_chart(memory_spec, width="stretch")
        st.caption(
            f"Live run (solid): {tables.describe(config)}. "
            + (f"Recorded run (dashed): {chosen['label']}, {chosen['setup']}. " if chosen else "")
            + f"Slopes: least-squares fit of log y on log n over the {tables.FIT_POINTS} largest n of each line. "
            "Grey lines: slope 2 and slope 1 through the lowest live point at the largest n. Times jitter on a busy "
            "shared CPU; the memory figures are exact allocator bytes."
        )

with left, friendly_errors("The slope table"):
    summary = slope_summary(fits(pts))
    st.markdown("**Fitted log-log slopes**: the exponent p in y ∝ nᵖ (naive memory ≈ 2, tiled memory ≈ 1)")
    st.dataframe(
        summary, width="stretch", column_config={c: st.column_config.NumberColumn(format="%.2f") for c in summary}
    )

with right:
    formula(
        r"M_\text{naive} = 3 \cdot 4\,B H n^2\ \text{bytes}",
        "O(n²): logits, their exponentials and the weights, three n × n fp32 arrays alive at once",
    )
    formula(
        r"M_\text{tiled} = O\big(B H\,(n d + b^2)\big)", "O(n) at a fixed tile b: n × d arrays plus a few b × b tiles"
    )
    formula(r"\text{FLOPs} = 4\,B H n^2 d", "q kᵀ and p v: 2n²d each, for every method (causal: half)")
    formula(r"y \propto n^{p} \iff \log y = p \log n + c", "the slope p on log-log axes is the exponent")
    notice(
        [
            "Naive memory runs parallel to the slope-2 guide and sits 3× above the dashed score-matrix line.",
            "Tiled and SDPA memory follow the slope-1 guide: no n × n array ever exists; a smaller tile b makes "
            "the tiled line straighter at small n.",
            "Every method's time grows towards slope 2 (4n²d FLOPs each): tiling saves memory, not arithmetic.",
            "Raise max n past the memory budget and naive entries are skipped, not run: the wall that FlashAttention "
            "removes.",
        ]
    )

with friendly_errors("The measurements"):
    skipped = tables.not_measured(rows)
    if not skipped.empty:
        st.markdown("**Not measured**: skipped before running, so nothing crashed")
        st.dataframe(skipped, hide_index=True, width="stretch")
    with st.expander(f"All live measurements ({len(rows)} entries)"):
        st.dataframe(tables.results_table(rows), hide_index=True, width="stretch")
    st.download_button(
        "Download the live results (CSV)",
        tables.results_csv(rows, config),
        file_name=f"scaling_{DEVICE}_n{max_n}_d{d}_h{heads}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
    )

with friendly_errors("The recorded runs"):
    st.subheader("Recorded runs in benchmarks/")
    st.caption(
        ("Pick one above to draw it dashed beside the live run. " if readable else "No recorded runs yet. ")
        + "Every CSV in benchmarks/ written by attn_core.bench (or downloaded from this page) appears here."
    )
    if readable:
        st.dataframe(tables.recorded_listing(readable), hide_index=True, width="stretch")
    for bad in (r for r in runs if "error" in r):
        st.warning(f"{Path(bad['path']).name} could not be read: {bad['error']}", icon=":material/warning:")
    if not any(r["gpu"] for r in readable):
        st.info(
            "No recorded GPU results yet. On a machine with a CUDA GPU, run\n\n"
            "`python -m attn_core.bench --device cuda --n 512 1024 2048 4096 8192 --csv benchmarks/gpu_attention.csv`"
            "\n\nand the run appears here, labelled with its GPU and date, ready to draw beside the live one.",
            icon=":material/memory:",
        )
