#!/usr/bin/env bash
# Install the libraries under test into the active environment, pinned, without torchvision/torchaudio and
# without moving torch: spikingjelly and norse declare torchvision/torchaudio but import without them, so they
# (and sinabs, whose samna dependency is hardware tooling) are installed --no-deps with their real
# dependencies listed here. A library that fails to install only turns its cells to `skip`.
set -uo pipefail
pip_install() { python -m pip install --quiet -c constraints.txt "$@"; }
pip_install "opacus==1.6.0" "snntorch==1.0.0" "bitorch==0.4.1" "brevitas==0.13.4" \
  || echo "install-libraries: some of opacus/snntorch/bitorch/brevitas failed; their cells will skip" >&2
pip_install loguru packaging scipy tqdm matplotlib h5py pbr "nir<=1.0.4" nirtorch \
  || echo "install-libraries: dependencies of spikingjelly/norse/sinabs failed" >&2
pip_install --no-deps "spikingjelly==2.0.0" "norse==1.1.0" "sinabs==3.1.3" \
  || echo "install-libraries: spikingjelly/norse/sinabs failed; their cells will skip" >&2
# bdpy (its FeatureExtractor is a transform) declares pandas/scikit-learn/hdf5storage/tqdm and, for its torch extra,
# torchvision; `import bdpy.dl.torch` needs only numpy, h5py, scipy (bdpy.bdata), pyyaml (bdpy.util), pillow and torch.
pip_install pyyaml h5py scipy pillow && pip_install --no-deps "bdpy==0.26" \
  || echo "install-libraries: bdpy failed; its cells will skip" >&2
# Triton for this project's own kernels (kernels/): compiled on CUDA, its interpreter runs them on the CPU. The
# constraints keep torch where it is; without Triton the kernels' cells skip.
pip_install "triton==3.9.0" \
  || echo "install-libraries: triton failed; the kernels' cells will skip" >&2
exit 0
