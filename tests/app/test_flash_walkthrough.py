import math
import random

from app_helpers import assert_clean, metric, open_link

PAGE = "views/flash_walkthrough.py"
END = "max |tiled − naive|"


def labels(at) -> list[str]:
    return [m.label for m in at.metric]


def test_renders_at_defaults_with_formula_charts_and_counts(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 6  # grid, logits, partial output, row state, error by step, HBM
    assert any(r"\alpha" in latex.value for latex in at.latex) and any("n^2" in latex.value for latex in at.latex)
    assert at.expander  # the predict-first answer is folded away
    # causal, n = 32, 8 x 8 tiles: 4 query blocks need 1, 2, 3, 4 key tiles; 16 - 10 = 6 are skipped
    assert metric(at, "tiles skipped by causal") == "6 of 16"
    assert metric(at, "tiles this block computes") == "3"  # query block 2 (rows 16..23) needs keys 0..23
    assert END not in labels(at)  # step 0 is not the end yet


def test_last_step_matches_naive_attention(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_step").set_value(3).run()
    assert_clean(at)
    # float64 end to end: any slip in the rescaling would show as an O(1) difference, not 1e-6
    assert float(metric(at, END)) < 1e-6
    assert float(metric(at, "all rows (tiled_attention)")) < 1e-6
    assert any("wholly above the diagonal" in i.value for i in at.info)  # tile 3 is skipped by causal


def test_skipped_count_follows_the_geometry(open_page):
    at = open_page(PAGE)
    at.select_slider(key="flash_block_k").set_value(4).run()
    # B_q = 8, B_k = 4: query block b needs ceil(8 (b + 1) / 4) = 2, 4, 6, 8 of the 8 key tiles
    assert metric(at, "tiles skipped by causal") == f"{4 * 8 - (2 + 4 + 6 + 8)} of 32"
    at.select_slider(key="flash_block_q").set_value(16).run()
    assert metric(at, "tiles skipped by causal") == f"{2 * 8 - (4 + 8)} of 16"
    at.toggle(key="flash_causal").set_value(False).run()
    assert_clean(at)
    assert metric(at, "tiles skipped by causal") == "0 of 16"
    assert metric(at, "tiles this block computes") == "8"


def test_play_walks_to_the_last_tile(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_query_block").set_value(3).run()
    at.button(key="flash_play").click().run()
    assert_clean(at)
    assert at.slider(key="flash_step").value == 3
    assert float(metric(at, END)) < 1e-6
    rows = at.dataframe[0].value
    assert rows["query"].tolist() == list(range(24, 32))  # the last query block's rows


def test_every_walk_control_changes_and_the_page_follows(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_n").set_value(40).run()
    at.select_slider(key="flash_d").set_value(4).run()
    at.slider(key="flash_query_block").set_value(4).run()  # rows 32..39 of n = 40
    at.slider(key="flash_step").set_value(4).run()  # the ragged last tile, keys 32..39
    assert_clean(at)
    assert float(metric(at, END)) < 1e-6
    assert any("keys 32..39" in t for t in (c.spec for c in at.get("vega_lite_chart")))
    before = at.dataframe[0].value
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert not before.equals(at.dataframe[0].value)


def test_tiny_grids_and_shrinking_ranges_stay_friendly(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_step").set_value(3).run()
    at.slider(key="flash_n").set_value(4).run()  # one tile only: the step slider gives way to a caption
    assert_clean(at)
    assert not at.warning
    assert float(metric(at, END)) < 1e-6  # the only tile is the last one
    assert at.button(key="flash_play").disabled


def test_hbm_ratio_follows_its_controls(open_page):
    at = open_page(PAGE)
    at.toggle(key="flash_causal").set_value(False).run()
    at.select_slider(key="hbm_d").set_value(32).run()
    at.select_slider(key="hbm_block_q").set_value(256).run()
    at.select_slider(key="hbm_block_k").set_value(128).run()
    at.select_slider(key="hbm_n").set_value(16384).run()
    assert_clean(at)
    n, d, bq = 16384, 32, 256
    naive = 4 * n * n + 4 * n * d  # reads 3nd + 2n^2, writes 2n^2 + nd
    tiled = 2 * n * d + 2 * n * d * math.ceil(n / bq)  # reads nd + 2nd ceil(n/B_q), writes nd
    assert metric(at, "naive / tiled") == f"{naive / tiled:.1f}×"
    assert metric(at, "naive") == f"{naive / 1e9:.3g} G"  # 1.08 G: three digits and a unit fit the column
    bk = 128  # B_k leaves this traffic alone but sizes the on-chip tiles: Q, acc (B_q d each), K, V, S, m, l
    sram_kb = 2 * (2 * bq * d + 2 * bk * d + bq * bk + 2 * bq) / 1024  # fp16
    assert any(f"= {sram_kb:.0f} KB on chip" in c.value for c in at.caption)


def test_a_link_opens_at_the_same_tile_step(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_n").set_value(40).run()
    at.slider(key="flash_query_block").set_value(4).run()
    at.slider(key="flash_step").set_value(2).run()
    assert at.query_params["flash_step"] == "2"
    again = open_link(PAGE, dict(at.query_params))
    assert_clean(again)
    assert (again.slider(key="flash_query_block").value, again.slider(key="flash_step").value) == (4, 2)
    assert again.dataframe[0].value.equals(at.dataframe[0].value)  # the row state after tile 2 of block 4
    assert END not in labels(again)


def test_play_leaves_the_last_tile_in_the_link(open_page):
    at = open_page(PAGE)
    at.button(key="flash_play").click().run()
    assert at.query_params["flash_step"] == "3"
    assert "flash_play" not in at.query_params  # the button is an action, not a state
    again = open_link(PAGE, dict(at.query_params))
    assert_clean(again)
    assert again.slider(key="flash_step").value == 3
    assert metric(again, END) == metric(at, END)


def test_a_growing_range_keeps_the_step_and_a_shrinking_one_pulls_it_back(open_page):
    at = open_page(PAGE)
    at.slider(key="flash_step").set_value(3).run()
    at.slider(key="flash_n").set_value(64).run()  # 8 key tiles: the walk stays at tile 3
    assert (at.slider(key="flash_step").value, at.slider(key="flash_query_block").value) == (3, 2)
    at.slider(key="flash_n").set_value(32).run()
    at.select_slider(key="flash_block_k").set_value(16).run()  # 2 key tiles: step 3 becomes the last, 1
    assert_clean(at)
    assert at.slider(key="flash_step").value == 1
    assert at.query_params["flash_step"] == "1"
    assert float(metric(at, END)) < 1e-6


def test_a_step_outside_the_grid_in_a_link_is_ignored():
    at = open_link(PAGE, {"flash_step": "9"})  # 4 key tiles at the defaults: 0..3
    assert_clean(at)
    assert at.slider(key="flash_step").value == 1
    assert any("flash_step" in toast.value for toast in at.toast)


def test_the_traffic_text_states_the_limit_the_numbers_tend_to(open_page):
    """Issue 25: the page showed 7.4× beside 'about 2B_q/d' = 4 with causal on (the default); the caption now names
    the limit of the mode in use, 4B_q/d with causal, and quotes the metric's ratio; the formula is the one counted."""
    rng = random.Random(25)
    at = open_page(PAGE)
    settings = [(True, 64, 128, 4096)] + [
        (
            rng.random() < 0.5,
            rng.choice([16, 32, 64, 128, 256]),
            rng.choice([16, 32, 64, 128, 256]),
            2 ** rng.randrange(8, 17),
        )
        for _ in range(3)
    ]
    for causal, d, bq, n in settings:
        at.toggle(key="flash_causal").set_value(causal)
        at.select_slider(key="hbm_d").set_value(d)
        at.select_slider(key="hbm_block_q").set_value(bq)
        at.select_slider(key="hbm_n").set_value(n).run()
        assert_clean(at)
        assert all(len(metric(at, name)) <= 7 for name in ("naive", "tiled", "naive / tiled"))  # fits at 1366 px
        (caption,) = [c.value for c in at.caption if "log-log axes" in c.value]
        limit = (4 if causal else 2) * bq / d
        assert (
            f"tends to {'4' if causal else '2'}B_q/d = {limit:g} as n grows ({metric(at, 'naive / tiled')} at"
            in caption
        )
        latex = " ".join(x.value for x in at.latex)
        assert ("\\sum_b k_b" in latex) == causal and ("\\lceil n/B_q\\rceil" in latex) != causal
