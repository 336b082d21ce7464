# Sourced by ./run: create .venv once, install (again only when the inputs changed), activate it.
# torch is pinned by constraints.txt to the CPU wheel; torchvision/torchaudio are never installed.
# Every step says what it does and how long it took; a long one prints a line every 30 s while it runs.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
setup_started=$(date +%s)
# with_heartbeat LABEL CMD...: run CMD, printing "LABEL: still running (N s)" every CONFORMANCE_HEARTBEAT_S seconds
# (default 30), then how long it took.
with_heartbeat() {
  local label="$1" started status
  shift
  started=$(date +%s)
  "$@" &
  local pid=$!
  ( while sleep "${CONFORMANCE_HEARTBEAT_S:-30}"; do
      echo "$label: still running ($(( $(date +%s) - started )) s)" >&2
    done ) &
  local beat=$!
  status=0
  wait "$pid" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  echo "$label: $([ "$status" -eq 0 ] && echo done || echo "FAILED (exit $status)") in $(( $(date +%s) - started )) s" >&2
  return "$status"
}
export -f with_heartbeat
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $("$PYTHON" --version 2>&1)" >&2
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
stamp=.venv/.conformance-installed
# What the installation depends on: these files and the libraries' declarations (readable once the suite is in)
inputs() {
  cat pyproject.toml constraints.txt scripts/setup.sh scripts/install-libraries.sh scripts/build_bitorch_engine.py
  python -m conformance.libraries list 2>/dev/null || true
}
wanted=$(inputs | sha1sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "setup: installing into .venv (first use, or pyproject.toml/constraints.txt/scripts changed); about 3-5 minutes" >&2
  quiet() { { grep --line-buffered -v "is ignored: it is neither a file nor a directory" || true; } >&2; }
  echo "setup: the suite and its test tools: $(grep -vE '^\s*(#|$)' constraints.txt | tr '\n' ' ')" >&2
  # the extras the suite's own tools use; the nir and onnx extras' packages come pinned from install-libraries.sh
  with_heartbeat "setup: suite" \
    bash -c 'python -m pip install --quiet -c constraints.txt -e ".[parallel,bench,report]" 2>&1' | quiet
  bash scripts/install-libraries.sh 2>&1 | quiet
  inputs | sha1sum | cut -d' ' -f1 > "$stamp"
  echo "setup: ready in $(( $(date +%s) - setup_started )) s: $(python -c 'import torch; print("torch", torch.__version__)')" >&2
fi
export CONFORMANCE_CACHE_DIR="${CONFORMANCE_CACHE_DIR:-$PWD/.cache}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$CONFORMANCE_CACHE_DIR/inductor}"
