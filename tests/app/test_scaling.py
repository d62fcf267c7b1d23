import json
import math
import random
import re
import types

import pytest
import torch
from app_helpers import assert_clean, open_link
from helpers import KERNEL_HEADER, write_kernel_record

import attn_core.bench as bench
from attn_core.bench import ROW_FIELDS, write_csv
from explorer.tables import scaling as tables

PAGE = "views/scaling.py"
SUBMIT = "bench_run"
# n = 128, 256, 512: a few milliseconds per method
TINY = {"bench_max_n": 512, "bench_d": 16, "bench_heads": 1, "bench_block": 32}


def submit(at, **controls):
    """Set the benchmark's form controls and press "Run benchmark"."""
    for key, value in controls.items():
        if key == "bench_causal":
            at.toggle(key=key).set_value(value)
        elif key == "bench_time_limit":
            at.slider(key=key).set_value(value)
        else:
            at.select_slider(key=key).set_value(value)
    at.button(key=SUBMIT).click().run()
    assert_clean(at)
    return at


def table(at, column: str):
    """The first st.dataframe with this column: "memory · live" (slopes), "reason" (skipped),
    "peak ÷ scores" (all live results) or "run" (recorded runs)."""
    for df in at.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no table with a column {column!r}")


def caption(at, start: str) -> str:
    return next(c.value for c in at.caption if c.value.startswith(start))


def x_scale(at, i: int = 0) -> str:
    spec = json.loads(at.get("vega_lite_chart")[i].proto.spec)
    return next(layer["encoding"]["x"]["scale"]["type"] for layer in spec["layer"])


def leaf_layers(spec: dict) -> list[dict]:
    """The layers that draw marks, in order, from a layer spec that may nest layers."""
    return [leaf for layer in spec["layer"] for leaf in (leaf_layers(layer) if "layer" in layer else [layer])]


def recorded_rows(device: str, methods: tuple[str, ...]) -> list[dict]:
    """A recorded run with exact exponents: time ~ n^2, memory ~ n^2 for naive and ~ n for the rest."""
    return [
        dict.fromkeys(ROW_FIELDS)
        | {"method": m, "device": device, "dtype": "float32", "n": n, "d": 64, "heads": 4, "batch": 1}
        | {"causal": False, "status": "ok", "time_ms_median": 1e-6 * n**2, "time_ms_p10": 1e-6 * n**2}
        | {"time_ms_p90": 1e-6 * n**2, "peak_mem_bytes": 12 * n * n if m == "naive" else 64 * n}
        | {"theory_scores_bytes": 16 * n * n}
        for n in (512, 1024, 2048)
        for m in methods
    ]


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A benchmarks/ folder of the test's own: a CPU and a GPU run (as attn_core.bench writes them), a bad file, and
    a record of kernel speeds (as tools.gpu_check writes it): another kind of record, not a scaling run."""
    cpu = {"device": "cpu", "device_name": "Test CPU", "date": "2026-01-01"}
    gpu = {"device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "date": "2026-01-02", "torch": "2.13.0"}
    write_csv(str(tmp_path / "cpu.csv"), recorded_rows("cpu", ("naive", "tiled")), cpu)
    write_csv(str(tmp_path / "gpu.csv"), recorded_rows("cuda", ("naive", "triton")), gpu)
    (tmp_path / "broken.csv").write_text("not,a,benchmark\n1,2,3\n")
    kernels = write_kernel_record(tmp_path / "gpu_attention.csv")
    monkeypatch.setenv("ATTN_BENCHMARKS_DIR", str(tmp_path))
    return {"cpu": "Test CPU (cpu), 2026-01-01", "gpu": "NVIDIA H100 80GB HBM3 (cuda), 2026-01-02", "kernels": kernels}


def test_renders_at_defaults_with_formula_charts_and_tables(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2  # time and memory against n
    assert any("n^2" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer and the full results are folded away
    assert "n = 128 … 1024, d = 64, H = 4" in caption(at, "Live run (solid):")
    slopes = table(at, "memory · live")
    assert {"naive", "tiled (online softmax)", "torch SDPA"} <= set(slopes.index)
    assert at.get("download_button")  # st.download_button (an UnknownElement to AppTest)
    recorded = at.selectbox(key="bench_recorded").options[1:]  # the runs in benchmarks/, if any yet
    if not any("(cuda" in run for run in recorded):
        assert any("No recorded GPU scaling run yet" in info.value for info in at.info)


def test_every_control_changes_and_the_page_follows(open_page, recorded):
    at = open_page(PAGE, bench_methods=["naive", "tiled"])
    submit(at, **TINY, bench_budget_mb=64, bench_causal=True)
    assert "n = 128 … 512, d = 16, H = 1" in caption(at, "Live run (solid):")
    assert "tile b = 32, causal, memory budget 64 MiB" in caption(at, "Live run (solid):")
    results = table(at, "peak ÷ scores")
    # naive has no causal flag (it is always full); tiled follows the checkbox
    assert dict(zip(results.method, results.causal, strict=True)) == {"naive": False, "tiled (online softmax)": True}
    assert results["n×n scores MiB (theory)"].max() == 512 * 512 * 4 / 2**20  # H = 1: one 512 x 512 fp32 matrix

    assert x_scale(at) == "log"
    at.toggle(key="bench_log_axes").set_value(False).run()
    assert_clean(at)
    assert x_scale(at) == "linear"

    at.button_group(key="bench_methods").set_value(["naive"]).run()
    assert_clean(at)
    assert list(table(at, "memory · live").index) == ["naive"]

    # on a CPU the recorded CPU run is drawn beside the live one by default, with its own slopes
    assert at.selectbox(key="bench_recorded").value == recorded["cpu"]
    assert table(at, "memory · recorded").loc["naive", "memory · recorded"] == pytest.approx(2.0)
    at.selectbox(key="bench_recorded").set_value("none").run()
    assert_clean(at)
    assert all(not c.endswith("recorded") for c in table(at, "memory · live").columns)

    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert "seed 7, on " in caption(at, "Live run (solid):")


def test_naive_entries_over_the_budget_are_listed_as_skipped(open_page):
    at = open_page(PAGE, bench_methods=["naive", "sdpa"])
    # naive holds 3 score copies: 3 * H * n^2 * 4 B = 48 MiB at n = 1024, H = 4, over a 16 MiB budget; 12 at 512
    submit(at, bench_max_n=1024, bench_d=16, bench_heads=4, bench_block=32, bench_budget_mb=16)
    skipped = table(at, "reason")
    assert list(zip(skipped.method, skipped.n, strict=True)) == [("naive", 1024)]
    assert skipped.reason.iloc[0].startswith("over the memory budget of 16 MiB: holds ~3 n × n score copies, ~")
    assert len(at.get("vega_lite_chart")) == 2  # the measured entries are still drawn


def test_naive_memory_grows_with_slope_two_and_tiled_far_slower(open_page):
    at = open_page(PAGE, bench_methods=["naive", "tiled"])
    submit(at, **TINY, bench_budget_mb=64)
    memory = table(at, "memory · live")["memory · live"]
    # Naive's peak is 3 score copies a n^2 plus O(n) extras r(n) (row statistics, the n x d output) with
    # 0 <= r <= eps a n^2, eps = (d + 4) / (3 n) at the smallest fitted n = 128. Each log peak then lies within
    # log(1 + eps) above the exact line, and a least-squares slope over 3 points one octave apart moves by at
    # most log2(1 + eps).
    tol = math.log2(1 + (TINY["bench_d"] + 4) / (3 * 128))
    assert abs(memory["naive"] - 2) <= tol, (memory["naive"], tol)
    # tiled holds n x d arrays and 32 x 32 tiles: about linear, nowhere near quadratic
    assert memory["tiled (online softmax)"] < 1.25


def test_no_method_chosen_asks_for_one(open_page):
    at = open_page(PAGE, **TINY)
    at.button_group(key="bench_methods").set_value([]).run()
    assert_clean(at)
    assert any("at least one method" in info.value for info in at.info)


def test_recorded_runs_are_listed_labelled_and_drawn_beside_the_live_one(open_page, recorded, monkeypatch):
    monkeypatch.setattr(tables, "live_device", lambda: "cpu")  # a CPU-only server, whatever runs the test
    at = open_page(PAGE, **TINY, bench_methods=["naive", "tiled"])
    assert_clean(at)
    # the kernel record (gpu_attention.csv) is another kind of record: neither a run to pick nor an error
    assert at.selectbox(key="bench_recorded").options == ["none", recorded["cpu"], recorded["gpu"]]
    assert list(table(at, "run")["run"]) == [recorded["cpu"], recorded["gpu"]]
    assert not any("No recorded GPU scaling run" in info.value for info in at.info)
    (unreadable,) = [w.value for w in at.warning if "could not be read" in w.value]
    assert unreadable.startswith("broken.csv could not be read")
    # the Triton kernel cannot run on this CPU: not offered, but the recorded GPU run still draws its line
    assert "triton" not in at.button_group(key="bench_methods").options
    at.selectbox(key="bench_recorded").set_value(recorded["gpu"]).run()
    assert_clean(at)
    slopes = table(at, "memory · recorded")
    assert slopes.loc["naive", "memory · recorded"] == pytest.approx(2.0)
    assert slopes.loc["Triton flash kernel", "memory · recorded"] == pytest.approx(1.0)
    assert recorded["gpu"] in caption(at, "Live run (solid):")


def test_without_recorded_runs_the_page_says_how_to_record_them(open_page, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_BENCHMARKS_DIR", str(tmp_path))  # an empty folder
    at = open_page(PAGE, **TINY)
    assert_clean(at)
    assert at.selectbox(key="bench_recorded").options == ["none"] and at.selectbox(key="bench_recorded").disabled
    assert any("No recorded GPU scaling run yet" in info.value for info in at.info)
    assert len(at.get("vega_lite_chart")) == 2
    assert not any(e.label.startswith("The Triton kernel on a GPU") for e in at.expander)  # no record, no summary


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_cpu_server_says_what_the_triton_kernel_is_for_and_shows_its_recorded_gpu_speed(recorded, monkeypatch, lang):
    """The kernel is for a CUDA GPU: not offered on a CPU server, which shows its recorded GPU speed instead, a small
    table computed from the kernel record (tests/helpers.py: write_kernel_record), one mode at a time."""
    from explorer.ui.i18n import catalog

    words = catalog(lang)
    monkeypatch.setattr(tables, "live_device", lambda: "cpu")  # a CPU-only server, whatever runs the test
    at = open_link(PAGE, {"lang": lang, **{key: str(value) for key, value in TINY.items()}})  # filled in, not run
    assert_clean(at)
    assert at.button_group(key="bench_methods").options == [words[f"scaling.methods.{m}"] for m in tables.METHODS[:-1]]
    assert words["scaling.triton_off"].replace("`", "") in [c.value.replace("`", "") for c in at.caption]
    (summary,) = [e for e in at.expander if e.label == words["scaling.gpu.title"]]
    (caption,) = [c.value for c in summary.caption]
    assert all(value in caption for value in KERNEL_HEADER.values())  # card, torch and triton versions, date
    assert "16384" in caption and "2048" in caption and "gpu_attention.csv" in caption  # sizes, the record
    headers = [words[f"scaling.gpu.table.{key}"] for key in tables.KERNEL_HEADERS]
    for mode in ("fwd", "fwd_bwd"):
        if mode != "fwd":  # the forward pass is shown first, like the page's own live runs
            at.segmented_control(key="bench_gpu_mode").set_value(mode).run()
            assert_clean(at)
        (shown,) = [df.value for df in at.dataframe if headers[-1] in df.value.columns]
        assert list(shown.columns) == headers
        assert shown.iloc[0].tolist() == ["float16", 64, False, *recorded["kernels"][mode]]


FORM = {**TINY, "bench_budget_mb": 64, "bench_time_limit": 10, "bench_causal": True}


def form_values(at) -> dict:
    return {
        **{key: at.select_slider(key=key).value for key in (*TINY, "bench_budget_mb")},
        "bench_time_limit": at.slider(key="bench_time_limit").value,
        "bench_causal": at.toggle(key="bench_causal").value,
    }


def test_the_form_travels_in_the_url_and_a_link_fills_it_in_without_running(open_page):
    at = open_page(PAGE, bench_methods=["naive", "tiled"])
    assert form_values(at) != FORM  # the defaults differ in every control
    at.select_slider(key="bench_max_n").set_value(512).run()  # changed, not submitted: nothing published
    assert at.query_params["bench_max_n"] == "1024"
    submit(at, **FORM)
    link = dict(at.query_params)
    assert {key: link[key] for key in FORM} == {key: str(v).lower() for key, v in FORM.items()}

    again = open_link(PAGE, link)  # a student opens the copied link
    assert_clean(again)
    assert form_values(again) == FORM
    assert again.button_group(key="bench_methods").value == ["naive", "tiled"]
    # filled in, not run: no charts and no results until the button is pressed
    assert any("Run benchmark" in info.value for info in again.info)
    assert not again.get("vega_lite_chart") and not again.get("download_button")
    again.button(key=SUBMIT).click().run()
    assert_clean(again)
    assert len(again.get("vega_lite_chart")) == 2
    assert "n = 128 … 512, d = 16, H = 1" in caption(again, "Live run (solid):")
    assert "tile b = 32, causal, memory budget 64 MiB" in caption(again, "Live run (solid):")


def test_a_link_without_form_settings_runs_at_once(open_page):
    at = open_link(PAGE, {"bench_methods": "sdpa", "bench_log_axes": "false"})
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2 and x_scale(at) == "linear"
    assert not any("Run benchmark" in info.value for info in at.info)


def test_past_the_time_limit_larger_n_are_skipped_and_reported(open_page, monkeypatch):
    clock = iter(range(0, 10**6, 3))  # every reading of the harness's clock is 3 s after the one before
    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    # a seed of its own: the rows of this fake clock must not come from (or land in) another test's cache
    at = open_page(PAGE, bench_methods=["naive"], seed=4242)
    submit(at, **TINY, bench_time_limit=5)
    skipped = table(at, "reason")
    assert list(skipped.n) == [256, 512]
    assert all(reason.startswith("skipped: the time limit of 5 s had passed") for reason in skipped.reason)
    warning = next(w.value for w in at.warning if "time limit" in w.value)
    assert "5 s per method" in warning and "naive from n = 256 skipped" in warning
    assert len(at.get("vega_lite_chart")) == 2  # n = 128 was measured and is drawn


def test_a_full_server_line_says_so_and_the_page_keeps_working(open_page, monkeypatch):
    """Heavy work waits in one server-wide line (explorer.ui.heavy); when it is full the page says so."""
    from explorer.ui import heavy

    line = heavy.Line(slots=1, max_waiting=0)
    monkeypatch.setattr(heavy, "server_line", lambda: line)
    with line.place():  # another student's benchmark holds the only slot, and nobody may wait
        at = submit(open_page(PAGE, seed=987), **TINY)  # a seed no other test measured: not in the cache
    assert any("Too many benchmarks" in w.value for w in at.warning)
    with line.place():
        pass
    at = submit(at, **TINY)  # free again: the same click measures
    assert not any("Too many benchmarks" in w.value for w in at.warning)
    assert "memory · live" in [c for df in at.dataframe for c in df.value.columns]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_server_short_of_memory_skips_what_does_not_fit_says_so_and_keeps_nothing(monkeypatch, lang):
    """explorer.ui.heavy.headroom: what the server may still take. 1 MiB left: n = 128 (inputs 24 KiB) runs, the
    rest is skipped with the reason; the result is not kept, so the same click with memory back measures it all."""
    from explorer.ui import heavy

    room = {"bytes": 2**20}
    monkeypatch.setattr(heavy, "headroom", lambda: room["bytes"])
    # busy now (900 MiB held), 500 MiB at rest: room enough later, so the page says to run again later
    monkeypatch.setattr(heavy, "outlook", lambda: heavy.Outlook(limit=1024, reserve=128, held=900, floor=500))
    tiny = {**TINY, "bench_d": 32, "bench_heads": 8}  # naive's scores at n = 512: 3 x 8 MiB
    seed = {"en": "988", "zh": "989"}[lang]  # seeds no other test measured: nothing cached
    at = submit(open_link(PAGE, {"lang": lang, "seed": seed, "bench_methods": "naive,tiled"}), **tiny)
    later = {"en": "run the benchmark again once other heavy work has ended", "zh": "等其他繁重任务结束后再运行"}[lang]
    (warning,) = [w.value for w in at.warning if later in w.value]
    skipped = table(at, "reason" if lang == "en" else "原因")
    reasons = list(skipped.iloc[:, 2])
    said = {"en": "the server had too little memory left: needs ~", "zh": "服务器剩余内存不足：需要约 "}[lang]
    assert reasons and all(r.startswith(said) for r in reasons)  # the harness's reason, in the viewer's words
    assert str(len(reasons)) in warning and "900" in warning and "500" in warning
    room["bytes"] = None  # memory back (or unknown): nothing kept from the cut run, everything measured
    at = submit(at, **tiny)
    assert not any(bench.HEADROOM_STATUS in r for df in at.dataframe for r in df.value.astype(str).values.ravel())


def test_the_developer_command_is_folded_away_from_students(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    folded = [m.value for e in at.expander for m in e.markdown]
    shown = [e.value for kind in ("info", "markdown", "caption") for e in getattr(at, kind)]
    for text in folded:
        shown.remove(text)
    assert not [text for text in shown if "attn_core.bench --" in text]
    (developers,) = [e for e in at.expander if e.label.startswith("For developers")]
    assert any("python -m attn_core.bench --device cuda" in m.value for m in developers.markdown)


def test_tiles_default_to_the_librarys_choice_and_a_recorded_run_with_other_settings_says_so(open_page, recorded):
    at = open_page(PAGE, bench_methods=["naive", "tiled"])
    assert at.select_slider(key="bench_block").value == "auto"
    submit(at, bench_max_n=512, bench_d=16, bench_heads=1)
    assert "tile b = auto, 128×128 … 256×512" in caption(at, "Live run (solid):")
    # the recorded CPU run (drawn by default) used d = 64, H = 4 and 64 x 64 tiles... at other n: d and H differ
    warning = next(w.value for w in at.warning if "other settings" in w.value)
    assert "d 16 live, 64 recorded" in warning and "H 1 live, 4 recorded" in warning
    at.selectbox(key="bench_recorded").set_value("none").run()
    assert_clean(at)
    assert not any("other settings" in w.value for w in at.warning)


# --- the words say what the numbers beside them show ----------------------------------------------------------


def notice_item(at, name: str) -> str:
    """The "what to notice" sentence about one method (by its shown name)."""
    lines = [line for m in at.markdown for line in m.value.splitlines() if line.startswith(f"- **{name}** (n = ")]
    assert len(lines) == 1, (name, lines)
    return lines[0]


def tiles_at(block, causal: bool, n: int) -> tuple[int, int]:
    from attn_core.tiled import default_blocks

    return default_blocks(n, n, "cpu", causal) if block == "auto" else (min(block, n), min(block, n))  # cut to n


def tiled_theory(d: int, heads: int, block, causal: bool, ns) -> float:
    """The tiled path's predicted memory slope, from attn_core alone."""
    from attn_core.tiled import tiled_working_bytes

    tiles = {n: tiles_at(block, causal, n) for n in ns}
    need = [tiled_working_bytes(heads, n, n, d, d, torch.float32, *tiles[n], masked=False, causal=causal) for n in ns]
    return tables.loglog_slope(ns, need)


def generated_settings(count: int, seed: int = 20):
    """Settings drawn over the controls' ranges (kept small enough to run in seconds on a shared 2-core machine)."""
    rng = random.Random(seed)
    for i in range(count):
        methods = ["naive", "tiled"] + rng.sample(["sdpa", "naive_masked"], 1)
        controls = {
            "bench_max_n": rng.choice([512, 1024]),
            "bench_d": rng.choice([16, 32]),
            "bench_heads": rng.choice([1, 2]),
            "bench_block": rng.choice(["auto", 32, 64, 128, 256, 512]),
            "bench_causal": bool(i % 2),  # both, whatever the draw
        }
        if controls["bench_max_n"] == 1024:
            controls["bench_heads"] = 1
        yield methods, controls


@pytest.mark.parametrize(("methods", "controls"), list(generated_settings(4)))
def test_what_to_notice_states_the_slopes_the_table_and_legend_show(open_page, methods, controls):
    at = open_page(PAGE, bench_methods=methods, bench_recorded="none")
    submit(at, **controls, bench_budget_mb=256)
    slopes = table(at, "memory · live")
    results = table(at, "peak ÷ scores")
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)  # the time chart
    legend = next(
        lay["encoding"]["color"]["scale"]["domain"]
        for lay in leaf_layers(spec)
        if lay["encoding"].get("strokeDash", {}).get("field") == "source"
    )
    warnings = " ".join(w.value for w in at.warning)
    ns = sorted(set(results.n))[-tables.FIT_POINTS :]
    for name in slopes.index:
        sentence, cell = notice_item(at, name), slopes.loc[name, "time · live"]
        assert f"(n = {ns[0]} … {ns[-1]})" in sentence
        assert f"memory slope {slopes.loc[name, 'memory · live']:.2f}" in sentence
        slope, lo, hi = re.fullmatch(r"(\S+) \((-?[\d.]+)–(-?[\d.]+)\)", cell).groups()
        if slope == "?" and "busy" in sentence:
            assert f"spanned slopes {lo} to {hi}" in sentence and "the server was busy" in warnings
        elif slope == "?":
            assert f"too noisy to state a slope: its repeats allow any from {lo} to {hi}" in sentence
            assert name in warnings and "not kept" in warnings
            assert name in legend  # the legend names the method without a slope
        else:
            assert f"time slope {cell}" in sentence and f"{name}: {slope}" in legend
            assert "busy" not in sentence  # a slope measured on a busy server is never stated
            if float(hi) < 2:
                assert "below 2" in sentence
            elif float(lo) > 2:
                assert "above 2" in sentence
            else:
                assert "holds 2" in sentence
    if "naive" in slopes.index:
        ratio = results[(results.method == "naive") & (results.n == ns[-1])]["peak ÷ scores"].iloc[0]
        assert f"its peak {ratio:.1f} × one n × n score matrix at n = {ns[-1]}" in notice_item(at, "naive")
    c = controls
    theory = tiled_theory(c["bench_d"], c["bench_heads"], c["bench_block"], c["bench_causal"], ns)
    sentence = notice_item(at, "tiled (online softmax)")
    assert f"predicts {theory:.2f}" in sentence
    grows = len({tiles_at(c["bench_block"], c["bench_causal"], n) for n in ns}) > 1
    assert ("its tile changes with n" in sentence) == grows


def fake_calls(times, counted):
    """attn_core.bench's timer replaced: every entry's timed calls take `times` ms; each use is counted."""

    def time_ms(fn, device, warmup, repeats, *_rest):  # _rest: whatever else the harness passes (a stop flag)
        counted.append(1)
        return list(times)[:repeats]

    return time_ms


@pytest.mark.parametrize(
    ("times", "share", "kept"),
    [
        ((1, 1.01, 1.02, 1.03, 1.04), 1.0, True),
        ((1, 2, 4, 8, 16), 1.0, False),
        ((1, 1.01, 1.02, 1.03, 1.04), 0.2, False),
    ],
    ids=["steady", "repeats-disagree", "busy-server"],
)
def test_a_noisy_measurement_is_shared_for_a_minute_and_never_kept_for_the_server(monkeypatch, times, share, kept):
    counted = []
    monkeypatch.setattr(bench, "_time_ms", fake_calls(times, counted))
    monkeypatch.setattr(tables.CpuShare, "shares", lambda self, entries: [share] * entries)
    seed = str(7000 + len(times) * 10 + int(share * 10) + 100 * kept)  # a setting no other test measured
    link = {"seed": seed, "bench_methods": "sdpa"} | {key: str(value) for key, value in TINY.items()}
    first = submit(open_link(PAGE, link))  # a link with the form's settings measures on the click only
    assert len(counted) == 3  # n = 128, 256, 512
    warned = " ".join(w.value for w in first.warning)
    assert ("This result is not kept" in warned and "within 60 s of its end" in warned) == (not kept)
    if share < tables.BUSY_SHARE:
        assert "as little as 20% of the time" in warned
    first.toggle(key="bench_log_axes").set_value(False).run()  # the same session's rerun: its own rows, no new run
    assert len(counted) == 3
    other = submit(open_link(PAGE, link))  # another student, the same setting, within the minute: the same run
    assert len(counted) == 3 and " ".join(w.value for w in other.warning) == warned
    submit(first)  # the first student asks for a new run: the server did not keep the one it saw
    assert len(counted) == (3 if kept else 6)
    monkeypatch.setattr(tables, "SHARE_UNKEPT_S", 0.0)  # the minute is over: the next student measures afresh
    submit(open_link(PAGE, link))
    assert len(counted) == (3 if kept else 9)
