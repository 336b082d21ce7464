"""matrix.html: one self-contained page (inline CSS, JS and SVG; no network) rendered from the report model.

The per-check rows are embedded once, compactly (strings, environments and known-failure entries are
interned into tables referenced by index), as JSON inside a non-executed ``<script type="application/json">``
with ``<``, ``>`` and ``&`` escaped so no recorded string can close the tag (``report_escape.json_text``), written
in pieces so a large report is never one string. The page's script builds the matrix from them and renders a
cell's checks on click, always through ``textContent`` (never as markup), so every string is embedded as
``core.escape.visible`` shows it (a direction override or a C1 control arrives there as an escape). The static
sections (summary chart, what each transform and check tests, causes, runs, diff, unreadable lines) are escaped here
(``html_text``).
The pass rates per library and per transform that the page's script renders (``#rates``, and each library's row in
the matrix) count the checks its filters show (device, dtype, library, transforms, subject; the transform filter
takes several, ``#transform=deepcopy,pickle``); the chart at the bottom counts every check and says so. A device is
labelled with its records' torch release where the records come from more than one. A section anchor in the address
(``#history``) scrolls to that section after the matrix is rendered.
``matrix.html#selftest`` runs the page's interactions and writes the results into ``#selftest``
(used by the browser test through ``chromium --dump-dom``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Iterator

from ..core.escape import html_text, json_text, visible
from .data import WORST_FIRST, Diff, Loaded, error_size, left_out_note, torch_label
from .history import environment_line, history_counts, history_status

SYMBOLS = {"pass": "✓", "xfail": "○", "xpass": "★", "fail": "✗", "timeout": "◔", "crash": "☠", "skip": "–"}
MEANING = {"pass": "matches its spec / property holds", "xfail": "known failure (listed with reason and link)",
           "xpass": "listed as known failure but passed: remove the entry", "fail": "property violated",
           "timeout": "ran past its time limit", "crash": "the worker died or an unexpected error",
           "skip": "not applicable or library missing (not counted)"}
COLORS = {"pass": "#1f9d55", "xfail": "#7a8ca3", "xpass": "#c026d3", "fail": "#e3342f", "timeout": "#f59e0b",
          "crash": "#7f1d1d", "skip": "#c4c4c4"}
DIFF_CODES = {"regression": 1, "fix": 2, "cause": 3, "changed": 4, "new": 5}
MESSAGE_LIMIT = 3000  # characters of a message embedded in the page; matrix.json keeps what was recorded


#: Every string from a record, an exception or a library goes through this (report_escape.html_text).
e = html_text


class _Table:
    """Interns values into a list; the page refers to them by index (-1 for None)."""

    def __init__(self, key=lambda v: v):
        self.items, self._index, self._key = [], {}, key

    def __call__(self, value) -> int:
        if value is None:
            return -1
        k = self._key(value)
        if k not in self._index:
            self._index[k] = len(self.items)
            self.items.append(value)
        return self._index[k]


def _short(value: float | None):
    return None if value is None else float(f"{value:.4g}")


def _templated(text: str | None, cell_id: str) -> str | None:
    """Replace the cell id inside a string by \\x01 (restored by the page): reproduce commands repeat it. Both as
    :func:`_shown` makes them (so no recorded \\x01 is left)."""
    return None if text is None else visible(text).replace(visible(cell_id), "\x01")


def _shown(value):
    """``value`` with every string in it (keys too) as :func:`visible` shows it: the page's script puts these
    strings on screen as they are, so a direction override or a C1 control arrives there as an escape."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    return value


def embed_chunks(loaded: Loaded, model: dict, the_diff: Diff | None) -> Iterator[str]:
    """The page's data as script-safe JSON, the per-check rows first and in batches (never all as one string)."""
    strings, envs = _Table(), _Table()
    knowns = _Table(lambda v: json.dumps(v, sort_keys=True))
    subjects = [(s["subject"], s["library"], s["spec"]) for s in model["subjects"]]
    subject_index = {s[0]: i for i, s in enumerate(subjects)}
    transforms = model["transforms"]
    transform_index = {t: i for i, t in enumerate(transforms)}
    devices = sorted(set(model["devices"]) | {"cpu", "cuda"})
    device_index = {d: i for i, d in enumerate(devices)}
    dtypes = model["dtypes"]
    dtype_index = {d: i for i, d in enumerate(dtypes)}
    outcome_index = {o: i for i, o in enumerate(WORST_FIRST)}
    marks = the_diff.classification() if the_diff is not None else {}
    yield '{"rows":['
    batch: list[list] = []
    first = True
    for r in loaded.rows:
        message = r["message"]
        if len(message) > MESSAGE_LIMIT:
            more = len(message) - MESSAGE_LIMIT
            message = message[:MESSAGE_LIMIT] + f"\n… [{more} more characters in matrix.json]"
        mark = marks.get(r["id"]) if marks and the_diff.shows(r["env"]) else None
        batch.append([subject_index[r["subject"]], transform_index[r["transform"]], strings(_shown(r["check"])),
                      device_index[r["device"]], dtype_index[r["dtype"]], outcome_index[r["outcome"]],
                      strings(_shown(r["cause"])), strings(_templated(message, r["id"])), _short(r["max_abs_err"]),
                      _short(r["max_rel_err"]), _short(r["atol"]), _short(r["rtol"]), r["tie_excluded"],
                      strings(_templated(r["example"], r["id"])), strings(_templated(r["reproduce"], r["id"])),
                      knowns(r["known"]), envs(r["env_key"]), strings(_shown(r["run"])),
                      strings(_shown(r["started"])),
                      _short(r["duration_s"]), DIFF_CODES.get(mark, 0)])
        if len(batch) == 2000:
            yield ("" if first else ",") + json_text(batch)[1:-1]
            batch, first = [], False
    if batch:
        yield ("" if first else ",") + json_text(batch)[1:-1]
    descriptions = model.get("descriptions") or {}
    rest = _shown({"generated": model["generated"], "outcomes": list(WORST_FIRST), "symbols": SYMBOLS,
                   "subjects": subjects, "transforms": transforms, "devices": devices,
                   "present_devices": model["devices"], "dtypes": dtypes,
                   "device_labels": {d: torch_label(model, d) for d in devices},
                   "envs": [json.loads(key) for key in envs.items], "causes": _cause_descriptions(loaded),
                   "transform_docs": [(descriptions.get("transforms") or {}).get(t, "") for t in transforms],
                   "stale_after_s": 7 * 24 * 3600})
    rest.update(strings=strings.items, knowns=_shown(knowns.items))  # strings: shown as they were interned
    yield "]," + json_text(rest)[1:]


# --------------------------------------------------------------------------------------------- static parts
def _bar_chart(model: dict) -> str:
    libraries = model["libraries"]
    if not libraries:
        return ""
    label_w, bar_w, row_h = 150, 460, 26
    height = row_h * len(libraries) + 8
    parts = [f'<svg class="chart" role="img" aria-label="pass rate per library" width="{label_w + bar_w + 280}" '
             f'height="{height}" viewBox="0 0 {label_w + bar_w + 280} {height}" xmlns="http://www.w3.org/2000/svg">']
    for i, (library, info) in enumerate(libraries.items()):
        y = 4 + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{e(library)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="{row_h - 8}" fill="#f1f1f1"/>')
        x = float(label_w)
        total = info["n_total"]
        for outcome in ("pass", "xfail", "xpass", "fail", "timeout", "crash"):
            n = info["counts"].get(outcome, 0)
            if not n or not total:
                continue
            w = bar_w * n / total
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" '
                         f'fill="{COLORS[outcome]}"><title>{e(library)}: {n} {outcome}</title></rect>')
            x += w
        rate = "no checks" if info["pass_rate"] is None else f"{100 * info['pass_rate']:.0f}% pass"
        skipped = info["counts"].get("skip", 0)
        parts.append(f'<text x="{label_w + bar_w + 8}" y="{y + 16}">{rate} ({info["n_pass"]}/{total}'
                     f'{f", {skipped} skipped" if skipped else ""})</text>')
    parts.append("</svg>")
    return "".join(parts)


def _agreement_section(agreement: list[dict]) -> str:
    """CPU/CUDA agreement per subject, disagreements first, with the largest error (every string escaped)."""
    if not agreement:
        return ""

    rows = []
    for a in agreement:
        chip = f'<span class="chip o-{e(a["worst"])}">{SYMBOLS.get(a["worst"], "?")} {e(a["worst"])}</span>'
        cause = f"<code>{e(a['cause'])}</code>" if a["cause"] else ""
        rows.append(f"<tr><td>{e(a['library'])}</td><td><code>{e(a['subject'])}</code></td><td>{chip}</td>"
                    f"<td class=num>{error_size(a['max_abs_err'])}</td><td class=num>{error_size(a['max_rel_err'])}</td>"
                    f"<td>{cause}</td>"
                    f"<td>{e((a['message'] or '')[:300])}</td></tr>")
    bad = sum(a["worst"] not in ("pass", "skip") for a in agreement)
    return ('<section id="agreement"><h2>CPU/CUDA agreement</h2><p class="muted">The same module, parameters and '
            f"input on both devices (<code>cpu_vs_cuda</code> cells): {bad} of {len(agreement)} subject(s) disagree "
            'or could not be compared.</p><table class="list"><thead><tr><th>library</th><th>subject</th>'
            "<th>worst</th><th>max abs err</th><th>max rel err</th><th>cause</th><th>message</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></section>")


def _exchange_section(exchange: dict) -> str:
    """Per exchange format, the cross-framework table: rows export, columns import (escaped)."""
    parts = []
    for fmt, table in exchange.items():
        head = "".join(f"<th>{e(c)}</th>" for c in table["columns"])
        body = ""
        for row in table["rows"]:
            cells = ""
            for column in table["columns"]:
                cell = row["cells"].get(column)
                if cell is None:
                    cells += "<td></td>"
                    continue
                causes = "".join(f" <code>{e(c)}</code>" for c in cell["causes"])
                cells += f'<td class="{e(cell["worst"])}">{SYMBOLS[cell["worst"]]} {e(cell["worst"])}{causes}</td>'
            body += f"<tr><td><code>{e(row['subject'])}</code></td>{cells}</tr>"
        parts.append(f'<section id="exchange-{e(fmt)}"><h2>Across frameworks: {e(fmt.upper())}</h2><p class="muted">'
                     "Rows: the network its library exports; columns: the format's own semantics, the round trip, "
                     "and each importing library.</p><table class=\"list\"><thead><tr><th>exported by</th>"
                     f"{head}</tr></thead><tbody>{body}</tbody></table></section>")
    return "".join(parts)


def _history_section(history: dict) -> str:
    """Per library: its releases and each subject x transform whose status changed between them (escaped)."""
    if not history:
        return ""
    def code(text: str) -> str:
        return f"<code>{e(text)}</code>"

    parts = ['<section id="history"><h2>Across releases</h2><p class="muted">A release\'s status counts what the '
             "checks found, known failures included; CPU cells only.</p>"]
    for library, entry in history.items():
        recorded = "".join(f"<li>{environment_line(env, code=code, text=e)}</li>" for env in entry["environments"])
        recorded += f"<li>{e(', '.join(entry['pinned']))}: the matrix above (pinned)</li>"
        head = "".join(f"<th>{e(v)}</th>" for v in entry["releases"])
        rows = "".join(
            f"<tr><td><code>{e(row['subject'])}</code></td><td>{e(row['transform'])}</td>"
            + "".join(f"<td>{history_status(row['by_release'].get(v), code=code, text=e, symbols=SYMBOLS)}</td>"
                      for v in entry["releases"])
            + f"<td>{e(', '.join(row['changed_in']))}</td></tr>" for row in entry["rows"] if row["changed_in"])
        parts.append(f"<h3>{e(library)}: {' → '.join(e(v) for v in entry['releases'])}</h3><ul>{recorded}</ul>"
                     f"<p>{e(history_counts(entry))}.</p>")
        if rows:
            parts.append(f'<table class="list"><thead><tr><th>subject</th><th>transform</th>{head}<th>changed in</th>'
                         f"</tr></thead><tbody>{rows}</tbody></table>")
    return "".join(parts) + "</section>"


def _bench_section(bench: list[dict]) -> str:
    """Per benchmark run, per library, a bar per case: subject time / reference time on a log scale around 1
    (left of the line: faster than the spec; right: slower). Every recorded string is escaped."""
    if not bench:
        return ""
    parts = ['<section id="bench"><h2>Speed relative to the spec</h2><p class="muted">Median over interleaved '
             "repeats of (subject time / spec time) on the same input, or compiled / eager for "
             "<code>@inductor</code> rows; measured by <code>python -m conformance.bench</code>, gated in CI "
             "against a checked-in baseline. Peak memory is one forward+backward (subject / spec).</p>"]
    for run in bench:
        runs = f", median of {run['runs']} runs" if isinstance(run.get("runs"), int) and run["runs"] > 1 else ""
        parts.append(f"<h3>{e(run['device'])} · {e(run['profile'])} profile · {e(run['started'])}{e(runs)} · "
                     f"<code>{e(run['source'])}</code></h3>")
        for library, items in run["libraries"].items():
            parts.append(f'<div class="bench-lib"><h4>{e(library)}</h4>{_ratio_chart(library, items)}</div>')
        if run["skipped"]:
            skipped = "".join(f"<li><code>{e(case)}</code> {e(reason)}</li>" for case, reason in run["skipped"].items())
            parts.append(f"<details><summary>{len(run['skipped'])} case(s) not measured</summary><ul>{skipped}</ul>"
                         "</details>")
    parts.append("</section>")
    return "".join(parts)


def _ratio_chart(library: str, items: list[dict]) -> str:
    label_w, half, value_w, row_h, span = 360, 170, 230, 18, 2.0  # span: log2 range shown each side of 1
    width, height = label_w + 2 * half + value_w, row_h * len(items) + 22
    centre = label_w + half
    out = [f'<svg class="chart bench" role="img" aria-label="{e(library)}: speed relative to the spec" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for tick in (0.25, 0.5, 1.0, 2.0, 4.0):
        x = centre + half * math.log2(tick) / span
        out.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 16}" stroke="{"#555" if tick == 1 else "#ddd"}"/>'
                   f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick:g}×</text>')
    for i, item in enumerate(items):
        y = i * row_h
        label = f"{item['subject']} · {item['size']} · {item['mode']}"
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{e(label)}</text>')
        ratio = item["ratio"]
        if ratio is None or ratio <= 0:
            continue
        offset = max(-1.0, min(1.0, math.log2(ratio) / span)) * half
        x, w = (centre, offset) if offset >= 0 else (centre + offset, -offset)
        colour = "#e3342f" if ratio > 1 else "#1f9d55"
        memory = ""
        if item["mem_subject"] is not None and item["mem_reference"] is not None:
            memory = f", peak {item['mem_subject'] / 2**20:.1f} / {item['mem_reference'] / 2**20:.1f} MiB"
        times = ""
        if item["subject_s"] is not None and item["reference_s"] is not None:
            times = f" ({item['subject_s'] * 1e3:.3g} ms vs {item['reference_s'] * 1e3:.3g} ms)"
        title = f"{item['case']}: {ratio:.3f}× the {item['against']}{times}{memory}"
        out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 6}" fill="{colour}" '
                   f'fill-opacity="0.75"><title>{e(title)}</title></rect>'
                   f'<text x="{label_w + 2 * half + 6}" y="{y + 13}">{ratio:.2f}×{e(memory)}</text>')
    out.append("</svg>")
    return "".join(out)


def _cause_table(model: dict, descriptions: dict) -> str:
    if not model["causes"]:
        return "<p class=muted>No failures with a recorded cause.</p>"
    rows = []
    for c in model["causes"]:
        libs = " · ".join(f"{e(k)} {v}" for k, v in c["by_library"].items())
        outs = " ".join(f'<span class="chip o-{e(k)}">{SYMBOLS.get(k, "")} {v}</span>'
                        for k, v in c["by_outcome"].items())
        cause = e(c["cause"])
        rows.append(f'<tr data-cause="{cause}" title="show only cells with this cause"><td><code>{cause}</code>'
                    f'<div class=muted>{e(descriptions.get(c["cause"], ""))}</div></td><td class=num>{c["total"]}'
                    f'</td><td class=num>{c["matrix_cells"]}</td><td>{libs}</td><td>{outs}</td></tr>')
    return ('<table class="list causes"><thead><tr><th>cause</th><th>checks</th><th>cells</th><th>by library</th>'
            '<th>by outcome</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _runs_table(model: dict) -> str:
    rows = []
    for run in model["runs"]:
        stale = ' class="stale" title="older than 7 days"' if run["stale"] else ""
        rows.append(f'<tr{stale}><td><code>{e(run["run"])}</code></td><td>{e(run["started"])}</td>'
                    f'<td data-started="{e(run["started"])}">{e(run["age"])}</td>'
                    f'<td>{e(", ".join(run["devices"]))}</td>'
                    f'<td>{e(", ".join(run["torch"]))}</td><td><code>{e(run["suite_sha"])}</code></td>'
                    f'<td class=num>{run["cells"]}</td></tr>')
    return ('<table class="list"><thead><tr><th>run</th><th>started (UTC)</th><th>age</th><th>devices</th>'
            '<th>torch</th><th>suite sha</th><th>cells shown</th></tr></thead><tbody>' + "".join(rows)
            + "</tbody></table>")


def _problems(model: dict) -> str:
    problems = model["problems"]
    if not problems:
        return ""
    items = "".join(f"<li><code>{e(p['path'])}:{p['line']}</code> {e(p['reason'])}</li>" for p in problems[:500])
    more = f"<li>… and {len(problems) - 500} more</li>" if len(problems) > 500 else ""
    opened = " open" if len(problems) <= 5 else ""
    return (f'<details id="problems" class="warn"{opened}><summary><b>{len(problems)} unreadable line(s) skipped'
            f"</b> (file:line and reason; everything else is shown)</summary><ul>{items}{more}</ul></details>")


def _diff_section(the_diff: Diff | None) -> str:
    if the_diff is None:
        return ""
    limit = 300

    def pairs(title: str, items, cls: str) -> str:
        if not items:
            return ""
        body = "".join(
            f"<tr><td><code>{e(cell)}</code></td><td>{_outcome_text(old)}</td><td>→</td>"
            f"<td>{_outcome_text(new)}</td></tr>"
            for cell, old, new in items[:limit])
        more = f"<tr><td colspan=4>… and {len(items) - limit} more (diff.md)</td></tr>" if len(items) > limit else ""
        opened = " open" if len(items) <= 20 else ""
        return (f'<details{opened}><summary><h3 class="{cls}">{e(title)} ({len(items)})</h3></summary>'
                f'<table class="list">{body}{more}</table></details>')

    def singles(title: str, items) -> str:
        if not items:
            return ""
        body = "".join(f"<li><code>{e(cell)}</code> {_outcome_text(v)}</li>" for cell, v in items[:limit])
        more = f"<li>… and {len(items) - limit} more (diff.md)</li>" if len(items) > limit else ""
        opened = " open" if len(items) <= 20 else ""
        return f"<details{opened}><summary><h3>{e(title)} ({len(items)})</h3></summary><ul>{body}{more}</ul></details>"

    counts = _diff_counts(the_diff)
    return (f'<section id="diff"><h2>Diff against <code>{e(the_diff.against)}</code></h2><p>{e(counts)}'
            f"{_left_out(the_diff)}</p>"
            + pairs("Regressions", the_diff.regressions, "bad") + pairs("Fixes", the_diff.fixes, "good")
            + pairs("Changed causes", the_diff.changed_causes, "")
            + pairs("Other outcome changes", the_diff.changed_outcomes, "")
            + singles("New cells", the_diff.new) + singles("Removed cells", the_diff.removed) + "</section>")


def _diff_banner(the_diff: Diff | None) -> str:
    if the_diff is None:
        return ""
    cls = "warn bad" if the_diff.regressions else "warn"
    return (f'<p class="{cls}" id="diff-banner"><b>Diff against <code>{e(the_diff.against)}</code>:</b> '
            f"{e(_diff_counts(the_diff))}. Cells with a regression are outlined (▲), fixed ones marked ▼; "
            f"the lists are below the matrix.{_left_out(the_diff)}</p>")


def _left_out(the_diff: Diff) -> str:
    note = left_out_note(the_diff.environment, the_diff.left_out)
    return f" <b>Like with like:</b> {e(note)}." if note else ""


def _diff_counts(the_diff: Diff) -> str:
    return (f"{len(the_diff.regressions)} regression(s), {len(the_diff.fixes)} fix(es), "
            f"{len(the_diff.changed_causes)} changed cause(s), {len(the_diff.changed_outcomes)} other change(s), "
            f"{len(the_diff.new)} new, {len(the_diff.removed)} removed")


def _outcome_text(v: dict) -> str:
    cause = f" <code>{e(v.get('cause'))}</code>" if v.get("cause") else ""
    return f'<span class="chip o-{e(v["outcome"])}">{SYMBOLS.get(v["outcome"], "?")} {e(v["outcome"])}</span>{cause}'


def _legend() -> str:
    return "".join(f'<span class="chip o-{o}" title="{e(MEANING[o])}">{SYMBOLS[o]} {o}</span>' for o in WORST_FIRST)


def _cause_descriptions(loaded: Loaded) -> dict[str, str]:
    try:
        from ..core.causes import CAUSES
    except Exception:  # the taxonomy is optional for rendering: recorded causes are shown either way
        CAUSES = {}
    return {c: CAUSES.get(c.split(":", 1)[0], "") for c in sorted({r["cause"] for r in loaded.rows if r["cause"]})}


UNDEFINED = '<span class="muted">(not defined by this suite)</span>'


def _definitions(model: dict) -> str:
    """One line per transform and check shown, from their definitions (report_data.descriptions)."""
    docs = model.get("descriptions") or {}
    parts = []
    for title, kind in (("Transforms (columns)", "transforms"), ("Checks (within a cell)", "checks")):
        items = docs.get(kind) or {}
        if items:
            rows = "".join(f"<tr><td><code>{e(name)}</code></td><td>{e(text) or UNDEFINED}</td></tr>"
                           for name, text in items.items())
            parts.append(f'<div><h3>{title}</h3><table class="list defs"><tbody>{rows}</tbody></table></div>')
    if not parts:
        return ""
    return ('<section id="definitions"><h2>What the transforms and checks test</h2><div class="defs-wrap">'
            + "".join(parts) + "</div></section>")


def _sources(model: dict) -> str:
    """What this report read (each directory holding records, nested runs included) and the default sources it did
    not read, with how to include them (every path escaped)."""
    read = "".join(f"<li><code>{e(s['path'])}</code>: {s['records']} record(s)</li>"
                   for s in model.get("sources_read") or [])
    history = model.get("history_read") or {}
    if history.get("records"):
        read += (f"<li><code>{e(', '.join(history['paths']))}</code>: {history['records']} record(s) of earlier "
                 'releases (Across releases, <code>#history</code>)</li>')
    left = "".join(f"<li><b>not included:</b> <code>{e(n['path'])}</code> ({e(n['what'])}); {e(n['include'])}</li>"
                   for n in model.get("not_included") or [])
    cls = "warn" if left else "muted"
    opened = " open" if left else ""
    return (f'<details id="sources" class="{cls}"{opened}><summary>Sources: {len(model.get("sources_read") or [])} '
            f"directory(ies) of records{', some default sources not included' if left else ''}</summary>"
            f"<ul>{left}{read}</ul></details>")


def _versions_banner(model: dict) -> str:
    note = model.get("mixed_suite_versions")
    return f'<p class="warn" id="suite-versions"><b>Mixed suite versions:</b> {e(note)}.</p>' if note else ""


def render(loaded: Loaded, model: dict, the_diff: Diff | None = None) -> str:
    return "".join(render_chunks(loaded, model, the_diff))


def render_chunks(loaded: Loaded, model: dict, the_diff: Diff | None = None) -> Iterator[str]:
    """matrix.html in pieces (the embedded data is streamed: a large report is never one string in memory)."""
    css, js = _CSS, _JS
    # Only this exact script may run: a string that escaped its escaping still could not execute.
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'; "
           "base-uri 'none'; form-action 'none'")
    summary = model["summary"]
    totals = " ".join(f'<span class="chip o-{o}">{SYMBOLS[o]} {o} {n}</span>' for o, n in summary["counts"].items())
    torch_versions = sorted({str(env.get("torch")) for env in model["envs"]})
    coloring = "".join(f".o-{o}{{--c:{c}}}" for o, c in COLORS.items())
    yield f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{e(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance matrix</title>
<style>{css}{coloring}</style></head>
<body>
<header><h1>Conformance matrix</h1>
<p class="meta">generated {e(model["generated"])} · {len(loaded.rows)} checks from {len(model["runs"])} run(s) ·
torch {e(", ".join(torch_versions) or "?")} · devices {e(", ".join(d + torch_label(model, d) for d in model["devices"]) or "none")} ·
pass {summary["n_pass"]}/{summary["n_total"]} (skips excluded)</p>
<p class="totals">{totals}</p></header>
{_sources(model)}
{_versions_banner(model)}
{_problems(model)}
{_diff_banner(the_diff)}
<section id="controls">
<span class="group" id="device-switch" role="group" aria-label="device"><b>device</b></span>
<span class="group" id="dtype-switch" role="group" aria-label="dtype"><b>dtype</b></span>
<label>library <select id="f-library"><option value="">all</option></select></label>
<label>transform <select id="f-transform" multiple size="3" title="several: ctrl/shift-click"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">any</option></select></label>
<label>cause <select id="f-cause"><option value="">any</option></select></label>
<label>subject <input id="f-text" type="search" placeholder="filter by name"></label>
<button id="f-reset" type="button">reset</button>
<span id="shown" class="muted"></span>
</section>
<p class="legend">{_legend()} <span class="muted">· a cell shows its worst outcome and passing/total checks
(skips excluded); click it for every check behind it; a column's header says what its transform tests (below: every
transform and check in one line).</span></p>
<noscript><p class="warn">The matrix needs JavaScript; matrix.md holds the same table.</p></noscript>
<div id="matrix-wrap"><table id="matrix"><thead></thead><tbody></tbody></table></div>
<section id="rates"><h2>Pass rates under the current filters</h2><p class="muted" id="rates-scope"></p>
<div class="defs-wrap"><table class="list" id="rates-library"><thead><tr><th>library</th><th>pass rate</th>
<th>pass/total</th></tr></thead><tbody></tbody></table><table class="list" id="rates-transform"><thead><tr>
<th>transform</th><th>pass rate</th><th>pass/total</th></tr></thead><tbody></tbody></table></div></section>
{_definitions(model)}
{_agreement_section(model.get("agreement") or [])}
{_history_section(model.get("history") or {})}
{_exchange_section(model.get("exchange") or {})}
{_bench_section(model.get("bench") or [])}
{_diff_section(the_diff)}
<aside id="details" hidden><button id="details-close" type="button" aria-label="close">×</button>
<div id="details-body"></div></aside>
<section id="summary"><h2>Pass rate per library, every recorded check</h2><p class="muted">Whatever the filters
(the rates under the current filters are above the list of transforms, <code>#rates</code>).</p>{_bar_chart(model)}
<h2>Causes</h2><p class="muted">How many checks (and subject × transform cells) each cause explains, across libraries;
click a row to filter the matrix.</p>{_cause_table(model, _cause_descriptions(loaded))}
<h2>Runs</h2>{_runs_table(model)}</section>
<pre id="selftest" hidden></pre>
<script type="application/json" id="report-data">"""
    yield from embed_chunks(loaded, model, the_diff)
    yield f"""</script>
<script>{js}</script>
</body></html>
"""


# ------------------------------------------------------------------------------------------------ page assets
_CSS = r"""
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 16px 40px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:12px 0 2px}h2{font-size:15px;margin:18px 0 6px}h3{font-size:13px;margin:10px 0 4px}
code,pre{font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px 8px;margin:2px 0;border-radius:4px;max-height:18em;overflow:auto}
.meta,.muted{color:#666}.meta{margin:0}.totals{margin:6px 0}
.chip{display:inline-block;padding:1px 7px;margin:1px 2px;border-radius:9px;background:var(--c);color:#fff;font-size:12px;white-space:nowrap}
.o-skip.chip{color:#333}
#controls{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;padding:8px 10px;background:#f4f5f7;border-radius:6px;position:sticky;top:0;z-index:5}
#controls select,#controls input{font:inherit;padding:2px 4px}
.group button{font:inherit;border:1px solid #bbb;background:#fff;padding:2px 9px;margin-left:-1px;cursor:pointer}
.group b{margin-right:6px;font-weight:600}
.group button.on{background:#1d4ed8;color:#fff;border-color:#1d4ed8}.group button:disabled{color:#bbb;cursor:not-allowed}
.legend{margin:8px 0}
#matrix-wrap{overflow:auto;width:fit-content;max-width:100%;max-height:78vh;border:1px solid #ddd;border-radius:4px}
#matrix{border-collapse:separate;border-spacing:0}
#matrix th,#matrix td{border-right:1px solid #eee;border-bottom:1px solid #eee;padding:2px 5px}
#matrix thead th{position:sticky;top:0;background:#fafafa;z-index:3;vertical-align:bottom}
#matrix th.tr{height:150px;width:46px;min-width:46px;padding:4px 2px}
#matrix th.tr span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:600}
#matrix th.corner{left:0;z-index:4;text-align:left}
#matrix th.name{position:sticky;left:0;background:#fff;text-align:left;font-weight:500;white-space:nowrap;z-index:2}
#matrix tr.lib th{position:sticky;left:0;background:#e8ecf3;text-align:left;font-size:13px;padding:5px 6px;z-index:2}
#matrix tr.spec th{position:sticky;left:0;background:#fff;text-align:left;font-weight:400;color:#666;font-style:italic;padding-top:4px;z-index:2}
#matrix td.cell{text-align:center;white-space:nowrap;cursor:pointer;font-size:12px;background:color-mix(in srgb,var(--c) 30%,#fff);color:#111}
#matrix td.cell.o-crash{background:var(--c);color:#fff}
#matrix td.cell.o-skip{background:#f4f4f4;color:#888}
#matrix td.cell:hover,#matrix td.cell:focus{outline:2px solid #1d4ed8;outline-offset:-2px}
#matrix td.cell.dim{opacity:.18}
#matrix td.cell.d1{box-shadow:inset 0 0 0 2px #e3342f}#matrix td.cell.d1::after{content:" ▲";color:#b91c1c}
#matrix td.cell.d2::after{content:" ▼";color:#15803d}
#matrix td.empty{background:repeating-linear-gradient(45deg,#fff,#fff 3px,#f3f3f3 3px,#f3f3f3 6px)}
#details{position:fixed;top:0;right:0;bottom:0;width:min(720px,52vw);background:#fff;border-left:1px solid #ccc;box-shadow:-6px 0 18px rgba(0,0,0,.12);overflow:auto;padding:10px 16px 40px;z-index:10}
#details-close{position:sticky;top:0;float:right;font-size:20px;border:0;background:#fff;cursor:pointer}
#details h2{margin-top:4px}
article.check{border-left:5px solid var(--c);padding:2px 10px 6px;margin:10px 0;background:#fcfcfc}
article.check dl{display:grid;grid-template-columns:110px 1fr;gap:2px 10px;margin:4px 0}
article.check dt{color:#666}article.check dd{margin:0;min-width:0}
.over{color:#b91c1c;font-weight:600}.stale{color:#b45309;font-weight:600}
table.list{border-collapse:collapse;margin:4px 0}table.list td,table.list th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
table.causes tbody tr{cursor:pointer}table.causes tbody tr:hover{background:#f3f6fb}
td.num{text-align:right}
.warn.bad{background:#fdecec;border-color:#e3342f}.warn{background:#fff7e6;border:1px solid #f5c26b;border-radius:6px;padding:4px 12px;margin:8px 0}
#diff{border:1px solid #ddd;border-radius:6px;padding:4px 12px;margin:8px 0}
summary h3{display:inline}summary{cursor:pointer;margin:6px 0}
h3.bad{color:#b91c1c}h3.good{color:#15803d}
svg.chart text{font:12px system-ui,sans-serif;fill:#333}
#bench{margin:12px 0}#bench h4{margin:8px 0 2px}svg.bench text{font-size:11px}
#definitions .defs-wrap{display:flex;flex-wrap:wrap;gap:0 28px}table.defs td:first-child{white-space:nowrap}
section[id],details[id]{scroll-margin-top:96px}
.repro{user-select:all;background:#eef2ff;padding:2px 4px;border-radius:3px;word-break:break-all}
"""

_JS = r"""
"use strict";
(function () {
  const errors = [];
  window.addEventListener("error", (ev) => errors.push(String(ev.message || ev.type)));
  window.addEventListener("unhandledrejection", (ev) => errors.push("unhandled rejection: " + String(ev.reason)));
  const consoleError = console.error;
  console.error = function (...args) { errors.push(args.map(String).join(" ")); return consoleError.apply(console, args); };

  const D = JSON.parse(document.getElementById("report-data").textContent);
  const S = D.strings, O = D.outcomes, nT = D.transforms.length;
  const SUBJ = 0, TR = 1, CHECK = 2, DEV = 3, DT = 4, OUT = 5, CAUSE = 6, MSG = 7, MAE = 8, MRE = 9, ATOL = 10,
    RTOL = 11, TIE = 12, EX = 13, REPRO = 14, KNOWN = 15, ENV = 16, RUN = 17, STARTED = 18, DUR = 19, DIFF = 20;
  const PASS = O.indexOf("pass"), SKIP = O.indexOf("skip");
  const DIFF_TEXT = ["", "regression against the baseline", "fixed against the baseline",
    "cause changed against the baseline", "outcome changed against the baseline", "new: not in the baseline"];
  const str = (i) => (i < 0 ? null : S[i]);
  const byCell = new Map();
  D.rows.forEach((r, i) => {
    const k = r[SUBJ] * nT + r[TR];
    let list = byCell.get(k);
    if (!list) byCell.set(k, (list = []));
    list.push(i);
  });
  const state = { device: "all", dtype: "all", library: "", transform: "", outcome: "", cause: "", text: "", open: "" };
  const params = new URLSearchParams(location.hash.slice(1));
  const selftestMode = params.has("selftest");
  for (const key of Object.keys(state)) if (params.get(key)) state[key] = params.get(key);
  // "#history" (a key without a value naming an element): the section to scroll to once the matrix is rendered
  const anchor = [...params.keys()].find((k) => !params.get(k) && !(k in state) && k !== "selftest" &&
    document.getElementById(k)) || "";
  const chosenTransforms = () => new Set(state.transform ? state.transform.split(",") : []);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) if (child !== null && child !== undefined && child !== "") node.append(child);
    return node;  // strings are appended as text nodes: recorded text never becomes markup
  }
  const $ = (id) => document.getElementById(id);
  const cellId = (r) => [D.subjects[r[SUBJ]][0], D.transforms[r[TR]], str(r[CHECK]), D.devices[r[DEV]], D.dtypes[r[DT]]].join("|");
  const untemplate = (text, r) => (text === null ? null : text.split("\u0001").join(cellId(r)));
  const included = (r) => (state.device === "all" || D.devices[r[DEV]] === state.device) &&
    (state.dtype === "all" || D.dtypes[r[DT]] === state.dtype);

  function aggregate(list) {
    const counts = new Array(O.length).fill(0), causes = new Map();
    let n = 0, diff = 0;
    for (const i of list) {
      const r = D.rows[i];
      if (!included(r)) continue;
      n++; counts[r[OUT]]++;
      if (r[CAUSE] >= 0 && r[OUT] !== PASS) causes.set(str(r[CAUSE]), (causes.get(str(r[CAUSE])) || 0) + 1);
      if (r[DIFF] === 1 || (!diff && r[DIFF])) diff = r[DIFF];
    }
    const worst = counts.findIndex((c) => c > 0);
    return { n, counts, causes, diff, worst, npass: counts[PASS], ntotal: n - counts[SKIP] };
  }
  const matches = (agg) => agg.n > 0 && (!state.outcome || agg.counts[O.indexOf(state.outcome)] > 0) &&
    (!state.cause || agg.causes.has(state.cause));
  const countsText = (agg) => O.map((o, i) => (agg.counts[i] ? agg.counts[i] + " " + o : "")).filter(Boolean).join(", ");

  function render() {
    const chosen = chosenTransforms();
    const cols = D.transforms.map((t, i) => i).filter((i) => !chosen.size || chosen.has(D.transforms[i]));
    const shownCols = new Set(cols);
    const head = el("tr", null, el("th", { class: "corner" }, "subject"));
    for (const ti of cols) head.append(el("th", { class: "tr", title: D.transforms[ti] + (D.transform_docs[ti] ? ": " + D.transform_docs[ti] : "") }, el("span", null, D.transforms[ti])));
    document.querySelector("#matrix thead").replaceChildren(head);
    // Pass rates over the checks the filters show: device, dtype, library, transforms and subject name (outcome and
    // cause filters only highlight cells).
    const needle = state.text.toLowerCase();
    const libStats = new Map(), trStats = new Map();
    for (const r of D.rows) {
      const [subject, lib] = D.subjects[r[SUBJ]];
      if (!included(r) || !shownCols.has(r[TR]) || (state.library && lib !== state.library) ||
          (needle && !subject.toLowerCase().includes(needle))) continue;
      for (const [stats, key] of [[libStats, lib], [trStats, D.transforms[r[TR]]]]) {
        const s = stats.get(key) || [0, 0];
        if (r[OUT] === PASS) s[0]++;
        if (r[OUT] !== SKIP) s[1]++;
        stats.set(key, s);
      }
    }
    renderRates(libStats, trStats);
    const frag = document.createDocumentFragment();
    let lastLib = null, lastSpec = null, rows = 0, cells = 0;
    D.subjects.forEach(([subject, lib, spec], si) => {
      if ((state.library && lib !== state.library) || (needle && !subject.toLowerCase().includes(needle))) return;
      const tr = el("tr", { class: "subject" }, el("th", { class: "name", title: subject + "  (spec " + spec + ")" }, subject));
      let hasData = false, anyMatch = false;
      for (const ti of cols) {
        const list = byCell.get(si * nT + ti);
        const agg = list ? aggregate(list) : null;
        if (!agg || !agg.n) { tr.append(el("td", { class: "empty", title: "no records" })); continue; }
        hasData = true;
        const ok = matches(agg), worst = O[agg.worst];
        anyMatch = anyMatch || ok;
        if (ok) cells++;
        const text = D.symbols[worst] + (agg.n > 1 && agg.ntotal > 0 ? " " + agg.npass + "/" + agg.ntotal : "");
        const causes = [...agg.causes.keys()].join(", ");
        tr.append(el("td", {
          class: "cell o-" + worst + (ok ? "" : " dim") + (agg.diff ? " d" + agg.diff : ""), "data-s": si, "data-t": ti,
          tabindex: "0", title: subject + " × " + D.transforms[ti] + "\n" + countsText(agg) + (causes ? "\ncauses: " + causes : "") +
            (agg.diff ? "\n" + DIFF_TEXT[agg.diff] : ""),
        }, text));
      }
      if (!hasData || ((state.outcome || state.cause) && !anyMatch)) return;
      if (lib !== lastLib) {
        const s = libStats.get(lib) || [0, 0];
        const rate = s[1] ? rateText(s) + " pass (" + s[0] + "/" + s[1] + ", filtered)" : "no checks";
        frag.append(el("tr", { class: "lib" }, el("th", { colspan: cols.length + 1 }, lib + "  ", el("span", { class: "muted" }, rate))));
        lastLib = lib; lastSpec = null;
      }
      if (spec !== lastSpec) {
        frag.append(el("tr", { class: "spec" }, el("th", { colspan: cols.length + 1 }, "spec " + spec)));
        lastSpec = spec;
      }
      frag.append(tr); rows++;
    });
    document.querySelector("#matrix tbody").replaceChildren(frag);
    $("shown").textContent = rows + " subject(s), " + cells + " cell(s) shown" +
      (chosen.size ? " · transforms " + [...chosen].join(", ") : "");
    writeHash();
  }

  const rateText = (s) => (s[1] ? Math.round((100 * s[0]) / s[1]) + "%" : "no checks");
  function renderRates(libStats, trStats) {
    const scope = [["device", state.device], ["dtype", state.dtype], ["library", state.library],
      ["transform", state.transform], ["subject", state.text]].filter(([, v]) => v && v !== "all").map(([k, v]) => k + "=" + v);
    let n = 0;
    for (const s of libStats.values()) n += s[1];
    $("rates-scope").textContent = "Over the " + n + " checks (skips excluded) the current filters show: " +
      (scope.length ? scope.join(" · ") : "no filter, every check") + ". Outcome and cause filters only highlight cells.";
    for (const [id, stats, key] of [["rates-library", libStats, "library"], ["rates-transform", trStats, "transform"]]) {
      const rows = [...stats.entries()].map(([name, s]) => el("tr", { ["data-" + key]: name, "data-pass": s[0], "data-total": s[1] },
        el("td", null, name), el("td", { class: "num" }, rateText(s)), el("td", { class: "num" }, s[0] + "/" + s[1])));
      document.querySelector("#" + id + " tbody").replaceChildren(...rows);
    }
  }

  function age(started) {
    const t = Date.parse(started);
    if (isNaN(t)) return { text: "unknown age", stale: false };
    const s = Math.max(0, (Date.now() - t) / 1000);
    const text = s >= 86400 ? Math.round(s / 86400) + " d ago" : s >= 3600 ? Math.round(s / 3600) + " h ago" :
      s >= 60 ? Math.round(s / 60) + " min ago" : Math.round(s) + " s ago";
    return { text, stale: s > D.stale_after_s };
  }
  const fmt = (v) => (v === null || v === undefined ? "–" : typeof v !== "number" || v === 0 ? String(v) :
    Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5 ? v.toExponential(2) : String(+v.toPrecision(4)));

  function checkCard(i) {
    const r = D.rows[i], out = O[r[OUT]];
    const card = el("article", { class: "check o-" + out });
    card.append(el("h3", null, el("span", { class: "chip o-" + out }, D.symbols[out] + " " + out), " " + str(r[CHECK]),
      el("span", { class: "muted" }, " · " + D.devices[r[DEV]] + ((D.device_labels || {})[D.devices[r[DEV]]] || "") + " · " + D.dtypes[r[DT]])));
    const dl = el("dl");
    const add = (key, ...value) => dl.append(el("dt", null, key), el("dd", null, ...value));
    if (r[DIFF]) add("diff", el("b", null, DIFF_TEXT[r[DIFF]]));
    const cause = str(r[CAUSE]);
    if (cause) add("cause", el("code", null, cause), D.causes[cause] ? el("span", { class: "muted" }, " — " + D.causes[cause]) : null);
    const message = untemplate(str(r[MSG]), r);
    if (message) add("message", el("pre", null, message));
    if ([MAE, MRE, ATOL, RTOL].some((k) => r[k] !== null)) {
      const over = r[MAE] !== null && r[ATOL] !== null && r[RTOL] !== null && r[MAE] > r[ATOL] && r[MRE] !== null && r[MRE] > r[RTOL];
      add("error vs tol", el("span", { class: over ? "over" : "" }, "max abs " + fmt(r[MAE]) + " (atol " + fmt(r[ATOL]) + ") · max rel " +
        fmt(r[MRE]) + " (rtol " + fmt(r[RTOL]) + ")"));
    }
    add("tie excluded", r[TIE] ? r[TIE] + " element(s) within tolerance of a threshold were not compared" : "0");
    const example = untemplate(str(r[EX]), r);
    if (example) add("example", el("pre", null, example));
    const repro = untemplate(str(r[REPRO]), r);
    if (repro) add("reproduce", el("code", { class: "repro", title: "click to select" }, repro));
    const known = r[KNOWN] >= 0 ? D.knowns[r[KNOWN]] : null;
    if (known) {
      const link = known.link && /^https?:\/\//i.test(known.link) ? el("a", { href: known.link, rel: "noopener noreferrer", target: "_blank" }, known.link) : known.link;
      add("known failure", known.reason || "(no reason)", known.cause ? el("span", { class: "muted" }, " [" + known.cause + "]") : null,
        link ? el("br") : null, link || null);
      if (known.reproducer) add("reproducer", el("code", null, known.reproducer), known.reproducer_code ?
        el("details", null, el("summary", null, "standalone script (the library and torch only)"), el("pre", null, known.reproducer_code)) : null);
    }
    const env = r[ENV] >= 0 ? D.envs[r[ENV]] : {};
    add("environment", ["torch " + fmt(env.torch), "python " + fmt(env.python), fmt(env.platform), "device " + fmt(env.device_name),
      "cuda " + fmt(env.cuda), "profile " + fmt(env.hypothesis_profile)].join(" · "));
    const libs = env.libraries && typeof env.libraries === "object" ? Object.entries(env.libraries).map(([k, v]) => k + " " + v).join(" · ") : "";
    if (libs) add("libraries", libs);
    add("suite sha", el("code", null, fmt(env.suite_sha)));
    const a = age(str(r[STARTED]) || "");
    add("run", el("code", null, fmt(str(r[RUN]))), " · started " + fmt(str(r[STARTED])) + " · ",
      el("span", { class: a.stale ? "stale" : "", title: a.stale ? "older than 7 days" : "" }, a.text),
      " · " + fmt(r[DUR]) + " s");
    card.append(dl);
    return card;
  }

  function openDetails(si, ti) {
    const list = (byCell.get(si * nT + ti) || []).filter((i) => included(D.rows[i]));
    list.sort((a, b) => D.rows[a][OUT] - D.rows[b][OUT] || a - b);
    const [subject, lib, spec] = D.subjects[si];
    const agg = aggregate(list);
    state.open = subject + "|" + D.transforms[ti];
    $("details-body").replaceChildren(
      el("h2", null, subject + " × " + D.transforms[ti]),
      el("p", { class: "muted" }, lib + " · spec " + spec + " · device " + state.device + " · dtype " + state.dtype + " · " +
        agg.npass + "/" + agg.ntotal + " passing (skips excluded) · " + countsText(agg)),
      ...list.map(checkCard));
    $("details").hidden = false;
    writeHash();
  }
  function closeDetails() { $("details").hidden = true; state.open = ""; writeHash(); }

  function writeHash() {
    if (selftestMode) return;
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v && v !== "all") p.set(k, v);
    const hash = [anchor, p.toString()].filter(Boolean).join("&");  // a section anchor stays in the address
    try { history.replaceState(null, "", "#" + hash); } catch (err) { /* file:// in some browsers */ }
  }

  function switchGroup(id, key, values, enabled) {
    const group = $(id);
    for (const v of values) {
      const b = el("button", { type: "button", "data-v": v }, v + ((D.device_labels || {})[v] || ""));
      if (!enabled(v)) { b.disabled = true; b.title = "no records for " + v; }
      b.addEventListener("click", () => { state[key] = v; sync(); render(); reopen(); });
      group.append(b);
    }
  }
  function fillSelect(id, values) { for (const v of values) $(id).append(el("option", { value: v }, v)); }
  function sync() {
    for (const [id, key] of [["device-switch", "device"], ["dtype-switch", "dtype"]])
      for (const b of $(id).querySelectorAll("button")) b.classList.toggle("on", b.dataset.v === state[key]);
    for (const key of ["library", "outcome", "cause"]) $("f-" + key).value = state[key];
    const chosen = chosenTransforms();
    for (const o of $("f-transform").options) o.selected = o.value ? chosen.has(o.value) : !chosen.size;
    $("f-text").value = state.text;
  }
  function reopen() {
    if (!state.open) return;
    const cut = state.open.lastIndexOf("|");
    const si = D.subjects.findIndex((s) => s[0] === state.open.slice(0, cut)), ti = D.transforms.indexOf(state.open.slice(cut + 1));
    if (si >= 0 && ti >= 0) openDetails(si, ti); else closeDetails();
  }

  switchGroup("device-switch", "device", ["all", ...D.devices], (v) => v === "all" || D.present_devices.includes(v));
  switchGroup("dtype-switch", "dtype", ["all", ...D.dtypes], () => true);
  fillSelect("f-library", [...new Set(D.subjects.map((s) => s[1]))]);
  fillSelect("f-transform", D.transforms);
  fillSelect("f-outcome", O);
  fillSelect("f-cause", Object.keys(D.causes));
  for (const key of ["library", "outcome", "cause"])
    $("f-" + key).addEventListener("change", (ev) => { state[key] = ev.target.value; render(); });
  $("f-transform").addEventListener("change", (ev) => {
    state.transform = [...ev.target.selectedOptions].map((o) => o.value).filter(Boolean).join(","); sync(); render();
  });
  $("f-text").addEventListener("input", (ev) => { state.text = ev.target.value; render(); });
  $("f-reset").addEventListener("click", () => {
    Object.assign(state, { device: "all", dtype: "all", library: "", transform: "", outcome: "", cause: "", text: "" });
    sync(); render();
  });
  const tbody = document.querySelector("#matrix tbody");
  const cellFrom = (target) => target.closest("td.cell");
  tbody.addEventListener("click", (ev) => { const td = cellFrom(ev.target); if (td) openDetails(+td.dataset.s, +td.dataset.t); });
  tbody.addEventListener("keydown", (ev) => { const td = cellFrom(ev.target); if (td && ev.key === "Enter") openDetails(+td.dataset.s, +td.dataset.t); });
  $("details-close").addEventListener("click", closeDetails);
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeDetails(); });
  for (const tr of document.querySelectorAll("table.causes tr[data-cause]"))
    tr.addEventListener("click", () => {
      state.cause = tr.dataset.cause; state.outcome = "";
      sync(); render(); $("controls").scrollIntoView();
    });
  for (const td of document.querySelectorAll("td[data-started]")) {
    const a = age(td.dataset.started);
    td.textContent = a.text;
    if (a.stale) td.classList.add("stale");
  }
  sync(); render(); reopen();
  if (anchor) $(anchor).scrollIntoView();  // after rendering: the matrix above it has its final height now

  function selftest() {
    const result = { title_before: document.title, anchor, scroll_y: Math.round(window.scrollY),
      anchor_top: anchor ? Math.round($(anchor).getBoundingClientRect().top) : null };
    const rowCount = () => document.querySelectorAll("#matrix tr.subject").length;
    const set = (id, value) => { $(id).value = value; $(id).dispatchEvent(new Event("change")); };
    result.rows = rowCount();
    result.cells = document.querySelectorAll("#matrix td.cell").length;
    const libs = [...$("f-library").options].map((o) => o.value).filter(Boolean);
    result.libraries = libs;
    if (libs.length) { set("f-library", libs[libs.length - 1]); result.rows_library_filter = rowCount(); set("f-library", ""); }
    const deviceButton = (v) => document.querySelector('#device-switch button[data-v="' + v + '"]');
    if (deviceButton("cuda") && !deviceButton("cuda").disabled) {
      deviceButton("cuda").click(); result.rows_device_cuda = rowCount(); deviceButton("all").click();
    }
    set("f-outcome", "fail");
    result.rows_outcome_filter = rowCount();
    result.cells_outcome_filter = document.querySelectorAll("#matrix td.cell:not(.dim)").length;
    set("f-outcome", "");
    result.rows_after_reset = rowCount();
    let target = D.rows.findIndex((r) => (str(r[MSG]) || "").includes("<script"));
    result.target_has_script_message = target >= 0;
    if (target < 0) target = 0;
    const r = D.rows[target];
    const td = r && document.querySelector('#matrix td.cell[data-s="' + r[SUBJ] + '"][data-t="' + r[TR] + '"]');
    if (td) td.click();
    result.details_open = !$("details").hidden;
    result.details_checks = document.querySelectorAll("#details article.check").length;
    result.details_text = $("details-body").textContent.slice(0, 20000);
    result.unsafe_links = document.querySelectorAll('a[href]:not([href^="http:"]):not([href^="https:"])').length;
    result.details_script_elements = document.querySelectorAll("#details script, #matrix script").length;
    result.injected_global = typeof window.__injected !== "undefined";
    result.title_after = document.title;
    result.errors = errors;
    $("selftest").textContent = JSON.stringify(result);
    $("selftest").hidden = false;
  }
  if (selftestMode) {
    try { selftest(); } catch (err) { errors.push("selftest: " + err); $("selftest").textContent = JSON.stringify({ errors }); }
  }
})();
"""
