"""The eval column leaves out the project's own modules (transforms/modes.py, MODELESS_LIBRARIES) because they read no
mode: held to it here, so a spec module or kernel that gains a mode-dependent path gets its eval cells back."""

import ast
from pathlib import Path

from conformance.transforms.modes import MODELESS_LIBRARIES

ROOT = Path(__file__).resolve().parents[2]
#: where each modeless library's modules are defined
SOURCES = {"reference": ["qsnn_reference", "conformance/subjects/reference.py"],
           "kernels": ["qsnn_kernels", "conformance/subjects/kernels.py"]}


def mode_reads(source: str) -> list[str]:
    """Where ``source`` reads a module's mode or defines its own mode methods: ``.training``, ``def train``,
    ``def eval``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            found.append(f"line {node.lineno}: .training")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("train", "eval"):
            found.append(f"line {node.lineno}: def {node.name}")
    return sorted(found, key=lambda where: int(where.split()[1].rstrip(":")))


def test_the_modeless_libraries_read_no_mode():
    assert set(SOURCES) == set(MODELESS_LIBRARIES)
    found = []
    for library, places in SOURCES.items():
        for place in places:
            path = ROOT / place
            for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
                found += [f"{file.relative_to(ROOT)} {where}" for where in mode_reads(file.read_text())]
    assert not found, f"modules of a library the eval column leaves out read a mode: {found}"


def test_a_mode_read_is_found():
    source = "class A:\n    def forward(self, x):\n        return x if self.training else -x\n    def eval(self):\n        pass\n"
    assert mode_reads(source) == ["line 3: .training", "line 4: def eval"]
