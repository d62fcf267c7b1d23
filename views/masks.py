import re

import pandas as pd
import streamlit as st

from explorer.charts import masks as charts
from explorer.tables import masks as tables
from explorer.ui import state
from explorer.ui.claims import notes_claim
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, section, seed

GRID = "mask_grid"  # the custom grid in the URL: one row of 0/1 per query, rows joined by "-" (1 = may attend)

part_names = td("masks.parts")
cells_text = td("masks.charts.cells")


def method_names() -> dict[str, str]:
    """The recipes' keys in the fill comparison -> their names shown to the viewer."""
    plain = {tables.plain_method(f): t("masks.methods.plain", fill=f) for f in tables.FILLS}
    return plain | {tables.LIBRARY: t("masks.methods.library")}


header(
    t("masks.title"),
    t("masks.lede"),
    sections=(
        "masks.sections.mask",
        "masks.sections.fill",
        "masks.sections.gradient",
        "masks.sections.renormalise",
        "masks.sections.notes_masks",
    ),
)
predict_first(t("masks.question"), t("masks.answer"))


def grid_text(grid: tables.Grid) -> str:
    return "-".join("".join("1" if cell else "0" for cell in row) for row in grid)


def grid_parser(n: int):
    """Accept exactly n rows of n digits 0/1 joined by "-" (at most 12 x 12 + 11 = 155 characters)."""
    shape = re.compile(rf"[01]{{{n}}}(?:-[01]{{{n}}}){{{n - 1}}}")

    def parse(raw: str) -> str:
        if len(raw) != n * (n + 1) - 1 or not shape.fullmatch(raw):
            raise state.Refused("choice", options=t("masks.grid.url_format", n=n))
        return raw

    return parse


def custom_grid(n: int) -> tables.Grid:
    """The hand-ticked part: an n x n grid of checkboxes, all ticked to start (no effect under the AND).

    The grid lives in the URL (GRID) and in the session: the editor starts from it, the user's ticks apply on
    top, and the result becomes the next start (ticks set a cell, so applying them twice changes nothing).
    """
    text = state.value(GRID, grid_parser(n), "")
    if len(text) != n * (n + 1) - 1:  # none yet, or kept from another n
        text = "-".join(["1" * n] * n)
    start = [[c == "1" for c in row] for row in text.split("-")]
    if GRID in state.hidden():  # the teacher fixed the grid in the link: use it without drawing the editor
        edited = start
    else:
        columns = [f"k{j}" for j in range(n)]
        frame = pd.DataFrame(start, index=[f"q{i}" for i in range(n)], columns=columns)
        config = {c: st.column_config.CheckboxColumn(c, width=36) for c in columns}
        with st.expander(t("masks.grid.expander"), expanded=True):
            shown = st.data_editor(frame, column_config=config, num_rows="fixed", key=f"custom_grid_{n}")
        edited = shown.to_numpy().tolist()
    grid = tables.parse_grid(edited, n)
    state.keep(GRID, grid_text(grid), t("masks.grid.label"))  # the next run, or a later visit, starts here
    return grid


with st.container(border=True):
    c1, c2 = st.columns([1, 3])
    n = state.slider(t("masks.controls.n"), 2, tables.MAX_N, 6, 1, key="mask_n", where=c1)
    chosen = state.pills(
        t("masks.controls.parts"),
        tables.PARTS,
        ["padding", "sliding window"],
        key="mask_parts",
        multi=True,
        where=c2,
        format_func=part_names.get,
    )
    parts = tuple(p for p in tables.PARTS if p in (chosen or []))
    c3, c4, c5, c6 = st.columns(4)
    lengths_text = state.text_input(
        t("masks.controls.lengths"),
        "6, 2",
        key="mask_lengths",
        max_chars=tables.MAX_LENGTHS_CHARS,
        where=c3,
        disabled="padding" not in parts,
        help=t("masks.controls.lengths_help", n=tables.MAX_BATCH),
    )
    window = state.slider(
        t("masks.controls.window"),
        1,
        tables.MAX_N,
        3,
        1,
        key="mask_window",
        where=c5,
        disabled="sliding window" not in parts,
    )
    block = state.slider(
        t("masks.controls.block"),
        1,
        tables.MAX_N,
        2,
        1,
        key="mask_block",
        where=c6,
        disabled="block causal" not in parts,
    )
    lengths = (n,)
    if "padding" in parts:
        try:
            lengths = tables.parse_lengths(lengths_text, n)
        except ValueError as err:
            c3.warning(t("masks.lengths_left_out", err=err), icon=":material/error:")
            parts = tuple(p for p in parts if p != "padding")
    sequences = {b: t("masks.controls.sequence_option", b=b, length=length) for b, length in enumerate(lengths)}
    sequence = state.selectbox(
        t("masks.controls.sequence"),
        list(sequences),
        len(lengths) - 1,
        key="mask_sequence",
        where=c4,
        format_func=sequences.get,
        disabled=len(lengths) == 1,
    )
    custom = None
    if "custom" in parts:
        try:
            custom = custom_grid(n)
        except ValueError as err:
            st.warning(t("masks.grid.left_out", err=err), icon=":material/error:")
            parts = tuple(p for p in parts if p != "custom")

spec = tables.MaskSpec(n, parts, lengths, window, block, custom, sequence=min(sequence or 0, len(lengths) - 1))

st.subheader(t("masks.sections.mask"), anchor="mask")
left, right = st.columns([3, 2])
with right:
    formula(
        r"\begin{gathered}\tilde s_{ij}=\begin{cases}s_{ij} & M_{ij}=1\\ -\infty & M_{ij}=0\end{cases}\\"
        r"w_{ij}=\frac{e^{\tilde s_{ij}}}{\sum_{l} e^{\tilde s_{il}}}\end{gathered}",
        t("masks.captions.and"),
    )
    notice(tl("masks.notice.mask"))
with left, friendly_errors(t("masks.errors.mask")):
    cells, stats = tables.mask_parts(spec)
    text = cells_text | td("masks.charts.parts")
    order = [*spec.parts, "combined"]
    chart(charts.mask_parts, cells, order, text, part_names, name="mask_parts", data=cells, width="content")
    m1, m2, m3 = st.columns(3)
    m1.metric(t("masks.metrics.hidden"), f"{stats['hidden_share']:.0%}", help=t("masks.metrics.hidden_help"))
    m2.metric(t("masks.metrics.padding"), f"{stats['padding_share']:.0%}", help=t("masks.metrics.padding_help"))
    m3.metric(
        t("masks.metrics.fully_masked"),
        ", ".join(map(str, stats["fully_masked"])) or t("masks.metrics.none"),
        help=t("masks.metrics.fully_masked_help", b=spec.sequence),  # the shown sequence's; the first two: the batch's
    )

with friendly_errors(t("masks.errors.scores")):
    grid, rows = tables.scores_and_weights(spec, seed())
    score_csv, weight_csv = tables.score_columns(spec, seed())
    scores_text, weights_text = cells_text | td("masks.charts.scores"), cells_text | td("masks.charts.weights")
    s1, s2 = st.columns(2)
    chart(
        charts.cell_heatmap,
        grid,
        "score",
        scores_text,
        scheme="blueorange",
        diverging=True,
        name="scores",
        data=score_csv,
        where=s1,
        width="content",
    )
    chart(
        charts.cell_heatmap,
        grid,
        "weight",
        weights_text,
        row_sums=rows,
        name="weights",
        data=weight_csv,
        where=s2,
        width="content",
    )
    st.caption(t("masks.scores_caption", d_k=tables.D_K, sequence=spec.sequence))


def no_full_row_hint(spec: tables.MaskSpec) -> None:
    """The shown sequence has no fully masked row: point to a sequence that has one, else say how one arises."""
    by_sequence = tables.mask_parts(spec)[1]["fully_masked_by_sequence"]
    other = next((b for b, rows in enumerate(by_sequence) if rows), None)
    if other is None:
        st.info(t("masks.no_fully_masked_row"), icon=":material/lightbulb:")
    else:
        rows = ", ".join(map(str, by_sequence[other]))
        st.info(t("masks.other_sequence", shown=spec.sequence, b=other, rows=rows), icon=":material/lightbulb:")


@section
def fill_and_gradient(spec: tables.MaskSpec) -> None:
    """The fill value and gradient sections: their own two controls rerun only this part of the page."""
    st.subheader(t("masks.sections.fill"), anchor="fill")
    f1, f2, _ = st.columns([2, 1, 1])
    fill = state.segmented_control(t("masks.controls.fill"), tables.FILLS, "-inf", key="mask_fill", where=f1)
    fill = fill or "-inf"
    dtype = state.selectbox(t("masks.controls.dtype"), tuple(tables.DTYPES), "float32", key="mask_dtype", where=f2)
    method = tables.plain_method(fill)
    names = method_names()
    left, right = st.columns([3, 2])
    with right:
        formula(r"w_{ij}=\frac{e^{c}}{n\,e^{c}}=\frac{1}{n}", t("masks.captions.finite"))
        formula(r"w_{ij}=\frac{e^{-\infty}}{\sum_l e^{-\infty}}=\frac{0}{0}=\text{NaN}", t("masks.captions.minus_inf"))
        formula(
            r"\begin{gathered}w_{ij}=\frac{e^{\tilde s_{ij}-m_i}}{Z_i}\\ Z_i=\begin{cases}\sum_l e^{\tilde s_{il}-m_i}"
            r"&\text{if }>0\\1&\text{if }=0\end{cases}\end{gathered}",
            t("masks.captions.library"),
        )
        st.markdown(t("masks.why"))
    with left, friendly_errors(t("masks.errors.fill")):
        by_method, full = tables.fill_by_method(spec, dtype, seed()), bool(tables.mask_parts(spec)[1]["fully_masked"])

        def fully_masked_weight(name: str) -> str:
            """What the metric prints for one recipe: refused, no such row, NaN, 0 or the uniform 1/n."""
            row = by_method.loc[name]
            if row["error"]:
                return t("masks.metrics.refused")
            v = row["fully masked row weight"]
            if not full:
                return t("masks.metrics.no_row")
            return "NaN" if pd.isna(v) else ("0" if v == 0 else f"{v:.4g} ≈ 1/{round(1 / v)}")

        w1, w2 = st.columns(2)
        w1.metric(t("masks.metrics.plain_row"), fully_masked_weight(method))
        w2.metric(t("masks.metrics.library_row"), fully_masked_weight(tables.LIBRARY))
        if by_method.loc[method, "error"]:
            st.warning(
                t("masks.fill_fails", fill=fill, dtype=dtype, error=by_method.loc[method, "error"]),
                icon=":material/error:",
            )
        else:
            text = cells_text | td("masks.charts.fill", method=names[method], dtype=dtype)
            cells, rows = tables.fill_of_method(spec, dtype, seed(), method)
            chart(
                charts.cell_heatmap,
                cells,
                "weight",
                text,
                row_sums=rows,
                name="fill_weights",
                data=cells,
                width="content",
            )
        if not full:
            no_full_row_hint(spec)

    with friendly_errors(t("masks.errors.summary")):
        words = {
            "none": t("masks.metrics.none"),
            "library_fill": t("masks.summary.library_fill"),
            "facts": td("masks.facts"),
            "fact": t("masks.summary.fact"),
        }
        st.table(tables.summary_table(spec, dtype, seed(), words, names))
        overflow, largest = tables.fill_overflow(dtype)
        why = t("masks.summary.overflow", fills=", ".join(overflow), dtype=dtype, max=largest) if overflow else ""
        st.caption(t("masks.summary.caption", dtype=dtype, sequence=spec.sequence) + why)

    st.subheader(t("masks.sections.gradient"), anchor="gradient")
    left, right = st.columns([3, 2])
    with right:
        formula(
            r"\frac{\partial L}{\partial z_{ij}}=w_{ij}\Big(u_{ij}-\sum_l w_{il}\,u_{il}\Big),"
            r"\qquad u=\frac{\partial L}{\partial w}"
        )
        st.markdown(t("masks.gradient_text"))
    with left, friendly_errors(t("masks.errors.gradient")):
        library = tables.fill_by_method(spec, dtype, seed()).loc[tables.LIBRARY]
        hidden_max, visible_max = library["max |grad| hidden logits"], library["max |grad| visible logits"]
        g1, g2 = st.columns(2)
        g1.metric(
            t("masks.metrics.hidden_grad"), t("masks.metrics.no_hidden") if pd.isna(hidden_max) else f"{hidden_max:g}"
        )
        g2.metric(
            t("masks.metrics.visible_grad"),
            t("masks.metrics.no_visible") if pd.isna(visible_max) else f"{visible_max:.3g}",
        )
        text = cells_text | td("masks.charts.gradient", dtype=dtype)
        cells, _ = tables.fill_of_method(spec, dtype, seed(), tables.LIBRARY)
        chart(
            charts.cell_heatmap,
            cells,
            "grad",
            text,
            scheme="purpleorange",
            diverging=True,
            name="gradient",
            data=cells,
            width="content",
        )


fill_and_gradient(spec)


@section
def renormalise_part() -> None:
    """Padding renormalises the kept weights: its own number of real tokens."""
    st.subheader(t("masks.sections.renormalise"), anchor="renormalise")
    left, right = st.columns([3, 2])
    with right:
        formula(
            r"\begin{gathered}w^{\text{masked}}_j=\frac{e^{s_j}}{\sum_{l\ \text{real}}e^{s_l}}"
            r"=\frac{w_j}{\sum_{l\ \text{real}}w_l}\\ w=\mathrm{softmax}(s)\end{gathered}",
            t("masks.renormalise.formula_caption"),
        )
        notes_claim("renormalise")
        notes_claim("softmax_padding")
    with left, friendly_errors(t("masks.errors.renormalise")):
        real = state.slider(
            t("masks.controls.real"),
            1,
            len(tables.NOTES_LOGITS),
            3,
            1,
            key="mask_real",
            help=t("masks.controls.real_help"),
        )
        rows, renorm = tables.padding_renormalisation(real)
        chart(charts.renormalisation_bars, rows, td("masks.charts.renormalise"), name="renormalisation", data=rows)
        m1, m2, m3 = st.columns(3)
        m1.metric(t("masks.renormalise.kept"), f"{renorm['kept']:.4f}", help=t("masks.renormalise.kept_help"))
        m2.metric(t("masks.renormalise.factor"), f"× {renorm['factor']:.4f}")
        gap = "0" if renorm["gap"] == 0 else f"{renorm['gap']:.1e}"  # an exact 0, not a rounded small number
        m3.metric(t("masks.renormalise.gap"), gap, help=t("masks.renormalise.gap_help"))
        columns = td("masks.renormalise.columns")
        st.dataframe(
            tables.renormalised_rows(real, columns["yes"], columns["no"]),
            hide_index=True,
            column_config={
                name: st.column_config.NumberColumn(columns[name], format="%.4f")
                for name in ("logit", "before", "after", "rescaled", "by_sum")
            }
            | {"token": columns["token"], "real": columns["real"]},
        )


renormalise_part()


@section
def notes_masks_part() -> None:
    """The notes own hierarchical and sliding-window masks against ours: their own n and window."""
    st.subheader(t("masks.sections.notes_masks"), anchor="notes_masks")
    left, right = st.columns([3, 2])
    with right:
        formula(
            r"\begin{aligned}&\text{notes:}\ M\leftarrow\mathrm{tril}(1);\\&\phantom{\text{notes:}}\ "
            r"M[i{:}i{+}L,\ i{:}i{+}L]\leftarrow 1\\"
            r"&\text{attn\_core:}\ M_{ij}=[\,j\le i\,]\\&\phantom{\text{notes:}}\ \wedge\exists\ell:\ "
            r"\ell_l\mid(i-j)<\ell_{l+1}\end{aligned}",
            t("masks.notes_masks.formula_caption"),
        )
        notes_claim("hierarchical")
        notes_claim("sliding_window")
    with left, friendly_errors(t("masks.errors.notes_masks")):
        c1, c2 = st.columns(2)
        notes_n = state.slider(t("masks.controls.notes_n"), 2, tables.MAX_NOTES_N, 16, 1, key="mask_notes_n", where=c1)
        notes_window = state.slider(t("masks.controls.notes_window"), 1, 8, 3, 1, key="mask_notes_window", where=c2)
        cells, _ = tables.notes_masks(notes_n, min(notes_window, notes_n))
        names = td("masks.notes_masks.parts")
        text = cells_text | td("masks.charts.parts") | td("masks.charts.notes_masks")
        order = list(tables.NOTES_MASKS)
        chart(charts.mask_parts, cells, order, text, names, name="notes_masks", data=cells, width="content")
        columns = td("masks.notes_masks.columns")
        st.dataframe(
            tables.notes_counts(notes_n, min(notes_window, notes_n), names, columns["yes"], columns["no"]),
            hide_index=True,
            column_config={name: columns[name] for name in ("part", "future", "widest", "causal")},
        )
        st.caption(t("masks.notes_masks.caption", levels=", ".join(map(str, tables.NOTES_LEVELS))))


notes_masks_part()
