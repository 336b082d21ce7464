"""Build bitorch-engine 0.1.0's two CPU extensions in place, inside its unpacked sdist, without installing it.

Usage: ``python scripts/build_bitorch_engine.py SDIST_DIR`` (called by ``scripts/install-libraries.sh``). Exit status
0 when both extensions are built and the two CPU layers import; 1 otherwise, with the reason on stderr.

Why a wrapper. bitorch-engine 0.1.0 ships no wheel, and its ``setup.py`` declares its C++ extensions only when the
word ``develop`` is in ``sys.argv`` (``if "develop" not in sys.argv: ... ext_modules = []``): the one way it is
meant to be built is ``setup.py develop`` / ``pip install -e``. That would also resolve its requirements
(``bitorch~=0.3``, replacing the bitorch 0.4.1 this suite pins and tests) and register the source tree in the
environment. We want neither, only the compiled ``.so`` files next to the package's sources. So this script runs
``setup.py build_ext --inplace`` with an argument list whose ``in`` test also answers True for ``"develop"``, the
only place ``setup.py`` looks for that word, while everything setuptools parses (it iterates and slices the list)
still reads ``build_ext --inplace``. No file of the library is edited and nothing of it is patched at run time.

``BIE_BUILD_ONLY``, the library's own switch, limits the build to the two CPU extensions (the CUDA and CUTLASS ones
need nvcc and CUTLASS); ``MAX_JOBS`` (default 2) is torch's limit on parallel compile jobs under ninja. The source
directory is made importable by the caller (a ``.pth`` file), never by pip, so bitorch-engine's requirements are
never resolved.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

CPU_EXTENSIONS = ("bitorch_engine/layers/qlinear/binary/cpp", "bitorch_engine/layers/qconv/binary/cpp")
BUILT = ("binary_linear_cpp", "binary_conv_cpp")  # module names under bitorch_engine/extensions/
IMPORT_CHECK = ("import torch\n"
                "from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP\n"
                "from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP\n"
                "import bitorch_engine.extensions.binary_linear_cpp, bitorch_engine.extensions.binary_conv_cpp\n")


class _ArgvAnsweringDevelop(list):
    """``sys.argv`` for setup.py: ``"develop" in argv`` is True, every other use sees the real arguments."""

    def __contains__(self, item: object) -> bool:
        return item == "develop" or list.__contains__(self, item)


def _run_setup(source: Path) -> None:
    os.environ["BIE_BUILD_ONLY"] = " ".join(CPU_EXTENSIONS)
    os.environ.setdefault("MAX_JOBS", "2")
    os.chdir(source)  # setup.py opens README.md and imports the extension declarations by relative path
    sys.path.insert(0, str(source))
    # Not build_ext --parallel: torch's BuildExtension writes one build.ninja per build directory, which two
    # extensions built at once would overwrite under each other (a missing .o at link time).
    sys.argv = _ArgvAnsweringDevelop(["setup.py", "build_ext", "--inplace"])
    runpy.run_path("setup.py", run_name="__main__")


def _built(source: Path) -> list[str]:
    folder = source / "bitorch_engine" / "extensions"
    return [name for name in BUILT if not any(folder.glob(f"{name}*.so"))]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    source = Path(argv[0]).resolve()
    if not (source / "setup.py").is_file():
        print(f"build_bitorch_engine: no setup.py in {source}", file=sys.stderr)
        return 1
    try:
        _run_setup(source)
    except SystemExit as stop:  # setuptools exits with a message on a compiler error
        if stop.code not in (None, 0):
            print(f"build_bitorch_engine: setup.py build_ext failed: {stop.code}", file=sys.stderr)
            return 1
    missing = _built(source)
    if missing:
        print(f"build_bitorch_engine: not built: {', '.join(missing)}", file=sys.stderr)
        return 1
    # A fresh interpreter with only the source directory added, as the .pth file will add it.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")])))
    check = subprocess.run([sys.executable, "-c", IMPORT_CHECK], cwd="/", env=env, capture_output=True, text=True)
    if check.returncode:
        print(f"build_bitorch_engine: the built layers do not import:\n{check.stderr[-2000:]}", file=sys.stderr)
        return 1
    print(f"build_bitorch_engine: built {', '.join(BUILT)} in {source / 'bitorch_engine' / 'extensions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
