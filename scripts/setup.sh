# Sourced by ./run: create .venv once, install (again only when the inputs changed), activate it.
# torch is pinned by constraints.txt to the CPU wheel; torchvision/torchaudio are never installed.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
stamp=.venv/.conformance-installed
wanted=$(cat pyproject.toml constraints.txt scripts/setup.sh scripts/install-libraries.sh \
         scripts/build_bitorch_engine.py | sha1sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "setup: installing (torch pinned, see constraints.txt)" >&2
  quiet() { { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2; }
  python -m pip install --quiet -c constraints.txt -e . 2>&1 | quiet
  bash scripts/install-libraries.sh 2>&1 | quiet
  echo "$wanted" > "$stamp"
fi
export CONFORMANCE_CACHE_DIR="${CONFORMANCE_CACHE_DIR:-$PWD/.cache}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$CONFORMANCE_CACHE_DIR/inductor}"
