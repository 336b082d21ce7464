"""The command lines' argument parser: bad usage is one line, never argparse's usage block."""

from __future__ import annotations

import argparse

from .escape import terminal_text


class OneLineParser(argparse.ArgumentParser):
    """Bad usage is one line on stderr naming the problem and the valid usage (choices included), exit status 2.
    Its subcommands' parsers are of this class too."""

    def error(self, message: str):
        usage = " ".join(self.format_usage().split())
        self.exit(2, f"{self.prog}: error: {terminal_text(message)} ({usage})\n")
