import math

import streamlit as st

from explorer import notes
from explorer.charts import worked_example as charts
from explorer.tables import worked_example as tables
from explorer.ui import state
from explorer.ui.claims import notes_about, readable_places
from explorer.ui.draw import chart
from explorer.ui.i18n import t, td, tl
from explorer.ui.page import formula, friendly_errors, header, notice, predict_first, seed

LIMIT = int(tables.MAX_ABS_ENTRY)
ATTENTION = r"A=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)"
ATTENTION_UNSCALED = r"A=\mathrm{softmax}(QK^\top)"


def matrix_parser(shape: tuple[int, int]):
    """Strict parsing of a matrix in the URL ("1,0,1;0,2,1"), to its canonical text; anything else is refused."""

    def parse(raw: str) -> str:
        try:
            return tables.matrix_text(tables.matrix_from_text(raw, shape))
        except ValueError:
            raise state.Refused("number", lo=-LIMIT, hi=LIMIT) from None

    return parse


header(
    t("worked_example.title"),
    t("worked_example.lede"),
    sections=("worked_example.backward.heading", "worked_example.check"),
)
predict_first(t("worked_example.question"), t("worked_example.answer"))

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([2.2, 1.2, 1.4, 0.9], vertical_alignment="center")
    example_key = state.radio(
        t("worked_example.controls.example"),
        list(tables.EXAMPLES),
        "two_tokens",
        key="we_example",
        where=c1,
        format_func=td("worked_example.examples").get,
        horizontal=True,
    )
    example = tables.EXAMPLES[example_key]
    n, d_k, d_v = len(example.q), len(example.q[0]), len(example.v[0])
    token = state.selectbox(
        t("worked_example.controls.token"),
        list(range(1, n + 1)),
        example.focus,
        key=f"we_token_{example_key}",
        where=c2,
        help=t("worked_example.controls.token_help"),
    )
    scaled = state.toggle(
        t("worked_example.controls.scaled"),
        True,
        key="we_scaled",
        where=c3,
        help=t("worked_example.controls.scaled_help"),
    )
    matrices = {"Q": (example.q, d_k), "K": (example.k, d_k), "V": (example.v, d_v)}
    url_keys = {name: f"we_{name.lower()}_{example_key}" for name in matrices}  # the URL: we_q_two_tokens=1,0,1;0,2,1
    if c4.button(
        t("worked_example.controls.reset"),
        key="we_reset",
        icon=":material/restart_alt:",
        help=t("worked_example.controls.reset_help"),
    ):
        for name, (matrix, _) in matrices.items():
            st.session_state[url_keys[name]] = tables.matrix_text(matrix)
        st.session_state["we_version"] = st.session_state.get("we_version", 0) + 1  # new keys: fresh editors

version = st.session_state.get("we_version", 0)
st.markdown(t("worked_example.inputs", n=n))
shown, inputs = {}, {}
for column, (name, (matrix, width)) in zip(st.columns(3), matrices.items(), strict=True):
    key = url_keys[name]
    text = state.value(key, matrix_parser((n, width)), tables.matrix_text(matrix))  # valid: parsed or kept
    shown[name] = tables.matrix_from_text(text, (n, width))
    column.caption(f"{name}  ({n} × {width})")
    frame = tables.as_frame(shown[name], tables.labels(name.lower(), n), tables.labels("d", width))
    if key in state.hidden():  # the teacher's link fixes this matrix: show it, not editable
        column.dataframe(frame, width="stretch")
        inputs[name] = frame
    else:  # a keyed editor keeps its edits while its data follows them (the edits are absolute values)
        editor = f"we_editor_{name.lower()}_{example_key}_{version}"
        inputs[name] = column.data_editor(frame, num_rows="fixed", key=editor, width="stretch")

steps = None  # stays None while an input is invalid; the warning then says which cell to fix
with friendly_errors(t("worked_example.sections.inputs")):
    q, k, v = (tables.parse_matrix(name, inputs[name], (n, w)) for name, (_, w) in matrices.items())
    shown.update(Q=q, K=k, V=v)
    steps = tables.attention_steps(q, k, v, scaled)
for name, key in url_keys.items():  # the last valid matrices: in the URL, and kept when the page is left
    state.keep(key, tables.matrix_text(shown[name]), t("worked_example.controls.matrix", name=name))


if steps is not None:
    forward = tables.forward_text(q, k, v, scaled, token)
    left, right = st.columns([3, 2])
    with left:
        st.markdown(t("worked_example.step1"))
        st.latex(r"S = QK^\top = " + forward["scores"])
        st.latex(forward["dot"])
        st.markdown(t("worked_example.step2", root=math.sqrt(d_k)) if scaled else t("worked_example.step2_off"))
        st.latex((rf"S' = \frac{{S}}{{\sqrt{{{d_k}}}}} = " if scaled else "S' = S = ") + forward["scaled"])
        st.markdown(t("worked_example.step3"))
        st.latex(r"A = \mathrm{softmax}(S') = " + forward["weights"])
        st.latex(forward["softmax"])
        st.caption(t("worked_example.row_sums", sums=forward["row_sums"]))
        st.markdown(t("worked_example.step4"))
        st.latex(r"Z = AV = " + forward["output"])
        st.latex(forward["output_expansion"])
    with right:
        formula(ATTENTION if scaled else ATTENTION_UNSCALED)  # the formula of what was computed
        formula(r"Z=\mathrm{Attention}(Q,K,V)=AV")
        with friendly_errors(t("worked_example.sections.charts")):
            cells, parts = forward["cells"], forward["parts"]
            text = td("worked_example.charts.weights")
            chart(charts.weights_heatmap, cells, text, name="weights", data=cells)
            text = td("worked_example.charts.pieces", token=token)
            chart(charts.contribution_bars, parts, text, name="pieces", data=parts)
        first, *rest = tl("worked_example.notice")  # the scaling point says what the toggle would do from here
        notice([first, t(f"worked_example.scaling_{'off' if scaled else 'on'}"), *rest])

if steps is not None:
    st.subheader(t("worked_example.backward.heading"), anchor="heading")
    with friendly_errors(t("worked_example.sections.backward")):
        back = tables.backward_text(q, k, v, scaled, token)
        c = rf"\tfrac{{1}}{{\sqrt{{{d_k}}}}}" if scaled else "1"
        left, right = st.columns([3, 2])
        with right:
            formula(
                r"\begin{aligned}\frac{\partial L}{\partial V}&=A^\top\frac{\partial L}{\partial Z}"
                r"\qquad\frac{\partial L}{\partial A}=\frac{\partial L}{\partial Z}V^\top\\"
                r"\frac{\partial L}{\partial S'}&=A\odot\Big(\frac{\partial L}{\partial A}-"
                r"\mathrm{rowsum}\big(\tfrac{\partial L}{\partial A}\odot A\big)\Big)\\"
                r"\frac{\partial L}{\partial Q}&=c\,\frac{\partial L}{\partial S'}K\qquad"
                r"\frac{\partial L}{\partial K}=c\,\Big(\frac{\partial L}{\partial S'}\Big)^{\!\top}Q\end{aligned}",
                t("worked_example.backward.formula_caption"),
            )
            errors = back["errors"].assign(gradient=back["errors"].gradient.map(td("worked_example.backward.names")))
            st.dataframe(
                errors,
                hide_index=True,
                column_config={
                    "gradient": t("worked_example.backward.columns.gradient"),
                    "max_error": st.column_config.NumberColumn(
                        t("worked_example.backward.columns.error"), format="%.1e"
                    ),
                },
            )
            reach = back["reached"]
            everyone = reach["keys"] == reach["values"] == reach["n"]
            fields = reach | {"token": token}
            notice(
                [
                    t("worked_example.backward.only_row", token=token),
                    t(f"worked_example.backward.{'reach_all' if everyone else 'reach_some'}", **fields),
                    t(f"worked_example.backward.scaling_{'off' if scaled else 'on'}"),
                ]
            )
        with left:
            st.markdown(t("worked_example.backward.lede", token=token))
            st.latex(r"\frac{\partial L}{\partial Z} = " + back["latex"]["upstream"])
            st.latex(r"\frac{\partial L}{\partial V} = A^\top\frac{\partial L}{\partial Z} = " + back["latex"]["dv"])
            st.latex(
                r"\frac{\partial L}{\partial A} = \frac{\partial L}{\partial Z}V^\top = " + back["latex"]["dweights"]
            )
            st.latex(r"\frac{\partial L}{\partial S'} = " + back["latex"]["dscores"])
            st.latex(
                rf"\frac{{\partial L}}{{\partial Q}} = {c}\,\frac{{\partial L}}{{\partial S'}}K = "
                + back["latex"]["dq"]
            )
            st.latex(
                rf"\frac{{\partial L}}{{\partial K}} = {c}\,\Big(\frac{{\partial L}}{{\partial S'}}\Big)^{{\!\top}}Q = "
                + back["latex"]["dk"]
            )
            st.caption(t("worked_example.backward.notes_caption"))

st.subheader(t("worked_example.check"), anchor="check")
st.markdown(t("worked_example.check_lede"))
st.caption(notes_about())  # before the table: a student has no notes, and the table quotes them
with friendly_errors(t("worked_example.sections.claims")):
    table = tables.claims(seed())
    verdict_names = td("notes.verdicts")
    counts = table.verdict.value_counts()
    for column, verdict in zip(st.columns(len(notes.VERDICTS)), notes.VERDICTS, strict=True):
        column.metric(verdict_names[verdict], int(counts.get(verdict, 0)))
    f1, f2 = st.columns([1, 2])
    chosen = state.pills(
        t("worked_example.controls.verdicts"),
        list(notes.VERDICTS),
        list(notes.VERDICTS),
        key="we_verdicts",
        multi=True,
        where=f1,
        format_func=verdict_names.get,
    )
    files = state.pills(
        t("worked_example.controls.files"),
        list(notes.FILES),
        list(notes.FILES),
        key="we_files",
        multi=True,
        where=f2,
        format_func=lambda code: t(f"notes.short.{code}"),
        help=t("worked_example.controls.files_help"),
    )
    text = {part: td(f"notes.{part}") for part in ("claims", "why", "verdicts", "columns", "computed", "printed")}
    shown_table = tables.claims_shown(
        seed(), tuple(chosen or ()), tuple(files or ()), text | {"where": readable_places()}
    )
    # a static table: its cells wrap, so every word can be read at 1366 px and on a projector (a data grid cuts them)
    st.table(shown_table, hide_index=True)
    st.caption(t("worked_example.samples", n=notes.SAMPLES, seed=seed()))
