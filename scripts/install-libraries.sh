#!/usr/bin/env bash
# Install the libraries under test into the active environment, pinned, without torchvision/torchaudio and
# without moving torch: spikingjelly and norse declare torchvision/torchaudio but import without them, so they
# (and sinabs, whose samna dependency is hardware tooling) are installed --no-deps with their real
# dependencies listed here. A library that fails to install only turns its cells to `skip`.
set -uo pipefail
pip_install() { python -m pip install --quiet -c constraints.txt "$@"; }
# with_heartbeat comes from scripts/setup.sh (./run); alone, this script runs each step plainly
declare -F with_heartbeat >/dev/null || with_heartbeat() { shift; "$@"; }
# step NAME WHAT CMD...: say what is installed, then run CMD with a heartbeat labelled by NAME
step() { local label="install-libraries: $1"; echo "$label: $2 ..." >&2; shift 2; with_heartbeat "$label" "$@"; }
step "opacus, snntorch, bitorch, brevitas" "from wheels" \
  pip_install "opacus==1.6.0" "snntorch==1.0.0" "bitorch==0.4.1" "brevitas==0.13.4" \
  || echo "install-libraries: some of opacus/snntorch/bitorch/brevitas failed; their cells will skip" >&2
step "dependencies" "what spikingjelly, norse and sinabs import" \
  pip_install loguru packaging scipy tqdm matplotlib h5py pbr "nir<=1.0.4" nirtorch \
  || echo "install-libraries: dependencies of spikingjelly/norse/sinabs failed" >&2
step "spikingjelly, norse, sinabs" "--no-deps (they declare torchvision/torchaudio, never installed)" \
  pip_install --no-deps "spikingjelly==2.0.0" "norse==1.1.0" "sinabs==3.1.3" \
  || echo "install-libraries: spikingjelly/norse/sinabs failed; their cells will skip" >&2
# bdpy (its FeatureExtractor is a transform) declares pandas/scikit-learn/hdf5storage/tqdm and, for its torch extra,
# torchvision; `import bdpy.dl.torch` needs only numpy, h5py, scipy (bdpy.bdata), pyyaml (bdpy.util), pillow and torch.
step "bdpy" "--no-deps, with what bdpy.dl.torch imports" bash -c 'python -m pip install --quiet -c constraints.txt pyyaml h5py scipy pillow \
  && python -m pip install --quiet -c constraints.txt --no-deps "bdpy==0.26"' \
  || echo "install-libraries: bdpy failed; its cells will skip" >&2
# Triton for this project's own kernels (kernels/): compiled on CUDA, its interpreter runs them on the CPU. The
# constraints keep torch where it is; without Triton the kernels' cells skip.
step "triton" "the kernels run in its interpreter on the CPU" pip_install "triton==3.9.0" \
  || echo "install-libraries: triton failed; the kernels' cells will skip" >&2
# bitorch-engine 0.1.0, its two CPU layers only. No wheel exists, its setup.py builds its C++ extensions only under
# "develop" and it requires bitorch~=0.3 (we test bitorch 0.4.1), so it is never pip-installed: the pinned sdist
# (hash-checked) is unpacked into .venv/src, scripts/build_bitorch_engine.py compiles the two CPU extensions in place
# (its docstring explains how; compiler output in .venv/src/bitorch_engine-build.log) and a .pth file puts the source
# directory on sys.path. Needs a C++ compiler.
install_bitorch_engine() {
  local version=0.1.0 sha256=b8b39acdc6d958035be0b88456d4812a3c1960e29710e1fd475ee8067894256f
  local site src download
  site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  src="$(python -c 'import sys; print(sys.prefix)')/src"
  rm -f "$site/bitorch_engine.pth"  # a half-built copy must not be importable (its cells skip instead)
  download=$(mktemp -d) || return 1
  python -m pip download --quiet --no-deps --no-binary=:all: -d "$download" "bitorch-engine==$version" \
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
step "bitorch-engine" "0.1.0's C++ extensions built from its sdist, 1-3 minutes (log: .venv/src/bitorch_engine-build.log)" \
  install_bitorch_engine || echo "install-libraries: bitorch-engine failed; its cells will skip" >&2
exit 0
