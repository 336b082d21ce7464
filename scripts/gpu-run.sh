#!/usr/bin/env bash
# The CUDA run: every cuda cell of the matrix, the CUDA mutants, the benchmark's cuda profile and the kernels'
# GPU benchmark, in one go, on a machine with an NVIDIA GPU and a CUDA build of torch (torch is never installed
# or moved here: the run records whatever version the machine has).
#
#   scripts/gpu-run.sh [--stages matrix,mutants,bench,kernels] [--out DIR]
#   scripts/gpu-run.sh --download          # fill .whl/ with the pinned libraries (on a machine with a registry)
#
# The libraries under test come from wheels in .whl/ when it holds any (offline machines), otherwise from the
# package registry, pinned (their declarations: python -m conformance.libraries), --no-deps, into a private
# directory put first on PYTHONPATH; the machine's own torch, triton, cupy and numpy are used as they are. pytest
# and hypothesis are pinned as in constraints.txt so that both devices draw the same examples
# (conformance.core.strategies.stable_draws). A library that is missing turns its cells to `skip`. Each stage runs under a time limit (the whole run aims at
# GPU_RUN_BUDGET_S, default 570 s); what a stage recorded before its limit is kept. Where the copy of the tree carries
# stale git metadata (a device machine's), CONFORMANCE_SUITE_SHA and CONFORMANCE_SUITE_TIME name the suite's commit.
# GPU_RUN_SELECT narrows the matrix stage to the cells a pytest -k expression selects (re-recording a few cells).
#
# Output in DIR (default reports/cuda-run-<UTC stamp>): records.jsonl (one record per cell), mutants.log,
# bench-cuda.json (subject/spec ratios, as reports/bench/baseline-cuda.json), kernels-cuda.json, run.log. Check
# the records in as reports/cuda/<run>.jsonl and the report merges them as the CUDA columns:
#   cp DIR/records.jsonl reports/cuda/cuda-$(date -u +%Y%m%d).jsonl
#   python -m conformance.bench accept --device cuda --results DIR/bench-cuda.json
set -uo pipefail
cd "$(dirname "$0")/.."

# The libraries and what they import, pinned, from their declarations (python -m conformance.libraries), and the
# test tools as constraints.txt pins them. Everything goes in --no-deps; a dependency the machine already imports
# (its numpy, scipy, matplotlib) is left to the machine.
gpu_requirements() {
  python3 -m conformance.libraries requirements --gpu
  python3 -m conformance.libraries dependencies --gpu | while read -r requirement; do
    module=${requirement%%[=<>!~]*}
    python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$module') is not None)" \
      && echo "$requirement"
  done
  grep -E '^(pytest|hypothesis)==' constraints.txt
}
stages="matrix,mutants,bench,kernels"
out="reports/cuda-run-$(date -u +%Y%m%dT%H%M%S)"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --stages) stages="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --download)  # for the GPU machine's Python (GPU_PYTHON_VERSION, default 3.12: hypothesis ships per-version wheels)
      mkdir -p .whl
      mapfile -t wanted < <(python3 -m conformance.libraries requirements --gpu;
                            python3 -m conformance.libraries dependencies --gpu;
                            grep -E '^(pytest|hypothesis)==' constraints.txt)
      binaries=()
      for requirement in "${wanted[@]}"; do [ "$requirement" != "norse==1.1.0" ] && binaries+=("$requirement"); done
      platforms=()
      for tag in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1; do
        platforms+=(--platform "${tag}_x86_64"); done
      python3 -m pip download --no-deps --only-binary=:all: --implementation cp \
        --python-version "${GPU_PYTHON_VERSION:-3.12}" "${platforms[@]}" -d .whl "${binaries[@]}" || exit 1
      # norse 1.1.0 is an sdist only; its version comes from setuptools_scm, which an sdist build cannot read
      python3 -m pip download --no-deps --no-binary=:all: -d /tmp/norse-sdist "norse==1.1.0" && \
        tar -xzf /tmp/norse-sdist/norse-1.1.0.tar.gz -C /tmp/norse-sdist && \
        SETUPTOOLS_SCM_PRETEND_VERSION=1.1.0 python3 -m pip wheel --no-deps -w .whl /tmp/norse-sdist/norse-1.1.0
      exit $? ;;
    *) echo "usage: scripts/gpu-run.sh [--stages matrix,mutants,bench,kernels] [--out DIR] | --download" >&2
       exit 2 ;;
  esac
done
budget="${GPU_RUN_BUDGET_S:-570}"
started=$(date +%s)
left() { echo $(( budget - ($(date +%s) - started) )); }
has() { [[ ",$stages," == *",$1,"* ]]; }
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1

echo "== gpu-run: stages $stages, out $out, budget ${budget}s"
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device: this script is for GPU machines'" \
  || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

site="${GPU_RUN_SITE:-/tmp/conformance-site}"
mapfile -t GPU_RUN_PACKAGES < <(gpu_requirements)
echo "gpu-run: installing ${GPU_RUN_PACKAGES[*]}"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "${GPU_RUN_PACKAGES[@]}"
else
  python3 -m pip install -q --no-deps --no-cache-dir --upgrade --target "$site" "${GPU_RUN_PACKAGES[@]}"
fi || echo "gpu-run: some libraries failed to install; their cells will skip"
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export CONFORMANCE_PROFILE="${CONFORMANCE_PROFILE:-ci}"
export CONFORMANCE_CACHE_DIR="${CONFORMANCE_CACHE_DIR:-/tmp/conformance-cache}"
python3 - <<'EOF'
import importlib, torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")
for name in ("snntorch", "spikingjelly", "norse", "sinabs", "bitorch", "brevitas", "opacus", "bdpy", "triton",
             "cupy", "pytest", "hypothesis", "xdist"):
    try:
        module = importlib.import_module(name)
        print(f"  {name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001 - a missing library only skips its cells
        print(f"  {name}: not importable ({type(error).__name__}: {str(error)[:120]})")
EOF
workers="${GPU_RUN_WORKERS:-$(python3 -c 'import os; print(max(1, min(16, len(os.sched_getaffinity(0)))))')}"
status=0

if has mutants; then
  echo "== mutants, CUDA ones included ($(left)s left)"
  timeout 120 python3 -m pytest suites/test_mutants.py -k "${GPU_RUN_MUTANTS:-reversed_on_cuda or autocast}" \
    -p no:cacheprovider -q -o addopts="" -rs \
    > "$out/mutants.log" 2>&1 || status=1
  tail -3 "$out/mutants.log"
fi

if has matrix; then
  reserve=0
  has bench && reserve=$((reserve + ${GPU_RUN_BENCH_S:-270}))  # the quick cuda profile took 231-243 s on an H200
  has kernels && reserve=$((reserve + 100))
  limit=$(( $(left) - reserve ))
  echo "== matrix: cuda cells on $workers workers (limit ${limit}s)"
  records="$out/records"
  timeout --signal=TERM --kill-after=20 "$limit" python3 -m pytest suites/test_matrix.py \
    -k "cuda${GPU_RUN_SELECT:+ and ($GPU_RUN_SELECT)}" \
    -n "$workers" --dist loadgroup --results-dir "$records" -p no:cacheprovider -q -o addopts="" \
    > "$out/matrix.log" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "gpu-run: the matrix reached its limit; the cells recorded so far are kept"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && status=1
  tail -3 "$out/matrix.log"
  cat "$records"/*.jsonl > "$out/records.jsonl" 2>/dev/null && rm -rf "$records"
  echo "   $(wc -l < "$out/records.jsonl") records in $out/records.jsonl"
  python3 - "$out/records.jsonl" <<'EOF'
import collections, json, sys
counts = collections.Counter(json.loads(line)["outcome"] for line in open(sys.argv[1]) if line.strip())
print("   outcomes:", dict(sorted(counts.items())))
EOF
fi

if has bench; then
  limit=$(( $(left) - $(has kernels && echo 100 || echo 0) ))
  echo "== benchmark, quick profile on cuda (limit ${limit}s)"
  # shellcheck disable=SC2086 # GPU_RUN_BENCH_ARGS is a list of options, e.g. "--builds 2"
  timeout "$limit" python3 -m conformance.bench run --device cuda --profile quick --quiet ${GPU_RUN_BENCH_ARGS:-} \
    --out "$out/bench-cuda.json" || status=1
fi

if has kernels; then
  limit=$(left)
  echo "== kernels' GPU benchmark (limit ${limit}s)"
  # the torch.compile baselines cost 50-90 s per neuron with a cold cache: only when the stage has the time
  compile_flag=""
  [ "$limit" -lt "${GPU_RUN_KERNELS_COMPILE_S:-450}" ] && compile_flag="--no-compile"
  timeout "$limit" python3 -m qsnn_kernels.bench_gpu --budget-s $((limit - 30)) $compile_flag --out "$out/kernels-cuda.json" \
    > "$out/kernels.log" 2>&1 \
    || status=1
  tail -25 "$out/kernels.log"
fi
echo "== gpu-run: done in $(( $(date +%s) - started ))s (status $status)"
exit "$status"
