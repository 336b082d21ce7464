#!/usr/bin/env bash
# Install the libraries under test into the active environment, pinned, without torchvision/torchaudio and without
# moving torch. What is installed and how comes from each library's declaration beside its adapter
# (python -m conformance.libraries list): most with their dependencies; those whose declared dependencies would pull
# torchvision/torchaudio or hardware tooling --no-deps, with what they really import; bitorch-engine built from its
# sdist. A library that fails to install only turns its cells to `skip`.
# Arguments (the history's environments, noxfile.py): --release DISTRIBUTION==VERSION (repeatable) installs that
# release instead of the pin; --no-source-builds leaves out the libraries built from source (hqq, bitorch-engine).
set -uo pipefail
releases=()
source_builds=1
while [ "$#" -gt 0 ]; do
  case "$1" in
    --release) releases+=(--release "$2"); shift 2 ;;
    --no-source-builds) source_builds=0; shift ;;
    *) echo "install-libraries: unknown argument $1 (--release DISTRIBUTION==VERSION, --no-source-builds)" >&2
       exit 2 ;;
  esac
done
pip_install() { python -m pip install --quiet -c constraints.txt "$@"; }
# a release given with --release is not in constraints.txt, which pins no library: pip takes it as asked
declared() { python -m conformance.libraries "$@" ${releases[@]+"${releases[@]}"} | tr '\n' ' '; }
# with_heartbeat comes from scripts/setup.sh (./run); alone, this script runs each step plainly
declare -F with_heartbeat >/dev/null || with_heartbeat() { shift; "$@"; }
# step NAME WHAT CMD...: say what is installed, then run CMD with a heartbeat labelled by NAME
step() { local label="install-libraries: $1"; echo "$label: $2 ..." >&2; shift 2; with_heartbeat "$label" "$@"; }
with_deps=$(declared requirements --with-deps) || exit 1
no_deps=$(declared requirements --no-deps) || exit 1
dependencies=$(declared dependencies) || exit 1
# shellcheck disable=SC2086 # the lists are words
step "libraries" "$with_deps" pip_install $with_deps \
  || echo "install-libraries: some of $with_deps failed; their cells will skip" >&2
# shellcheck disable=SC2086
step "dependencies" "$dependencies (what the --no-deps libraries import)" pip_install $dependencies \
  || echo "install-libraries: some of $dependencies failed" >&2
# shellcheck disable=SC2086
step "--no-deps libraries" "$no_deps" pip_install --no-deps $no_deps \
  || echo "install-libraries: some of $no_deps failed; their cells will skip" >&2
# bitorch-engine, its two CPU layers only. No wheel exists, its setup.py builds its C++ extensions only under
# "develop" and it requires an older bitorch than the one tested, so it is never pip-installed: the pinned sdist
# (hash-checked) is unpacked into .venv/src, scripts/build_bitorch_engine.py compiles the two CPU extensions in place
# (its docstring explains how; compiler output in .venv/src/bitorch_engine-build.log) and a .pth file puts the source
# directory on sys.path. Needs a C++ compiler.
install_bitorch_engine() {
  local distribution version sha256 site src download
  read -r distribution version sha256 < <(python -m conformance.libraries sdist bitorch_engine) || return 1
  site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  src="$(python -c 'import sys; print(sys.prefix)')/src"
  rm -f "$site/bitorch_engine.pth"  # a half-built copy must not be importable (its cells skip instead)
  download=$(mktemp -d) || return 1
  python -m pip download --quiet --no-deps --no-binary=:all: -d "$download" "$distribution==$version" \
    && echo "$sha256  $download/bitorch_engine-$version.tar.gz" | sha256sum --check --quiet - \
    && rm -rf "$src/bitorch_engine-$version" && mkdir -p "$src" \
    && tar -xzf "$download/bitorch_engine-$version.tar.gz" --no-same-owner -C "$src" \
    && { python scripts/build_bitorch_engine.py "$src/bitorch_engine-$version" > "$src/bitorch_engine-build.log" 2>&1 \
         || { tail -n 15 "$src/bitorch_engine-build.log" >&2; false; }; } \
    && echo "$src/bitorch_engine-$version" > "$site/bitorch_engine.pth"
  local status=$?
  rm -rf "$download"
  return $status
}
# hqq: no wheel exists. The pinned sdist (hash-checked) is built by pip without its dependencies (what it imports comes
# from the dependencies step) and with DISABLE_CUDA=1: otherwise its setup.py runs `python setup_cuda.py install` for
# its ATen/CUDA extension on every egg_info, ignoring the outcome. Pure Python: its layers run the PyTorch backend.
# Built in pip's isolated build environment (setuptools and wheel only; its setup.py imports no torch): a fresh .venv's
# setuptools 65 cannot build a wheel without the `wheel` package, which --no-build-isolation would need here.
install_hqq() {
  local distribution version sha256 download
  read -r distribution version sha256 < <(python -m conformance.libraries sdist hqq) || return 1
  download=$(mktemp -d) || return 1
  python -m pip download --quiet --no-deps --no-binary=:all: -d "$download" "$distribution==$version" \
    && echo "$sha256  $download/$distribution-$version.tar.gz" | sha256sum --check --quiet - \
    && DISABLE_CUDA=1 pip_install --no-deps "$download/$distribution-$version.tar.gz"
  local status=$?
  rm -rf "$download"
  return $status
}
if [ "$source_builds" -eq 1 ]; then
  step "hqq" "built from its sdist without its CUDA extension" install_hqq \
    || echo "install-libraries: hqq failed; its cells will skip" >&2
  step "bitorch-engine" "C++ extensions built from its sdist, 1-3 minutes (log: .venv/src/bitorch_engine-build.log)" \
    install_bitorch_engine || echo "install-libraries: bitorch-engine failed; its cells will skip" >&2
fi
exit 0
