import os
from pathlib import Path

import streamlit as st

from explorer.charts import scaling as charts
from explorer.tables import scaling as tables
from explorer.ui import benchmark, state
from explorer.ui.draw import chart, download
from explorer.ui.i18n import t, td
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

# recorded runs; the variable lets a test point the page at a folder of its own
BENCHMARKS = Path(os.environ.get("ATTN_BENCHMARKS_DIR") or Path(__file__).resolve().parents[1] / "benchmarks")
DEVICE = tables.live_device()
LIVE = "live"  # the `source` of the live points (solid lines; a recorded run's are dashed)
FORM_KEYS = (
    "bench_max_n",
    "bench_d",
    "bench_heads",
    "bench_block",
    "bench_budget_mb",
    "bench_time_limit",
    "bench_causal",
)
# A link that carries the form's settings fills the form in but measures nothing until "Run benchmark" is
# pressed: a max n = 8192 sent round a class would otherwise keep every student's first view busy for a minute.
WAITING = "_bench_waiting_for_submit"
names = td("scaling.methods")
sources = td("scaling.sources")


def notice_points(pts, rows) -> list[str]:
    """What to notice, one sentence per live method from its fitted slopes (tables.slope_facts), then the wall."""
    facts = tables.slope_facts(pts, tables.slopes(pts), rows)
    points = []
    for f in facts:
        time_words = t(f"scaling.notice.time.{f['verdict']}", **f)
        memory_words = t(f"scaling.notice.memory.{f['kind']}", **f)
        points.append(
            t("scaling.notice.item", **(f | {"method": names[f["method"]], "time": time_words, "memory": memory_words}))
        )
    return points + [t("scaling.notice.wall")]


def not_kept_warning(facts: dict) -> None:
    """Say why a run is not kept for the server (tables.keepable): busy server or repeats too far apart."""
    busy, noisy = facts["busy"], facts["noisy"]
    why = ""
    if not busy.empty:
        worst = busy.loc[busy.cpu_share.idxmin()]
        why += t("scaling.busy", share=worst.cpu_share, method=names[worst.method], n=int(worst.n))
    if noisy:
        why += t("scaling.noisy", methods=t("scaling.separator").join(names[m] for m in noisy))
    if why:
        st.warning(t("scaling.not_kept", why=why, seconds=int(tables.SHARE_UNKEPT_S)), icon=":material/speed:")


def run_again() -> None:
    """The interrupted notice's button: measure the form's settings now."""
    st.session_state[WAITING] = False


def interrupted_notice(offer: bool) -> None:
    """A benchmark under way when the server restarted, or this tab's session was lost, never finished: say so
    and, unless the student already pressed Run, offer it again (nothing runs by itself)."""
    st.warning(t("scaling.interrupted"), icon=":material/sync_problem:")
    if offer:
        st.button(t("scaling.run_again"), key="bench_run_again", on_click=run_again, icon=":material/replay:")


def stop_benchmark() -> None:
    """Cancel: the click itself stops the running script; back to the form, waiting for "Run benchmark"."""
    st.session_state[WAITING] = True


def progress_text(method: str):
    def say(done: int, total: int, entry: str) -> str:
        if not entry:
            return t("scaling.progress.start", method=names[method])
        return t("scaling.progress.step", method=names[method], entry=entry, done=done, total=total)

    return say


def recorded_section(runs, readable):
    with friendly_errors(t("scaling.sections.recorded")):
        st.subheader(t("scaling.recorded_heading"))
        st.caption(
            (t("scaling.recorded_pick") if readable else t("scaling.recorded_none")) + t("scaling.recorded_where")
        )
        if readable:
            st.dataframe(tables.recorded_listing(readable, td("scaling.listing")), hide_index=True, width="stretch")
        for bad in (r for r in runs if "error" in r):
            st.warning(
                t("scaling.unreadable", name=Path(bad["path"]).name, error=bad["error"]), icon=":material/warning:"
            )
        if not any(r["gpu"] for r in readable):
            # not gpu_attention.csv: that name holds tools.gpu_check's record of the Triton kernel's speed
            command = (
                "python -m attn_core.bench --device cuda --n 512 1024 2048 4096 8192 --csv benchmarks/gpu_scaling.csv"
            )
            st.info(t("scaling.no_gpu_runs"), icon=":material/memory:")
            with st.expander(t("scaling.developers.title"), icon=":material/terminal:"):  # folded: not for students
                st.markdown(t("scaling.developers.text", command=command))


@section
def triton_part(files) -> None:
    """The Triton kernel's recorded speed on a GPU (a kernel record in benchmarks/), one mode at a time: a table
    small enough for a projector."""
    rows, facts = None, {}
    with friendly_errors(t("scaling.sections.gpu")):
        rows, facts = tables.kernel_record(files)
    if not facts:
        return
    with st.expander(t("scaling.gpu.title"), icon=":material/memory:"), friendly_errors(t("scaling.sections.gpu")):
        fields = ("card", "date", "torch", "triton", "tokens", "width", "record")
        st.caption(t("scaling.gpu.caption", **{key: facts[key] for key in fields}))
        modes = facts["modes"]
        mode = state.segmented_control(
            t("scaling.gpu.mode"),
            list(modes),
            "fwd" if "fwd" in modes else modes[0],
            key="bench_gpu_mode",
            format_func=td("scaling.gpu.modes").get,
        )
        if mode:
            headers = td("scaling.gpu.table")
            formats = {headers["ours"]: "%.1f", headers["sdpa"]: "%.1f", headers["ratio"]: "%.2f"}
            st.dataframe(
                tables.kernel_summary(rows, mode, headers),
                hide_index=True,
                width="stretch",
                column_config={name: st.column_config.NumberColumn(format=f) for name, f in formats.items()},
            )


def live_chart(pts, fitted, value: str, text: dict, slope: str, log: bool, name: str, **extra) -> None:
    """One of the two live charts, time or memory: the points of `value` with their guide lines, the slope that
    the table states (`slope`, a tables.slopes column) in the legend, and its CSV. extra: band or theory."""
    chart(
        charts.scaling_chart,
        pts,
        tables.guide_lines(pts, value, LIVE),
        value=value,
        text=text,
        names=names,
        sources=sources,
        slopes=tables.legend_slopes(fitted, slope, LIVE),
        log=log,
        name=name,
        data=tables.chart_csv(pts, value),
        **extra,
    )


if WAITING not in st.session_state:  # first visit of this session: read before the controls publish
    st.session_state[WAITING] = any(key in st.query_params for key in FORM_KEYS)
cut_short = benchmark.interrupted()
if cut_short:
    st.session_state[WAITING] = True

header(t("scaling.title"), t("scaling.lede"))
# the answer's tiled factor from the library's byte count at the form's defaults, which the answer names
predict_first(t("scaling.question"), t("scaling.answer", tiled=tables.tiled_growth(64, 4, tables.AUTO), d=64, heads=4))

files = tables.recorded_files(BENCHMARKS)
aliases = tables.column_aliases()  # a results CSV downloaded from any language's page reads back
runs = tables.recorded_runs(files, aliases)
readable = [r for r in runs if "error" not in r]
with st.container(border=True):
    with st.form("scaling_run", border=False):
        c1, c2, c3, c4 = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
        max_n = state.select_slider(
            t("scaling.controls.max_n"), list(tables.MAX_N_OPTIONS), 1024, key="bench_max_n", where=c1
        )
        d = state.select_slider(t("scaling.controls.d"), [16, 32, 64, 128], 64, key="bench_d", where=c2)
        heads = state.select_slider(t("scaling.controls.heads"), [1, 2, 4, 8], 4, key="bench_heads", where=c3)
        block = state.select_slider(
            t("scaling.controls.block"),
            list(tables.BLOCK_OPTIONS),
            tables.AUTO,
            key="bench_block",
            where=c4,
            format_func=lambda b: t("scaling.controls.block_auto") if b == tables.AUTO else str(b),
            help=t("scaling.controls.block_help"),
        )
        c5, c6, c7, c8 = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
        budgets = tables.budget_options()
        budget_mb = state.select_slider(
            t("scaling.controls.budget"),
            budgets,
            max([b for b in budgets if b <= 256] or budgets[:1]),
            key="bench_budget_mb",
            where=c5,
            help=t("scaling.controls.budget_help", limit=budgets[-1]),
        )
        time_limit_s = state.slider(
            t("scaling.controls.time_limit"),
            5,
            120,
            20,
            5,
            key="bench_time_limit",
            where=c6,
            help=t("scaling.controls.time_limit_help"),
        )
        causal = state.toggle(
            t("scaling.controls.causal"), False, key="bench_causal", where=c7, help=t("scaling.controls.causal_help")
        )
        if c8.form_submit_button(
            t("scaling.controls.run"), type="primary", icon=":material/play_arrow:", key="bench_run"
        ):
            st.session_state[WAITING] = False
            benchmark.forget()  # a new press measures again what the server did not keep
    running = st.container()  # a run's progress and its Cancel button, right under the button that started it
    offered = tables.method_options(DEVICE)
    # Pills on a row of their own: every method's name in sight (a multiselect's box cut its chips, and wrote
    # Streamlit's "Select all" in English on a Chinese page).
    methods = state.pills(
        t("scaling.controls.methods"),
        offered,
        tables.shown_by_default(DEVICE),
        key="bench_methods",
        multi=True,
        format_func=names.get,
        help=t("scaling.controls.methods_help"),
    )
    m2, m3 = st.columns([2, 4], vertical_alignment="bottom")
    log = state.toggle(
        t("scaling.controls.log"), True, key="bench_log_axes", where=m2, help=t("scaling.controls.log_help")
    )
    choices = ["none"] + [r["label"] for r in readable]
    shown = {c: c for c in choices} | {"none": t("scaling.controls.none")}
    mine = next((i + 1 for i, r in enumerate(readable) if r["gpu"] == (DEVICE == "cuda")), 0)
    overlay = state.selectbox(
        t("scaling.controls.recorded"),
        choices,
        choices[mine],
        key="bench_recorded",
        where=m3,
        format_func=shown.get,
        disabled=not readable,
    )
    st.caption(t("scaling.sizes_caption", repeats=tables.REPEATS, warmup=tables.WARMUP))
    st.caption(t("scaling.triton_on") if "triton" in offered else t("scaling.triton_off"))
    triton_part(files)

if cut_short:  # the reconnected tab's first run, or the student's first click after the restart
    interrupted_notice(offer=st.session_state[WAITING])
elif st.session_state[WAITING] or not methods:
    st.info(t("scaling.waiting") if st.session_state[WAITING] else t("scaling.no_methods"), icon=":material/info:")
if st.session_state[WAITING] or not methods:  # cut short: waiting too, for "run again"
    recorded_section(runs, readable)
    st.stop()

rows = pts = None
with friendly_errors(t("scaling.sections.benchmark")):
    settings = tables.LiveSettings(max_n, d, heads, causal, block, budget_mb, seed(), DEVICE, time_limit_s)
    config = tables.live_config(methods, settings)
    cancel = running.empty()  # shown while the benchmark waits or runs, gone once its rows are in
    cancel.button(t("scaling.queue.cancel"), key="bench_cancel", on_click=stop_benchmark, icon=":material/cancel:")
    try:
        parts = [benchmark.measured(m, settings, progress_text(m), where=running) for m in methods]
        rows = tables.live_rows(tuple(parts))
    except benchmark.Full:  # the server's line is full: say so, show the recorded runs, keep the page working
        cancel.empty()
        st.warning(t("scaling.queue.full"), icon=":material/hourglass_disabled:")
        recorded_section(runs, readable)
        st.stop()
    cancel.empty()
    chosen = next((r for r in readable if r["label"] == overlay), None)
    recorded_rows = None
    if chosen:
        recorded_rows = tables.recorded_overlay(files, aliases, chosen["label"], tuple(methods), offered)
    pts = tables.chart_points(rows, recorded_rows)
if pts is None:
    recorded_section(runs, readable)
    st.stop()

facts = tables.run_facts(rows)
if facts["short"]:
    st.warning(benchmark.short_of_memory_text(facts["short"], facts["need"]), icon=":material/memory:")
else:
    not_kept_warning(facts)
late = facts["late"]
if late:
    which = ", ".join(t("scaling.time_limit_which", method=names[m], n=n) for m, n in late.items())
    st.warning(t("scaling.time_limit_hit", limit=time_limit_s, which=which), icon=":material/timer_off:")

left, right = st.columns([3, 2])
with left, friendly_errors(t("scaling.sections.charts")):
    if pts.empty:
        st.warning(t("scaling.nothing_measured"), icon=":material/warning:")
    else:
        axes = td("scaling.charts.axes")
        fitted = tables.slopes(pts)
        time_text = axes | td("scaling.charts.time")
        live_chart(pts, fitted, "time_ms", time_text, "time_stated", log, "scaling_time", band=("time_p10", "time_p90"))
        memory_text = axes | td("scaling.charts.memory")
        theory = tables.score_matrix_line(pts, LIVE)
        live_chart(pts, fitted, "peak_mib", memory_text, "memory_slope", log, "scaling_memory", theory=theory)
        causal_word = t("scaling.causal_yes") if config.causal else t("scaling.causal_no")
        fields = tables.describe_fields(config) | {"causal": causal_word}
        if fields["block"] == tables.AUTO:
            fields["block"] = t("scaling.block_auto", tiles=facts["tiles"] or "–")
        parts = [t("scaling.caption.live", what=t("scaling.describe", **fields))]
        if chosen:
            parts.append(t("scaling.caption.recorded", label=chosen["label"], setup=chosen["setup"]))
        parts.append(t("scaling.caption.fit", points=tables.FIT_POINTS))
        st.caption("".join(parts))
        differences = tables.setting_differences(rows, recorded_rows) if chosen else []
        if differences:
            setting_names = td("scaling.settings")  # not `settings`: that name holds the live run's LiveSettings
            which = "; ".join(
                t("scaling.difference", setting=setting_names[key], live=here, recorded=there)
                for key, here, there in differences
            )
            st.warning(t("scaling.recorded_differs", which=which), icon=":material/compare_arrows:")

with friendly_errors(t("scaling.sections.slopes")):  # the page's width: time cells carry their ranges
    summary = tables.slope_summary(
        tables.slopes(pts), sources, names, td("scaling.quantities"), t("scaling.results.method")
    )
    st.markdown(t("scaling.slopes_heading", width=tables.NOISY_WIDTH))
    numbers = [c for c in summary if summary[c].dtype.kind == "f"]  # memory; time cells are text with their range
    st.dataframe(
        summary, width="stretch", column_config={c: st.column_config.NumberColumn(format="%.2f") for c in numbers}
    )

with right:
    formula(r"M_\text{naive} = 3 \cdot 4\,B H n^2\ \text{bytes}", t("scaling.formulas.naive"))
    formula(r"M_\text{tiled} = O\big(B H\,(n d + b^2)\big)", t("scaling.formulas.tiled"))
    formula(r"\text{FLOPs} = 4\,B H n^2 d", t("scaling.formulas.flops"))
    formula(r"y \propto n^{p} \iff \log y = p \log n + c", t("scaling.formulas.slope"))
    with friendly_errors(t("scaling.sections.slopes")):
        notice(notice_points(pts, rows))

with friendly_errors(t("scaling.sections.measurements")):
    skipped = tables.not_measured_in_words(rows, names, td("scaling.not_measured"), td("scaling.status"))
    if not skipped.empty:
        st.markdown(t("scaling.not_measured_heading"))
        st.dataframe(skipped, hide_index=True, width="stretch")
    with st.expander(t("scaling.all_results", n=len(rows))):
        results = tables.results_in_words(rows, names, td("scaling.results"), td("scaling.status"))
        st.dataframe(results, hide_index=True, width="stretch")
    csv_name = f"scaling_{DEVICE}_n{max_n}_d{d}_h{heads}.csv"
    columns = td("scaling.csv_columns")  # read in the script's thread: the language is the session's
    results_csv = lambda: tables.results_csv(rows, config, columns)  # noqa: E731
    download(
        t("scaling.download"), results_csv, csv_name, "text/csv", key="bench_results_csv", icon=":material/download:"
    )

recorded_section(runs, readable)
