"""Text from libraries, exceptions and records made safe to print on a terminal.

A library's error message can carry ANSI escape sequences or other control characters that would recolour,
move the cursor or hide text in a terminal or a CI log. What is printed keeps newlines and tabs; every other
control character is shown as a visible escape.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: object, *, one_line: bool = False) -> str:
    """``text`` with control characters (ANSI escapes included) shown as ``\\x1b``-style escapes; with
    ``one_line`` newlines and tabs too."""
    text = str(text)
    if one_line:
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
