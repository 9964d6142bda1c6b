"""The release package: one zip holding a release's files, its plan, its OpenDP program (as a
script and as a Jupyter notebook) and ``report.html``, a self-contained page to read or print.

``release_files(release)`` builds every file a recorded release publishes, the package among
them: the one builder behind the Release plan page's downloads, ``python -m release`` and the
files kept with the ledger entry (``keep_files``), so what is offered right after a release,
what is kept and what is fetched later are the same bytes (the notebook's cell ids are random:
the bytes are built once and kept, never rebuilt). ``release_package(release)`` packs a
recorded release; ``simulation_package(plan, values)``
packs a plan that was only simulated, its report labelled "simulation — not a release" on
every page (and no release files: nothing was released).

The report is plain HTML with inline CSS and inline SVG charts drawn here: no script, no web
font, no link or source of any kind, so it opens from disk, works offline and asks no other
host for anything. Every text from the plan or the data (dataset, labels, groups, columns)
is escaped with ``html.escape``. It holds what the release published only: released values
(with their intervals when the release record has them), the privacy unit, the accounting,
what the guarantee does not cover, and the ledger entry.
"""

from __future__ import annotations

import html
import io
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from dpcore.risk import attacker_in_words
from dpcore.safe_rounding import lower, percent_lower, upper
from plan.kinds import kind_of
from plan.model import Plan, PlanError
from release.card import (
    LOOKING_AT_TRUE_ANSWERS,
    card_json,
    data_handling,
    not_covered,
    release_card,
)
from release.errors import ReleaseRefused
from release.files import _json_safe, microdata_files, release_csv, release_json, release_record
from release.ledger import Ledger, LedgerError
from release.programs import ProgramUnsupported, opendp_program
from release.run import Release, prepare

__all__ = ["SIMULATION_LABEL", "notebook", "release_package", "release_files", "keep_files",
           "package_name", "OUT_FILES", "report_html", "simulation_package",
           "simulation_report"]

SIMULATION_LABEL = "simulation — not a release"
PROGRAM = "program.py"
NOTEBOOK = "program.ipynb"
#: The notebook's parameter: the data file the program reads.
DATA_PARAMETER = "DATA_PATH"
_SECTION = "# " + "-" * 90


# --------------------------------------------------------------------------------------------
# the notebook


def _program_cells(program: str) -> list[str]:
    """The program's text split at its section rules (``# ----…``), without the
    ``if __name__ == "__main__":`` block (a notebook runs its own last cell instead)."""
    text = program.split('\nif __name__ == "__main__":', 1)[0]
    cells, current = [], []
    for line in text.splitlines():
        if line == _SECTION and current:
            cells.append("\n".join(current).strip("\n"))
            current = []
        current.append(line)
    cells.append("\n".join(current).strip("\n"))
    return [c for c in cells if c.strip()]


def notebook(program: str, data_path: str = "data.csv") -> str:
    """The OpenDP ``program`` as a Jupyter notebook (JSON text): a parameter cell
    (``DATA_PATH``, tagged ``parameters``), the program's sections as code cells, and a last
    cell that releases once on ``DATA_PATH`` as ``python program.py --data`` does."""
    import nbformat
    from nbformat import v4

    intro = ("# A differentially private release with OpenDP\n\n"
             "Each run of this notebook is a **new release** of the same people: it spends "
             "the plan's total every run (printed by the last cell) and is not recorded in "
             "Epsilon Lab's ledger. Set `DATA_PATH` below, then run all cells top to bottom.")
    parameters = v4.new_code_cell(f"{DATA_PARAMETER} = {data_path!r}\nOUT_PATH = None")
    parameters.metadata["tags"] = ["parameters"]
    run = v4.new_code_cell(
        "print(EVERY_RUN)  # each run is a new release\n"
        "check_plan()\n"
        "measurements, report = checked_measurements()  # before the data is read\n"
        f"out = release(read_frame({DATA_PARAMETER}), measurements)\n"
        'out["parts"] = report\n'
        "emit(out, OUT_PATH)")
    cells = [v4.new_markdown_cell(intro), parameters,
             *(v4.new_code_cell(c) for c in _program_cells(program)), run]
    book = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.validate(book)
    return nbformat.writes(book)


# --------------------------------------------------------------------------------------------
# the report: charts


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _fmt(value: float | None, rounding: str = "nearest") -> str:
    """A value for the report: whole numbers in full, others to about four significant digits
    without an exponent (48842.3 reads 48,842, not 4.884e+04). ``rounding`` "down" or "up"
    rounds an interval's end outwards, so the interval shown still holds the one released."""
    if value is None:
        return "—"
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 1e15 or abs(value) < 1e-3:
        if rounding not in ("down", "up"):
            return f"{value:.3e}"
        exact = Decimal(value)   # the float's exact value, rounded outwards to 4 digits
        step = Decimal(1).scaleb(exact.adjusted() - 3)
        shown = exact.quantize(step, ROUND_FLOOR if rounding == "down" else ROUND_CEILING)
        return f"{float(shown):.3e}"   # four digits survive the float: 1.234e-04 as typed
    places = max(0, 3 - math.floor(math.log10(abs(value))))
    scaled = value * 10 ** places
    whole = {"down": math.floor, "up": math.ceil}.get(rounding, round)(scaled)
    if rounding == "down" and whole > scaled or rounding == "up" and whole < scaled:
        whole += -1 if rounding == "down" else 1  # a float product a hair off the true one
    text = f"{abs(whole) / 10 ** places:,.{places}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return f"-{text}" if whole < 0 else text


_WIDTH, _LABEL, _ROW, _RIGHT = 640, 190, 24, 90
#: The label column grows from _LABEL up to this for long labels; past it a label wraps onto a
#: second line (a row then is _ROW + _LINE high), and past two lines it is cut with "…" and
#: kept whole in its tooltip (and in the table below the chart).
_MAX_LABEL, _LINE, _GAP = 300, 14, 6
_FONT_PX = 12   # svg text's font-size in _CSS

#: Advance widths in em, rounded up from DejaVu Sans (what system-ui falls back to on Linux,
#: and wider than Segoe UI, Roboto or Arial): a label measured with these is never wider on
#: screen than measured, so it is never cut at the chart's left edge (issue 35:
#: "ofessional_and_Related Serv…" drawn from x = -11). Anything unlisted counts a full em.
_NARROW, _SLIM, _WIDE = set("ilj|!.,:;'"), set("fIrt()[] -_/\\\""), set("mwMW")


def _char_em(c: str) -> float:
    if c in _NARROW:
        return 0.40
    if c in _SLIM:
        return 0.52
    if c in _WIDE:
        return 1.0
    if c.islower() or c.isdigit() and c.isascii():
        return 0.65
    if c.isupper():
        return 0.8
    return 1.0   # symbols (× … — # +), CJK and the like


def _text_px(text: str) -> float:
    """An upper bound of ``text``'s width in pixels at the charts' font size."""
    return _FONT_PX * sum(_char_em(c) for c in text)


def _fit(text: str, room: float) -> int:
    """How many of ``text``'s first characters fit in ``room`` pixels."""
    used = 0.0
    for i, c in enumerate(text):
        used += _FONT_PX * _char_em(c)
        if used > room:
            return i
    return len(text)


def _label_lines(label: str) -> tuple[tuple[str, ...], bool]:
    """A label as one line, or two that break after a space, underscore or hyphen where one
    fits (else mid-word), the second cut with "…" when even two lines cannot hold it; and
    whether it was cut."""
    room = _MAX_LABEL - 2 * _GAP
    if _text_px(label) <= room:
        return (label,), False
    fits = _fit(label, room)
    breaks = [i + 1 for i, c in enumerate(label[:fits]) if c in " _-/"]
    first = label[:breaks[-1] if breaks and breaks[-1] > fits // 3 else fits]
    rest = label[len(first):].lstrip(" ")
    cut = _text_px(rest) > room
    if cut:
        rest = rest[:_fit(rest, room - _text_px("…"))] + "…"
    return (first.rstrip(" "), rest), cut


def _labels(rows: Sequence[Mapping[str, Any]]
            ) -> tuple[list[tuple[str, tuple[str, ...], bool]], float, int]:
    """Each row's label (its groups) with its lines and whether it was cut, the label
    column's width (the widest line and its margins, at least _LABEL, at most _MAX_LABEL)
    and the rows' height (a line more if any label wraps)."""
    labels = [" × ".join(str(g) for g in row.get("group", [])) or "value" for row in rows]
    laid = [(label, *_label_lines(label)) for label in labels]
    widest = max((_text_px(line) for _, lines, _ in laid for line in lines), default=0.0)
    column = min(float(_MAX_LABEL), max(float(_LABEL), math.ceil(widest) + 2 * _GAP))
    height = _ROW + _LINE * (max((len(lines) for _, lines, _ in laid), default=1) - 1)
    return laid, column, height


def _label_svg(laid: tuple[str, tuple[str, ...], bool], column: float, y: float,
               row_height: int) -> str:
    """A row's label, right-aligned against the bars; the whole label on hover when cut."""
    label, lines, cut = laid
    x = f"{column - _GAP:g}"
    spans = "".join(f'<tspan x="{x}" dy="{0 if i == 0 else _LINE}">{_e(line)}</tspan>'
                    for i, line in enumerate(lines))
    title = f"<title>{_e(label)}</title>" if cut else ""
    top = y + 15 + (row_height - _ROW - _LINE * (len(lines) - 1)) / 2   # centred in its row
    return f'<text class="label" x="{x}" y="{top:g}" text-anchor="end">{title}{spans}</text>'


def _of_value(row: Mapping[str, Any]) -> bool:
    """Whether a released row's interval is of its value (records written before intervals
    said what they bound are)."""
    return "lower" in row and row.get("of") in (None, "true value")


def _choice_bound(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A released choice's error bound (``at_most``, ``level``, ``of``), or None: from the
    record's ``choice_error``, or from records written when a choice's bound was given as
    lower and upper with what they bound."""
    if isinstance(row.get("choice_error"), Mapping):
        return row["choice_error"]
    if "lower" in row and not _of_value(row):
        return {"at_most": row.get("upper"), "level": row.get("level"), "of": row.get("of")}
    return None


def _bar_chart(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """Bars of numeric values, each with its interval (a whisker) when it has one."""
    values = [_number(r.get("value")) for r in rows]
    # a whisker only where the interval is of the value (not of a choice's shortfall)
    lowers = [_number(r.get("lower")) if _of_value(r) else None for r in rows]
    uppers = [_number(r.get("upper")) if _of_value(r) else None for r in rows]
    seen = [v for v in values + lowers + uppers if v is not None]
    lo, hi = min([0.0, *seen]), max([0.0, *seen])
    if hi == lo:
        hi = lo + 1.0
    laid, column, row_height = _labels(rows)
    plot = _WIDTH - column - _RIGHT

    def x(v: float) -> float:
        return column + (v - lo) / (hi - lo) * plot

    height = row_height * len(rows) + 28
    parts = [f'<svg class="chart" role="img" '
             f'viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" height="{height}">',
             f"<title>{_e(title)}</title>",
             f'<line class="axis" x1="{x(0):.1f}" x2="{x(0):.1f}" y1="4" '
             f'y2="{height - 22}"/>']
    for i, (label, v, a, b) in enumerate(zip(laid, values, lowers, uppers, strict=True)):
        y = 6 + i * row_height
        parts.append(_label_svg(label, column, y, row_height))
        if v is not None:
            left, right = sorted((x(0), x(v)))
            parts.append(f'<rect class="bar" x="{left:.1f}" y="{y + 3}" '
                         f'width="{max(right - left, 1.0):.1f}" height="{row_height - 8}"/>')
        if a is not None and b is not None:
            mid = y + row_height / 2 - 1
            parts.append(f'<path class="interval" d="M{x(a):.1f} {mid}H{x(b):.1f}'
                         f'M{x(a):.1f} {mid - 5}V{mid + 5}M{x(b):.1f} {mid - 5}V{mid + 5}"/>')
        parts.append(f'<text class="value" x="{_WIDTH - _RIGHT + 6}" '
                     f'y="{y + row_height // 2 + 3}">{_e(_fmt(v))}</text>')
    parts.append(f'<text class="tick" x="{column:g}" y="{height - 6}">{_e(_fmt(lo))}</text>'
                 f'<text class="tick" x="{column + plot:g}" y="{height - 6}" '
                 f'text-anchor="end">{_e(_fmt(hi))}</text></svg>')
    return "".join(parts)


def _list_chart(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """Released values that are not numbers (a selection's categories): one marked row each."""
    laid, column, row_height = _labels(rows)
    height = row_height * len(rows) + 8
    parts = [f'<svg class="chart" role="img" '
             f'viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" height="{height}">',
             f"<title>{_e(title)}</title>"]
    for i, (label, row) in enumerate(zip(laid, rows, strict=True)):
        y = 6 + i * row_height
        value = str(row.get("value"))
        room = _WIDTH - column - 16 - _GAP
        shown = value if _text_px(value) <= room else value[:_fit(value, room - _text_px(
            "…"))] + "…"
        parts.append(_label_svg(label, column, y, row_height)
                     + f'<rect class="bar" x="{column:g}" y="{y + 3}" width="8" '
                     f'height="{row_height - 8}"/>'
                     f'<text class="value" x="{column + 16:g}" y="{y + 15}">'
                     + (f"<title>{_e(value)}</title>" if shown != value else "")
                     + f"{_e(shown)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _chart(query: Mapping[str, Any]) -> str:
    rows = query.get("values", [])
    title = f"{query.get('label', '')} ({query.get('statistic', '')})"
    if not rows:
        return '<p class="muted">No value was released for this query.</p>'
    numeric = all(_number(r.get("value")) is not None or r.get("value") is None for r in rows)
    return _bar_chart(rows, title) if numeric else _list_chart(rows, title)


def _values_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Group, released value, the interval for its true value, and a released choice's
    error bound in a column of its own (never in the interval's: a rank error in rows is
    not bounds on a value)."""
    intervals = any(_of_value(r) for r in rows)
    choices = any(_choice_bound(r) is not None for r in rows)
    head = "<tr><th>Group</th><th>Released value</th>" + (
        "<th>Interval for the true value</th>" if intervals else "") + (
        "<th>Error of the choice</th>" if choices else "") + "</tr>"
    body = []
    for r in rows:
        group = " × ".join(str(g) for g in r.get("group", [])) or "—"
        value = r.get("value")
        shown = _fmt(_number(value)) if _number(value) is not None else str(value)
        cells = ""
        if intervals:
            level = _number(r.get("level"))
            cells += "<td>" + (
                f"[{_e(_fmt(_number(r.get('lower')), 'down'))}, "
                + f"{_e(_fmt(_number(r.get('upper')), 'up'))}]"
                + (f" at {percent_lower(level)}" if level is not None else "")
                if _of_value(r) else "—") + "</td>"
        if choices:
            bound = _choice_bound(r)
            level = None if bound is None else _number(bound.get("level"))
            words = None if bound is None else bound.get("in_words") or (
                f"{bound.get('of') or 'error'} ≤ {_fmt(_number(bound.get('at_most')), 'up')}")
            cells += "<td>" + ("—" if bound is None else _e(words) + (
                f" at {percent_lower(level)}" if level is not None else "")) + "</td>"
        body.append(f"<tr><td>{_e(group)}</td><td>{_e(shown)}</td>{cells}</tr>")
    return f'<table class="values">{head}{"".join(body)}</table>'


# --------------------------------------------------------------------------------------------
# the report: page


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:#1b1b1b;
max-width:780px;margin:24px auto;padding:0 16px;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #ccc;
padding-bottom:2px;margin-top:1.6em}h3{font-size:1.05em;margin-bottom:.3em}
.muted{color:#555}.banner{background:#fff3cd;border:2px solid #b58100;color:#6b4a00;
padding:6px 10px;font-weight:bold;text-transform:uppercase;letter-spacing:.04em}
.stamp{display:none}
table{border-collapse:collapse;margin:.4em 0;font-size:.92em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
svg.chart{max-width:100%;height:auto;display:block}
svg .bar{fill:#4c78a8}svg .interval{stroke:#1b1b1b;stroke-width:1.6;fill:none}
svg .axis{stroke:#888;stroke-width:1}svg text{font-size:12px;fill:#1b1b1b}
svg .tick{fill:#666;font-size:11px}
.query{break-inside:avoid;page-break-inside:avoid}
@page{size:A4;margin:16mm 14mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:10.5pt}
.stamp{display:block;position:fixed;top:0;right:0;font-size:9pt;font-weight:bold;
color:#6b4a00;border:1px solid #b58100;padding:1px 6px;background:#fff3cd;
text-transform:uppercase}
h2{break-after:avoid;page-break-after:avoid}}
"""


def _markdown_bold(text: str) -> str:
    """``text`` escaped, with markdown's ``**bold**`` as <strong> (the Welcome sentence)."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", _e(text))


def _epsilon_sentence(epsilon: float, delta: float) -> str:
    out = f"<p>{_markdown_bold(attacker_in_words(epsilon))}</p>"
    if delta:
        out += (f'<p class="muted">The sentence reads ε as pure ε-DP. This release also has '
                f"δ = {_e(f'{delta:.3g}')}: the bound may fail on rare outcomes whose total "
                "probability δ bounds.</p>")
    return out


def _list_items(items: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> str:
    if not items:
        return "<p>Nothing.</p>"
    lis = []
    for item in items:
        words = [str(item[k]) for k in keys if item.get(k)]
        query = f"<strong>{_e(item['query'])}</strong>: " if item.get("query") else ""
        lis.append(f"<li>{query}{_e(' — '.join(words))}</li>")
    return f"<ul>{''.join(lis)}</ul>"


def report_html(record: Mapping[str, Any], card: Mapping[str, Any], *,
                simulation: bool = False) -> str:
    """report.html of a release record (``release.files.release_record``) and its card
    (``release.card.release_card``), or of a simulation shaped the same
    (:func:`simulation_report`). Returns the page's text."""
    dataset = record["dataset"]["name"]
    spent = record.get("privacy_spent") or {}
    accounting = record.get("accounting") or {}
    epsilon, delta = spent.get("epsilon"), spent.get("delta") or 0.0
    title = (f"Simulated release plan: {dataset}" if simulation
             else f"Differentially private release: {dataset}")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"]
    if simulation:
        out.append(f'<div class="stamp">{_e(SIMULATION_LABEL)}</div>'
                   f'<p class="banner">{_e(SIMULATION_LABEL)}</p>')
    out.append(f"<h1>{_e(title)}</h1>")
    origin = record["dataset"].get("origin")
    out.append(f'<p class="muted">Dataset <strong>{_e(dataset)}</strong>'
               + (f" ({_e(origin)})" if origin else "") + ". "
               + ("These values were drawn by Epsilon Lab's simulator with numpy's noise: "
                  "nothing was released, nothing recorded in the ledger, and no budget "
                  "spent. Seeded noise can be drawn again, so these values protect no one: "
                  "share them only with those who may see the data."
                  if simulation else
                  f"Released {_e(record.get('released_at', ''))} by "
                  f"{_e(record.get('implementation', ''))}.") + "</p>")

    out.append("<h2>Released statistics</h2>" if not simulation
               else "<h2>Simulated statistics</h2>")
    for q in record.get("queries", []):
        rows = q.get("values", [])
        out.append(f'<section class="query"><h3>{_e(q.get("label", ""))} '
                   f'<span class="muted">({_e(q.get("id", ""))}, '
                   f'{_e(q.get("statistic", ""))})</span></h3>{_chart(q)}'
                   f"{_values_table(rows)}")
        if not any(_of_value(r) or _choice_bound(r) is not None for r in rows):
            out.append('<p class="muted">No interval was '
                       + ("computed for" if simulation else "published with")
                       + " these values.</p>")
        for note in q.get("notes", []):
            out.append(f'<p class="muted">Note: {_e(note)}</p>')
        out.append("</section>")

    unit = card.get("privacy_unit", {})
    out.append("<h2>Privacy unit</h2>"
               f"<p>{_e(record.get('privacy_unit', unit.get('description', '')))}</p>"
               f"<p>Neighbouring datasets: {_e(unit.get('neighbouring_datasets', ''))}.</p>")

    out.append("<h2>Accounting</h2>" if not simulation
               else "<h2>Accounting (what a release of this plan would spend)</h2>")
    if epsilon is None:
        out.append(f"<p>{_e(accounting.get('note') or 'No total could be computed.')}</p>")
    else:
        rho = spent.get("rho")
        out.append("<table><tr><th>ε</th><th>δ</th><th>ρ (zCDP)</th><th>Accounting</th></tr>"
                   f"<tr><td>{_e(upper(epsilon, 6))}</td><td>{_e(upper(delta, 3))}</td>"
                   f"<td>{_e('—' if rho is None else upper(rho, 6))}</td>"
                   f"<td>{_e(accounting.get('method', ''))}</td></tr></table>")
        if accounting.get("note"):
            out.append(f'<p class="muted">{_e(accounting["note"])}</p>')
        out.append(f"<p>{_e(card.get('flavour', ''))}; {_e(card.get('model', ''))}.</p>")
    mech = [(q["id"], m) for q in card.get("queries", []) for m in q.get("mechanisms", [])]
    if mech:
        out.append("<table><tr><th>Query</th><th>Part</th><th>Mechanism</th>"
                   "<th>Noise scale</th><th>Privacy</th></tr>" + "".join(
                       f"<tr><td>{_e(qid)}</td><td>{_e(m.get('part', ''))}</td>"
                       f"<td>{_e(m.get('mechanism', ''))}</td>"
                       f"<td>{_e(_fmt(_number(m.get('noise_scale'))))}</td>"
                       f"<td>{_e(_privacy(m.get('privacy')))}</td></tr>"
                       for qid, m in mech) + "</table>")

    out.append("<h2>What ε means for an attacker</h2>")
    if simulation:
        out.append("<p><strong>For a real release of this plan.</strong> The simulated "
                   "values above were drawn with seeded noise that can be drawn again: they "
                   "carry no such guarantee.</p>")
    out.append(_epsilon_sentence(epsilon, delta) if epsilon is not None
               else "<p>No total ε.</p>")

    out.append("<h2>Not covered by the guarantee</h2>")
    out.append(_list_items(card.get("not_covered_by_the_guarantee", []),
                           ("what", "origin", "source")))
    out.append("<h2>How the data were read</h2>")
    out.append(_list_items(card.get("data_handling", []), ("rule",)))

    if not simulation:
        out.append("<h2>This dataset's budget</h2>")
        out.append(_budget_history(card.get("dataset_budget") or {}))
    out.append("<h2>Ledger entry</h2>")
    if simulation:
        out.append(f"<p><strong>None: {_e(SIMULATION_LABEL)}.</strong> The plan was simulated "
                   "only; a release would be recorded in the ledger with its values' "
                   "hash.</p>")
    else:
        out.append("<table>" + "".join(
            f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in (
                ("Entry", f"#{record.get('ledger_entry')}"),
                ("Recorded at", record.get("released_at", "")),
                *((("Released by", record["released_by"]),) if record.get("released_by")
                  else ()),
                ("Values hash", record.get("values_sha256", "")),
                ("Implementation", record.get("implementation", "")))) + "</table>")
    if simulation:
        out.append(f'<p class="banner">{_e(SIMULATION_LABEL)}</p>')
    out.append("</body></html>")
    return "\n".join(out)


def _budget_history(budget: Mapping[str, Any]) -> str:
    """The card's budget history as a table (every setting before the release, oldest
    first), or a sentence saying none was set."""
    history = budget.get("history") or []
    if not history:
        return ("<p>No total budget was set for this dataset in the ledger before this "
                "release: nothing capped what its releases add up to.</p>")

    def row(h: Mapping[str, Any]) -> str:
        epsilon, delta = _number(h.get("epsilon")), _number(h.get("delta"))
        cells = (h.get("time", ""), h.get("change", ""),
                 "—" if epsilon is None else lower(epsilon, 6),
                 "no cap" if delta is None else f"{delta:.3g}",
                 upper(_number(h.get("spent_epsilon_before")) or 0.0, 6),
                 h.get("reason") or "no reason recorded")
        return "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"

    what = str(budget.get("what", ""))
    return ("<table><tr><th>Time</th><th>Change</th><th>Total ε</th><th>δ cap</th>"
            "<th>ε spent before</th><th>Reason</th></tr>" + "".join(map(row, history))
            + f'</table><p class="muted">{_e(what[:1].upper() + what[1:])}.</p>')


def _privacy(privacy: Any) -> str:
    if not isinstance(privacy, Mapping):
        return ""
    return ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in privacy.items() if v is not None)


# --------------------------------------------------------------------------------------------
# the packages


def _program_files(plan: Plan) -> dict[str, bytes]:
    """program.py and program.ipynb of ``plan``, or a note saying why there is none."""
    try:
        program = opendp_program(plan)
    except (ProgramUnsupported, ReleaseRefused, PlanError) as exc:
        return {"program-unavailable.txt": f"No OpenDP program for this plan: {exc}\n"
                .encode()}
    return {PROGRAM: program.encode("utf-8"), NOTEBOOK: notebook(program).encode("utf-8")}


def _zip(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16   # rw-r--r-- when unzipped
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


#: The files ``python -m release --out DIR`` writes (with each ``rows-<id>.csv``).
OUT_FILES = ("release.csv", "release.json", "card.json")


def package_name(entry: int) -> str:
    """The package's file name: ``release-<ledger entry>.zip``."""
    return f"release-{int(entry)}.zip"


def release_files(release: Release) -> dict[str, bytes]:
    """Every file a recorded release publishes, name → bytes: release.csv, release.json,
    card.json, plan.json (the plan as published), rows-<id>.csv for a query whose released
    rows are records (a synthetic table), program.py and program.ipynb (the published plan's
    OpenDP program; program-unavailable.txt when it has none), report.html, and last the
    package ``release-<entry>.zip`` holding all the others, the same bytes. Released values
    and public facts only."""
    published = release.plan.published()
    files = {"release.csv": release_csv(release), "release.json": release_json(release),
             "card.json": card_json(release),
             "plan.json": published.to_json().encode("utf-8")}
    files |= microdata_files(release)
    files |= _program_files(published)
    files["report.html"] = report_html(release_record(release),
                                       release_card(release)).encode("utf-8")
    files[package_name(release.record.id)] = _zip(files)
    return files


def release_package(release: Release) -> bytes:
    """The zip of a recorded release (:func:`release_files`' package)."""
    return release_files(release)[package_name(release.record.id)]


def keep_files(release: Release, ledger: Ledger) -> tuple[dict[str, bytes], str]:
    """Build the release's files (:func:`release_files`) and keep them with its ledger entry
    (``Ledger.store_files``). Returns (the files, "") or, when they could not be kept, (the
    files, why, in words): the release stays recorded and the files of this run are still
    there to offer or write."""
    files = release_files(release)
    try:
        ledger.store_files(release.record.id, files)
    except (LedgerError, ValueError) as exc:
        return files, (f"release #{release.record.id} is recorded, but its files could not be "
                       f"kept in the ledger ({exc}); this run's files are the only copy: "
                       "save them now")
    return files, ""


def simulation_report(plan: Plan,
                      values: Mapping[str, Sequence[tuple[Sequence[Any], Any]]]) -> str:
    """report.html of a plan that was only simulated: ``values`` maps a query id to its
    simulated rows ``(group, value)``. Labelled "simulation — not a release"."""
    published = plan.published()
    try:
        spent = prepare(published).spent
        privacy = spent.to_dict()
        accounting = {"method": spent.method, "note": spent.note}
    except (ReleaseRefused, PlanError) as exc:
        privacy, accounting = {}, {"note": f"This plan cannot be released as it is: {exc}"}
    record = _json_safe({
        "dataset": {"name": plan.dataset.name, "origin": plan.dataset.origin},
        "privacy_unit": plan.privacy_unit.describe(),
        "privacy_spent": privacy, "accounting": accounting,
        "queries": [{"id": q.id, "label": q.label, "statistic": kind_of(q.query).name,
                     "values": [{"group": list(g), "value": v}
                                for g, v in values.get(q.id, ())]}
                    for q in published.queries],
    })
    card = {"not_covered_by_the_guarantee": [*not_covered(published),
                                             dict(LOOKING_AT_TRUE_ANSWERS)],
            "data_handling": data_handling(published),
            "privacy_unit": {"neighbouring_datasets": "add or remove one " + (
                "row" if plan.privacy_unit.person_column is None
                else "person with all their rows")}}
    return report_html(record, card, simulation=True)


def simulation_package(plan: Plan,
                       values: Mapping[str, Sequence[tuple[Sequence[Any], Any]]]) -> bytes:
    """The zip of a plan that was only simulated: plan.json, the program, and report.html
    labelled "simulation — not a release" (no release files: nothing was released)."""
    published = plan.published()
    files = {"plan.json": published.to_json().encode("utf-8")}
    files |= _program_files(published)
    files["report.html"] = simulation_report(plan, values).encode("utf-8")
    return _zip(files)

