#!/usr/bin/env bash
# The CUDA run: every cuda cell of the matrix, the CUDA mutants, the benchmark's cuda profile and the kernels'
# GPU benchmark, in one go, on a machine with an NVIDIA GPU and a CUDA build of torch (torch is never installed
# or moved here: the run records whatever version the machine has).
#
#   scripts/gpu-run.sh [--stages matrix,mutants,bench,kernels] [--out DIR]
#   scripts/gpu-run.sh --download          # fill .whl/ with the pinned libraries (on a machine with a registry)
#
# The libraries under test come from wheels in .whl/ when it holds any (offline machines), otherwise from the
# package registry, pinned (GPU_RUN_PACKAGES below), --no-deps, into a private directory put first on PYTHONPATH;
# the machine's own torch, triton, cupy and numpy are used as they are. pytest and hypothesis are pinned as in
# constraints.txt so that both devices draw the same examples (conformance.strategies.stable_draws). A library
# that is missing turns its cells to `skip`. Each stage runs under a time limit (the whole run aims at
# GPU_RUN_BUDGET_S, default 570 s); what a stage recorded before its limit is kept.
#
# Output in DIR (default reports/cuda-run-<UTC stamp>): records.jsonl (one record per cell), mutants.log,
# bench-cuda.json (subject/spec ratios, as reports/bench/baseline-cuda.json), kernels-cuda.json, run.log. Check
# the records in as reports/cuda/<run>.jsonl and the report merges them as the CUDA columns:
#   cp DIR/records.jsonl reports/cuda/cuda-$(date -u +%Y%m%d).jsonl
#   python -m conformance.bench accept --device cuda --results DIR/bench-cuda.json
set -uo pipefail
cd "$(dirname "$0")/.."

GPU_RUN_PACKAGES=(
  "snntorch==1.0.0" "spikingjelly==2.0.0" "norse==1.1.0" "sinabs==3.1.3" "bitorch==0.4.1" "brevitas==0.13.4"
  "opacus==1.6.0" "nir==1.0.4" "nirtorch==2.0.2" "loguru" "pbr" "dependencies==2.0.1" "opt_einsum" "unfoldNd"
)
# pytest and hypothesis as the CPU run pins them (constraints.txt): both devices draw the same examples
mapfile -t test_pins < <(grep -E '^(pytest|hypothesis)==' constraints.txt)
GPU_RUN_PACKAGES+=("${test_pins[@]}")
stages="matrix,mutants,bench,kernels"
out="reports/cuda-run-$(date -u +%Y%m%dT%H%M%S)"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --stages) stages="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --download)  # with the GPU machine's Python version (hypothesis ships per-version wheels)
      mkdir -p .whl
      python3 -m pip download --no-deps --only-binary=:all: -d .whl "${GPU_RUN_PACKAGES[@]/norse==1.1.0/}" \
        || exit 1
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
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl
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
  timeout --signal=TERM --kill-after=20 "$limit" python3 -m pytest suites/test_matrix.py -k "cuda" \
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
  timeout "$limit" python3 -m kernels.bench_gpu --budget-s $((limit - 30)) $compile_flag --out "$out/kernels-cuda.json" \
    > "$out/kernels.log" 2>&1 \
    || status=1
  tail -25 "$out/kernels.log"
fi
echo "== gpu-run: done in $(( $(date +%s) - started ))s (status $status)"
exit "$status"
