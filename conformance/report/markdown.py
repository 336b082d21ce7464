"""The report's Markdown: matrix.md (every cell), diff.md (every change against a baseline) and summary.md (pass
rates and changes, sized for a pull-request comment). Every string from a record, an exception or a library goes
through :mod:`conformance.core.escape` (``md_text``, ``md_code``, ``md_url``). summary.md links the other files
relatively (it is written beside them) and always says what it compares against; both name the sources read and
those left out.
"""

from __future__ import annotations

from ..core.escape import md_code, md_text, md_url
from ..core.extras import tabulate
from .data import WORST_FIRST, Diff, Loaded, aggregate, error_size, group, left_out_note, torch_label
from .history import environment_line, history_counts, history_status
from .html import MEANING, SYMBOLS

#: GitHub refuses a comment longer than 65,536 characters; summary.md stays under this many UTF-8 bytes (never
#: fewer bytes than characters), leaving room for a line a workflow may add around it.
SUMMARY_LIMIT = 60_000
#: Longest text taken from a record into one line of summary.md (before escaping).
SUMMARY_TEXT = 160
#: At most this many rows in each pass-rate table of summary.md (the changed cells get the rest).
SUMMARY_TABLE_ROWS = 80


def _table(rows: list[list[str]], header: list[str]) -> str:
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def _md_cell(agg: dict) -> str:
    worst = agg["worst"]
    n = sum(agg["counts"].values())
    if n > 1 and agg["n_total"]:
        return f"{SYMBOLS[worst]} {agg['n_pass']}/{agg['n_total']}"
    return SYMBOLS[worst]


def _rate(info: dict) -> str:
    return "–" if info["pass_rate"] is None else f"{100 * info['pass_rate']:.0f}%"


def _counts(counts: dict) -> str:
    return " ".join(f"{SYMBOLS.get(o, '?')}{n}" for o, n in counts.items())


def _show(v: dict) -> str:
    cause = f" {md_code(v['cause'])}" if v.get("cause") else ""
    return f"{SYMBOLS.get(v['outcome'], '?')} {md_text(v['outcome'])}{cause}"


def sources_markdown(model: dict, *, limit: int = 40) -> list[str]:
    """The directories read (nested runs included) and the default sources not included, with how to include
    them (escaped)."""
    out = [f"**Not included:** {md_code(n['path'])} ({md_text(n['what'])}); {md_text(n['include'])}."
           for n in model.get("not_included") or []]
    read = model.get("sources_read") or []
    listed = ", ".join(f"{md_code(s['path'])} ({s['records']})" for s in read[:limit])
    more = f" and {len(read) - limit} more" if len(read) > limit else ""
    history = model.get("history_read") or {}
    extra = (f"; release history: {md_code(', '.join(history['paths']))} ({history['records']})"
             if history.get("records") else "")
    out.append(f"Sources read (records): {listed}{more}{extra}.")
    labelled = [device + torch_label(model, device) for device in model.get("devices") or []]
    if any(label != device for label, device in zip(labelled, model.get("devices") or [])):
        out.append(f"Devices: {md_text(', '.join(labelled))}: their records differ by torch release.")
    return out + [""]


def render_markdown(loaded: Loaded, model: dict, the_diff: Diff | None = None) -> str:
    rows = loaded.rows
    out = ["# Conformance matrix", "",
           f"Generated {md_text(model['generated'])} from {len(rows)} checks in {len(model['runs'])} run(s); "
           f"pass {model['summary']['n_pass']}/{model['summary']['n_total']} (skips excluded). "
           "A cell shows its worst outcome and passing/total checks over all checks and dtypes.", "",
           "Legend: " + " · ".join(f"{SYMBOLS[o]} {o} ({MEANING[o]})" for o in WORST_FIRST), ""]
    out += sources_markdown(model)
    if model.get("mixed_suite_versions"):
        out += [f"**Mixed suite versions:** {md_text(model['mixed_suite_versions'])}.", ""]
    if model["problems"]:
        out += [f"**{len(model['problems'])} unreadable line(s) skipped:**", ""]
        out += [f"- {md_code(str(p['path']) + ':' + str(p['line']))} {md_text(p['reason'])}"
                for p in model["problems"][:200]]
        out.append("")
    for (device,), device_rows in sorted(group(rows, "device").items()):
        transforms = sorted({r["transform"] for r in device_rows}, key=loaded.transform_key)
        cells = group(device_rows, "subject", "transform")
        table = []
        for subject in model["subjects"]:
            if not any((subject["subject"], t) in cells for t in transforms):
                continue
            line = [md_text(subject["library"]), md_text(subject["spec"]), md_text(subject["subject"])]
            line += [_md_cell(aggregate(cells[(subject["subject"], t)])) if (subject["subject"], t) in cells else ""
                     for t in transforms]
            table.append(line)
        header = ["library", "spec", "subject"] + [md_text(t) for t in transforms]
        out += [f"## {md_text(device + torch_label(model, device))}", "", _table(table, header), ""]
    out += ["## Pass rate per library", ""]
    out.append(_table([[md_text(lib), _rate(i), f"{i['n_pass']}/{i['n_total']}", _counts(i["counts"])]
                       for lib, i in model["libraries"].items()], ["library", "pass rate", "pass/total", "outcomes"]))
    out += render_definitions_markdown(model)
    out += ["", "## Causes", ""]
    if model["causes"]:
        out.append(_table([[md_code(c["cause"]), str(c["total"]), str(c["matrix_cells"]),
                            ", ".join(f"{md_text(k)} {v}" for k, v in c["by_library"].items()),
                            ", ".join(f"{md_text(k)} {v}" for k, v in c["by_outcome"].items())]
                           for c in model["causes"]],
                          ["cause", "checks", "cells", "by library", "by outcome"]))
    else:
        out.append("No failures with a recorded cause.")
    out += ["", "## Runs", ""]
    out.append(_table([[md_code(r["run"]), md_text(r["started"]),
                        md_text(r["age"] + (" (stale)" if r["stale"] else "")), md_text(", ".join(r["devices"])),
                        md_text(", ".join(r["torch"])), md_code(r["suite_sha"] or ""), str(r["cells"])]
                       for r in model["runs"]],
                      ["run", "started (UTC)", "age", "devices", "torch", "suite sha", "cells shown"]))
    out += render_agreement_markdown(model.get("agreement") or [])
    out += render_history_markdown(model.get("history") or {})
    out += render_exchange_markdown(model.get("exchange") or {})
    out += render_bench_markdown(model.get("bench") or [])
    if the_diff is not None:
        out += ["", render_diff_markdown(the_diff, limit=50)]
    return "\n".join(out) + "\n"


def render_history_markdown(history: dict) -> list[str]:
    """Per library: its releases, the environments that recorded them, and each subject x transform that changed."""
    if not history:
        return []
    out = ["", "## Across releases", "",
           "A release's status counts what the checks found, known failures included; CPU cells only."]
    for library, entry in history.items():
        out += ["", f"### {md_text(library)}: {' → '.join(md_text(v) for v in entry['releases'])}", ""]
        out += [f"- {environment_line(e, code=md_code, text=md_text)}" for e in entry["environments"]]
        out += [f"- {', '.join(md_text(v) for v in entry['pinned'])}: the matrix above (pinned)", "",
                history_counts(entry) + ".", ""]
        changed = [row for row in entry["rows"] if row["changed_in"]]
        if changed:
            out.append(_table([[md_text(row["subject"]), md_text(row["transform"])]
                               + [history_status(row["by_release"].get(v), code=md_code, text=md_text,
                                                 symbols=SYMBOLS) for v in entry["releases"]]
                               + [", ".join(md_text(v) for v in row["changed_in"])] for row in changed],
                              ["subject", "transform", *(md_text(v) for v in entry["releases"]), "changed in"]))
    return out


def render_exchange_markdown(exchange: dict) -> list[str]:
    """Per exchange format, the cross-framework table: rows export, columns import (docs/nir.md)."""
    out = []
    for fmt, table in exchange.items():
        out += ["", f"## Across frameworks: {md_text(fmt.upper())}", "",
                "Rows: the network its library exports; columns: the format's own semantics, the round trip, "
                "and each importing library. A cell shows its worst outcome and the causes found.", ""]
        rows = [[md_text(row["subject"])]
                + [_exchange_cell(row["cells"].get(column)) for column in table["columns"]] for row in table["rows"]]
        out.append(_table(rows, ["exported by", *(md_text(c) for c in table["columns"])]))
    return out


def _exchange_cell(cell: dict | None) -> str:
    if cell is None:
        return ""
    causes = ", ".join(md_code(c) for c in cell["causes"])
    return f"{SYMBOLS[cell['worst']]} {md_text(cell['worst'])}" + (f" {causes}" if causes else "")


def render_definitions_markdown(model: dict) -> list[str]:
    """One line per transform and check shown, from their definitions (report_data.descriptions)."""
    docs = model.get("descriptions") or {}
    out = []
    for title, kind in (("Transforms", "transforms"), ("Checks", "checks")):
        items = docs.get(kind) or {}
        if items:
            out += ["", f"## {title}", ""]
            out += [f"- {md_code(name)}: {md_text(text) if text else '(not defined by this suite)'}"
                    for name, text in items.items()]
    return out


def render_agreement_markdown(agreement: list[dict]) -> list[str]:
    """The CPU/CUDA agreement table (``cpu_vs_cuda`` cells): which subjects disagree between devices, by how much."""
    if not agreement:
        return []
    bad = [a for a in agreement if a["worst"] not in ("pass", "skip")]
    out = ["", "## CPU/CUDA agreement", "",
           f"The same module, parameters and input on both devices: {len(bad)} of {len(agreement)} subject(s) "
           "disagree (or could not be compared).", ""]
    out.append(_table([[md_text(a["library"]), md_text(a["subject"]),
                        f"{SYMBOLS.get(a['worst'], '?')} {md_text(a['worst'])}", error_size(a["max_abs_err"]),
                        error_size(a["max_rel_err"]), md_code(a["cause"]) if a["cause"] else "",
                        md_text((a["message"] or "").splitlines()[0][:160]) if a["message"] else ""]
                       for a in agreement],
                      ["library", "subject", "worst", "max abs err", "max rel err", "cause", "message"]))
    return out


def render_bench_markdown(bench: list[dict]) -> list[str]:
    out = []
    for run in bench:
        out += ["", f"## Speed relative to the spec ({md_text(run['device'])}, {md_text(run['profile'])} profile)",
                "", f"From {md_code(run['source'])}, {md_text(run['started'])}: median of interleaved "
                "(subject time / spec time), or compiled / eager; peak MiB of one forward+backward.", ""]
        rows = []
        for library, items in run["libraries"].items():
            for item in items:
                memory = "" if item["mem_subject"] is None or item["mem_reference"] is None else \
                    f"{item['mem_subject'] / 2**20:.1f} / {item['mem_reference'] / 2**20:.1f}"
                rows.append([md_text(library), md_text(item["subject"]), md_text(item["size"]),
                             md_text(item["mode"]), "" if item["ratio"] is None else f"{item['ratio']:.2f}×",
                             memory])
        out.append(_table(rows, ["library", "subject", "size", "mode", "ratio", "peak MiB subject / spec"]))
    return out


def diff_summary(the_diff: Diff) -> str:
    return (f"{len(the_diff.regressions)} regression(s), {len(the_diff.fixes)} fix(es), "
            f"{len(the_diff.changed_causes)} changed cause(s), {len(the_diff.changed_outcomes)} other outcome "
            f"change(s), {len(the_diff.new)} new, {len(the_diff.removed)} removed")


#: The diff's lists, most important first: (title, attribute, pairs (cell, old, new) or singles (cell, value)).
DIFF_LISTS = (("Regressions", "regressions", True), ("Fixes", "fixes", True),
              ("Changed causes", "changed_causes", True), ("Other outcome changes", "changed_outcomes", True),
              ("New cells", "new", False), ("Removed cells", "removed", False))


def render_diff_markdown(the_diff: Diff, limit: int | None = None) -> str:
    out = [f"## Diff against {md_code(the_diff.against)}", "", diff_summary(the_diff), ""]
    note = left_out_note(the_diff.environment, the_diff.left_out)
    if note:
        out += [f"Like with like: {md_text(note)}.", ""]
    for title, attribute, pairs in DIFF_LISTS:
        items = getattr(the_diff, attribute)
        if not items:
            continue
        shown = items if limit is None else items[:limit]
        out += [f"### {title} ({len(items)})", ""]
        if pairs:
            out.append(_table([[md_code(c), _show(o), _show(n)] for c, o, n in shown], ["cell", "before", "now"]))
            if len(shown) < len(items):
                out.append(f"\n… and {len(items) - len(shown)} more (diff.md)")
        else:
            out += [f"- {md_code(c)} {_show(v)}" for c, v in shown]
            if len(shown) < len(items):
                out.append(f"- … and {len(items) - len(shown)} more (diff.md)")
        out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------------ summary
def _short(text, limit: int = SUMMARY_TEXT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _size(line: str) -> int:
    return len(line.encode("utf-8", "replace")) + 1


class _Budget:
    """Lines of a document that must stay under ``limit`` UTF-8 bytes."""

    def __init__(self, limit: int):
        self.lines: list[str] = []
        self.used = 0
        self.limit = limit

    def add(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(line)
            self.used += _size(line)

    def add_items(self, items: list[str], more: str, *, reserve: int, most: int | None = None) -> None:
        """As many of ``items`` (at most ``most``) as fit with ``reserve`` bytes left for what follows; then ``more``
        (formatted with ``n``, the number left out)."""
        for i, item in enumerate(items):
            if (most is not None and i >= most) \
                    or self.used + _size(item) + _size(more.format(n=len(items))) + reserve > self.limit:
                self.add(more.format(n=len(items) - i))
                return
            self.add(item)


def render_summary(loaded: Loaded, model: dict, the_diff: Diff | None = None, *,
                   report_url: str | None = None, limit: int = SUMMARY_LIMIT) -> str:
    """summary.md: the pass rate per library and per transform, every cell that changed against the baseline (when
    diffing) and where the full report is, in under ``limit`` UTF-8 bytes whatever the input: a list that does not
    fit ends with how many of its entries were left out."""
    reserve = 3000  # room for the headings and "left out" lines of the sections after the one being filled
    doc = _Budget(limit - 200)  # the last line (or the cut note) always fits
    s = model["summary"]
    rate = f" ({100 * s['n_pass'] / s['n_total']:.1f}%)" if s["n_total"] else ""
    url = md_url(report_url) if report_url else None
    # Links relative to summary.md, which is written beside them: they work in the repository and in an artifact.
    where = f"[matrix.html]({url})" if url else "[matrix.html](matrix.html) (interactive)"
    doc.add("# Conformance summary", "",
            f"{len(loaded.rows)} checks from {len(model['runs'])} run(s), generated {md_text(model['generated'])}: "
            f"pass {s['n_pass']}/{s['n_total']}{rate} (skips excluded); {_counts(s['counts'])}.", "",
            "Outcomes: " + " · ".join(f"{SYMBOLS[o]} {o}" for o in WORST_FIRST) + ".", "",
            f"Full report: {where}; every cell in [matrix.md](matrix.md), the data in [matrix.json](matrix.json)"
            + (", every change in [diff.md](diff.md)" if the_diff is not None else "") + ".", "",
            (f"Compared against: {md_code(_short(the_diff.against))}." if the_diff is not None else
             "Compared against: nothing (no --diff-against given: no changed-cells section)."), "")
    doc.add(*sources_markdown(model, limit=10))
    if model.get("mixed_suite_versions"):
        doc.add(f"**Mixed suite versions:** {md_text(_short(model['mixed_suite_versions'], 1500))}.", "")
    if model["problems"]:
        doc.add(f"**{len(model['problems'])} unreadable line(s) skipped** (listed in matrix.md).", "")
    if the_diff is not None:
        doc.add(f"**Against {md_code(_short(the_diff.against))}:** {diff_summary(the_diff)}.", "")
        note = left_out_note(the_diff.environment, the_diff.left_out)
        if note:
            doc.add(f"Like with like: {md_text(_short(note, 1500))}.", "")
    for title, kind, name in (("library", "libraries", "libraries"), ("transform", "transforms_summary", "transforms")):
        doc.add(f"## Pass rate per {title}", "", f"| {title} | pass rate | pass/total | outcomes |",
                "|---|---|---|---|")
        doc.add_items([f"| {md_text(_short(key))} | {_rate(info)} | {info['n_pass']}/{info['n_total']} | "
                       f"{_counts(info['counts'])} |" for key, info in model[kind].items()],
                      f"| … and {{n}} more {name} (matrix.md) | | | |", reserve=reserve,
                      most=SUMMARY_TABLE_ROWS)
        doc.add("")
    if the_diff is not None:
        doc.add("## Changes against the baseline", "")
        for title, attribute, pairs in DIFF_LISTS:
            items = getattr(the_diff, attribute)
            if not items:
                continue
            doc.add(f"### {title} ({len(items)})", "")
            if pairs:
                doc.add("| cell | before | now |", "|---|---|---|")
                lines = [f"| {md_code(_short(c))} | {_show_short(o)} | {_show_short(n)} |" for c, o, n in items]
                doc.add_items(lines, "| … and {n} more (diff.md) | | |", reserve=reserve)
            else:
                lines = [f"- {md_code(_short(c))} {_show_short(v)}" for c, v in items]
                doc.add_items(lines, "- … and {n} more (diff.md)", reserve=reserve)
            doc.add("")
    text = "\n".join(doc.lines) + "\n"
    if len(text.encode("utf-8", "replace")) > limit:  # cannot happen with the reserves above; never exceed anyway
        cut = text.encode("utf-8", "replace")[:limit - 200].decode("utf-8", "ignore").rsplit("\n", 1)[0]
        text = cut + "\n\n… (cut to fit a pull-request comment; the full report is matrix.md)\n"
    return text


def _show_short(v: dict) -> str:
    return _show({"outcome": v["outcome"], "cause": _short(v["cause"]) if v.get("cause") else None})
