"""One escaping function per output format, for every string the report takes from a record, an exception or a
library (subject ids, causes, messages, environments, library names and versions, paths).

- HTML: :func:`html_text` (text and attribute values).
- Markdown: :func:`md_text` (inline text, also inside a table cell), :func:`md_code` (an inline code span),
  :func:`md_fence` (a fenced block), :func:`md_url` (a link target; http(s) only).
- JSON: :func:`json_text` (valid JSON that is also safe inside an HTML ``<script>`` element).
- Terminal and CI logs: :func:`terminal_text`.
- Shell: :func:`cell_command` (the command that re-runs a cell, every argument quoted).

In every format, control characters (ANSI escape sequences start with one), C1 controls and the Unicode direction
marks, embeddings, overrides and isolates are shown as visible escapes (``\\x1b``, ``\\u202e``) instead of acting on
the reader's screen (``\\u202e`` would show "evil" as "live").

>>> md_text("a|b <script> [x](javascript:y)")
'a&#124;b &lt;script&gt; [x]\\\\(javascript:y)'
>>> terminal_text("\\x1b[31mred\\nline")
'\\\\x1b[31mred\\\\nline'
"""

from __future__ import annotations

import html
import json
import re
import shlex

#: Line/paragraph separators, the direction marks (Arabic letter mark, left-to-right and right-to-left marks),
#: embeddings, overrides and isolates, and the byte order mark: invisible, most able to reorder the text around
#: them.
_INVISIBLE = r"\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
# C0 controls except tab and newline, DEL, C1 controls, and the invisible characters above.
_CONTROL = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\t]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: object, *, one_line: bool = False) -> str:
    """``value`` as text with control characters shown as escapes; with ``one_line`` newlines and tabs become
    spaces. ``None`` is the empty string; a lone surrogate (valid in JSON, not encodable) becomes U+FFFD."""
    text = "" if value is None else str(value)
    if one_line:
        text = _LINE_BREAKS.sub(" ", text)
    text = _CONTROL.sub(_visible, text)
    return _SURROGATE.sub("\ufffd", text)


# --------------------------------------------------------------------------------------------------------- HTML
def html_text(value: object) -> str:
    """Text or an attribute value (quoted) in HTML."""
    return html.escape(visible(value), quote=True)


# ----------------------------------------------------------------------------------------------------- Markdown
# Entities for what would open HTML or an autolink or break a table row; backslash escapes for what would open a
# code span, emphasis or strike-through. A link or image needs "](" or "][" (GitHub has no reference definitions
# for a shortcut "[x]"), so only those are broken and brackets stay readable; so do underscores inside a word.
_MD_TABLE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "\\": "&#92;", "`": "\\`",
                           "*": "\\*", "~": "\\~"})
_MD_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_MD_LINK = re.compile(r"\]([(\[])")
_PLAIN_CODE = re.compile(r"[^`\\<>&]+")


def md_text(value: object) -> str:
    """Inline Markdown text, one line, safe in a GitHub table cell: renders as exactly the characters given."""
    text = _MD_UNDERSCORE.sub(r"\\_", visible(value, one_line=True).translate(_MD_TABLE))
    return _MD_LINK.sub(r"]\\\1", text)


def md_code(value: object) -> str:
    """An inline code span of ``value``, safe in a table cell. Plain text goes between backticks (``|`` as ``\\|``,
    which GitHub tables need); text with a backtick, backslash, ``<``, ``>`` or ``&`` becomes ``<code>`` around
    :func:`md_text`, since a code span can neither hold every backtick run nor decode entities."""
    text = visible(value, one_line=True).strip()
    if not text:
        return ""
    if _PLAIN_CODE.fullmatch(text):
        return "`" + text.replace("|", "\\|") + "`"
    return "<code>" + md_text(text) + "</code>"


def md_fence(value: object, info: str = "") -> list[str]:
    """A fenced code block holding ``value`` verbatim (control characters made visible): the fence is longer
    than any run of backticks in the text, so no line of it can close the block."""
    text = visible(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *text.splitlines(), fence]


_URL_SAFE = re.compile(r"[^A-Za-z0-9:/?#@!$&'*+,;=%._~-]")


def md_url(value: object) -> str | None:
    """A link target for ``[text](target)``: http(s) only (None otherwise), every character that could end the
    target or open markup percent-encoded."""
    text = "" if value is None else str(value).strip()
    if not re.match(r"https?://", text, re.I):
        return None
    return _URL_SAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "replace")), text)


# --------------------------------------------------------------------------------------------------------- JSON
_JSON_UNSAFE = re.compile(rf"[<>&\x7f-\x9f{_INVISIBLE}\ud800-\udfff]")


def json_text(data, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``data`` as JSON (NaN refused). Besides what JSON escapes itself (C0 controls), ``<``, ``>``, ``&``, C1
    controls, direction overrides and lone surrogates are ``\\u`` escapes: the text can be embedded in an HTML
    ``<script>`` element, printed on a terminal and written as UTF-8."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, indent=indent, sort_keys=sort_keys,
                      separators=(",", ":") if indent is None else (",", ": "))
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# ----------------------------------------------------------------------------------------------------- terminal
def terminal_text(value: object) -> str:
    """One line for a terminal or a CI log: newlines as ``\\n``, every control character as a visible escape."""
    text = "" if value is None else str(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return visible(text)


# -------------------------------------------------------------------------------------------------------- shell
def cell_command(cell_id: str, *, profile: str | None = None, load: str | None = None) -> str:
    """The shell command that re-runs one cell, every value shell-quoted: pasted into a shell it runs
    ``python -m conformance.cell`` on exactly ``cell_id`` (with that profile, loading ``load`` first), nothing else.

    >>> cell_command("a|b$(x)|c|cpu|float32", profile="ci")
    "CONFORMANCE_PROFILE=ci python -m conformance.cell 'a|b$(x)|c|cpu|float32'"
    """
    prefix = f"CONFORMANCE_PROFILE={shlex.quote(profile)} " if profile else ""
    loading = f" --load {shlex.quote(load)}" if load else ""
    return f"{prefix}python -m conformance.cell{loading} {shlex.quote(cell_id)}"
