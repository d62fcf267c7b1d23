from app_helpers import assert_clean, metric, open_link

from explorer.tables.multihead import D_MODELS, divisors

PAGE = "views/multihead.py"


def maps_caption(at) -> str:
    return next(c.value for c in at.caption if "keys per head" in c.value)


def sweep(at):
    """The parameter sweep table: the page's only st.dataframe."""
    return at.dataframe[0].value


def test_renders_at_defaults_with_formula_and_charts(open_page):
    at = open_page(PAGE)
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 3  # head maps, concat, parameter bars
    assert any(r"\mathrm{head}_i" in latex.value for latex in at.latex)
    assert at.expander
    assert metric(at, "d_k = d_model / h") == "4"  # d_model 16, 4 heads
    assert maps_caption(at).startswith("10 queries × 10 keys per head")


def test_heads_offered_are_exactly_the_divisors(open_page):
    at = open_page(PAGE)
    for d_model in D_MODELS:
        at.select_slider(key="mh_d_model").set_value(d_model).run()
        assert_clean(at)
        assert at.radio(key="mh_heads").options == [str(h) for h in divisors(d_model)]


def test_d_k_follows_d_model_and_h_while_the_parameter_count_stays(open_page):
    at = open_page(PAGE)
    for d_model, h in [(24, 3), (24, 8), (64, 16), (8, 1), (48, 48)]:
        at.select_slider(key="mh_d_model").set_value(d_model).run()
        at.radio(key="mh_heads").set_value(h).run()
        assert_clean(at)
        assert metric(at, "d_k = d_model / h") == str(d_model // h)
        table = sweep(at)
        assert list(table["heads"]) == list(divisors(d_model))
        assert set(table["parameters"]) == {4 * (d_model**2 + d_model)}  # one count for every h
    assert "the first 16 of 48 heads shown" in maps_caption(at)


def test_a_choice_of_h_survives_a_d_model_that_it_divides(open_page):
    at = open_page(PAGE)
    at.radio(key="mh_heads").set_value(8).run()
    at.select_slider(key="mh_d_model").set_value(24).run()  # 8 divides 24: kept
    assert at.radio(key="mh_heads").value == 8
    at.radio(key="mh_heads").set_value(6).run()
    at.select_slider(key="mh_d_model").set_value(16).run()  # 6 does not divide 16: back to the default 4
    assert_clean(at)
    assert at.radio(key="mh_heads").value == 4


def test_reference_models_d_k_is_computed(open_page):
    at = open_page(PAGE)
    ref = at.table[-1].value
    assert list(ref.loc["d_k = d_model / h"]) == ["64", "128"]
    assert list(ref.loc["attention parameters per layer"]) == [f"{4 * (768**2 + 768):,}", f"{4 * (12288**2 + 12288):,}"]


def test_cross_attention_takes_keys_and_values_from_the_second_sentence(open_page):
    at = open_page(PAGE)
    at.segmented_control(key="mh_mode").set_value("cross").run()
    at.text_input(key="mh_source").set_value("a dog").run()
    assert_clean(at)
    assert maps_caption(at).startswith("10 queries × 2 keys per head")
    shapes = at.table[0].value.set_index("tensor")["shape"]
    assert shapes["K = Y W_k"] == "(2, 16)"
    assert shapes["softmax(Q_i K_iᵀ/√d_k)"] == "4 × (10, 2)"
    at.text_input(key="mh_sentence").set_value("le chat dort").run()
    assert maps_caption(at).startswith("3 queries × 2 keys per head")
    at.segmented_control(key="mh_mode").set_value("self").run()
    assert maps_caption(at).startswith("3 queries × 3 keys per head")


def test_bad_text_warns_and_the_rest_of_the_page_works(open_page):
    at = open_page(PAGE)
    for text, reason in [
        ("", "empty"),
        (" ".join(["w"] * 13), "13 words; at most 12"),
        ("<b>hi</b> there", "word 1 of the sentence is not a plain word"),
    ]:
        at.text_input(key="mh_sentence").set_value(text).run()
        assert_clean(at)
        assert any(reason in w.value for w in at.warning), [w.value for w in at.warning]
        assert len(at.get("vega_lite_chart")) == 1  # the parameter bars do not need the sentence
    at.segmented_control(key="mh_mode").set_value("cross").run()
    at.text_input(key="mh_sentence").set_value("fine words").run()
    at.text_input(key="mh_source").set_value("x" * 17).run()
    assert any("word 1 of the second sentence is longer than 16" in w.value for w in at.warning)


def test_the_seed_redraws_embeddings_and_weights(open_page):
    at = open_page(PAGE)
    before = at.get("vega_lite_chart")[0].proto.datasets[0].data.data
    at.session_state["seed"] = 7  # the sidebar's seed (AppTest drops sidebar nodes after switch_page)
    at.run()
    assert_clean(at)
    assert at.get("vega_lite_chart")[0].proto.datasets[0].data.data != before


def test_sentences_mode_and_heads_travel_in_the_link(open_page):
    at = open_page(PAGE)
    at.select_slider(key="mh_d_model").set_value(24).run()
    at.radio(key="mh_heads").set_value(6).run()
    at.segmented_control(key="mh_mode").set_value("cross").run()
    at.text_input(key="mh_sentence").set_value("a dog runs home fast").run()
    at.text_input(key="mh_source").set_value("un chien court").run()
    assert_clean(at)
    params = dict(at.query_params)
    assert params["mh_sentence"] == "a dog runs home fast" and params["mh_source"] == "un chien court"
    again = open_link(PAGE, params)
    assert_clean(again)
    assert again.text_input(key="mh_sentence").value == "a dog runs home fast"
    assert again.text_input(key="mh_source").value == "un chien court"
    assert again.segmented_control(key="mh_mode").value == "cross"
    assert (again.select_slider(key="mh_d_model").value, again.radio(key="mh_heads").value) == (24, 6)
    assert maps_caption(again).startswith("5 queries × 3 keys per head")
    assert again.table[0].value.equals(at.table[0].value)


def test_a_link_with_heads_that_do_not_divide_d_model_falls_back_to_the_default():
    at = open_link(PAGE, {"mh_d_model": "24", "mh_heads": "5"})
    assert_clean(at)
    assert at.radio(key="mh_heads").value == 4
    assert at.query_params["mh_heads"] == "4"  # the address now shows what the page shows
    assert any("mh_heads" in toast.value for toast in at.toast)


def test_one_head_is_not_said_to_draw_different_maps(open_page):
    """Audit (issue 25): 'the heads still draw different maps' showed beside h = 1, which draws one map."""
    at = open_page(PAGE)
    at.radio(key="mh_heads").set_value(1).run()
    assert_clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "the heads still draw different maps" not in text and "With one head there is one map" in text
    at.radio(key="mh_heads").set_value(2).run()
    text = " ".join(m.value for m in at.markdown)
    assert "the heads still draw different maps" in text and "With one head" not in text


def test_the_output_is_written_one_way_in_the_table_the_formula_and_the_caption():
    """Audit (issue 25): the shapes table wrote "output = Concat W_o", the caption beside it "Concat · W_oᵀ + b"."""
    for lang in ("en", "zh"):
        at = open_link(PAGE, {"lang": lang})
        assert_clean(at)
        mix = [row for row in at.table[0].value.iloc[:, 0] if str(row).startswith("output")]
        assert mix == ["output = Concat W_o"]
        caption = next(c.value for c in at.caption if "Concat" in c.value)
        assert "Concat W_o + b_o" in caption and "W_oᵀ" not in caption, caption
        assert any(r"\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W^O" in f.value for f in at.latex)
