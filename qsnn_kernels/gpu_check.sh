#!/usr/bin/env bash
# The kernels' GPU checks in one go (docs/kernels.md), on a machine with an NVIDIA GPU and a CUDA build of torch.
# Stages, run in this order when selected:
#   explore  the benchmark's alternatives and config sweeps (--explore, no torch.compile)
#   cells    the kernels' CUDA cells of the matrix (records as gzip JSONL, like reports/cuda/)
#   bench    python -m qsnn_kernels.bench_gpu, --runs times (the torch.compile baselines in the first run only unless
#            --compile-all; a later run on the same machine reads inductor's cache)
#   tests    suites/kernels on CUDA (every path, float64 included; KERNEL_TEST_EXAMPLES=n for fewer examples)
#   ncu      Nsight Compute's SpeedOfLight section for one launch of each kernel (--clock-control none)
#
#   qsnn_kernels/gpu_check.sh [--stages cells,bench,tests] [--runs 3] [--first-run 1] [--compile-all] [--out DIR]
#   (GPU_CHECK_BUDGET_S caps the whole run; <STAGE>_S each stage; BENCH_ARGS adds bench_gpu options)
#
# Libraries under test come from wheels in .whl/ when it holds any (offline machines), installed --no-deps into a
# private directory (spikingjelly 2.0 imports loguru: carry both); the machine's torch, triton and numpy are used
# as they are. Output (at most 8 files): run.log,
# cells.jsonl.gz, bench-<i>.json, explore.json, ncu.csv.
set -uo pipefail
cd "$(dirname "$0")/.."

stages="tests,cells,bench"
runs=3
first=1
compile_all=0
out="reports/cuda-kernels-$(date -u +%Y%m%dT%H%M%S)"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --stages) stages="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --first-run) first="$2"; shift 2 ;;
    --compile-all) compile_all=1; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: qsnn_kernels/gpu_check.sh [--stages tests,cells,bench,explore,ncu] [--runs N] [--first-run I]" \
         "[--compile-all] [--out DIR]" >&2; exit 2 ;;
  esac
done
has() { [[ ",$stages," == *",$1,"* ]]; }
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1
started=$(date +%s)
echo "== qsnn_kernels/gpu_check.sh: stages $stages, out $out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader \
  2>/dev/null || true
site="${GPU_RUN_SITE:-/tmp/kernels-site}"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
    || echo "gpu_check: some wheels failed to install"
fi
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export CONFORMANCE_PROFILE="${CONFORMANCE_PROFILE:-ci}"
export CONFORMANCE_CACHE_DIR="${CONFORMANCE_CACHE_DIR:-/tmp/conformance-cache}"
export PYTHONUNBUFFERED=1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__,
  torch.cuda.get_device_name())"
status=0
stamp() { echo "   ($(( $(date +%s) - started ))s)"; }
# a stage's limit: its own (seconds), cut to what is left of GPU_CHECK_BUDGET_S (default: no overall budget)
limit() { local own=$1 left=$(( ${GPU_CHECK_BUDGET_S:-100000} - ($(date +%s) - started) - 5 ))
          [ "$left" -lt "$own" ] && own=$left; [ "$own" -lt 1 ] && own=1; echo "$own"; }

if has explore; then
  echo "== explore"
  timeout "$(limit "${EXPLORE_S:-330}")" python3 -m qsnn_kernels.bench_gpu --explore --no-compile \
    --out "$out/explore.json" || status=1
  stamp
fi
if has cells; then
  echo "== the kernels' CUDA cells"
  workers=$(python3 -c 'import os; print(max(1, min(16, len(os.sched_getaffinity(0)))))')
  rm -rf "$out/records"
  timeout "$(limit "${CELLS_S:-240}")" python3 -m pytest suites/test_matrix.py -k "kernels and cuda" -n "$workers" \
    --dist loadgroup --results-dir "$out/records" -p no:cacheprovider -q -o addopts="" 2>&1 | tail -4
  cat "$out"/records/*.jsonl 2>/dev/null | gzip -9 > "$out/cells.jsonl.gz" && rm -rf "$out/records"
  python3 - "$out/cells.jsonl.gz" <<'EOF'
import collections, gzip, json, sys
rows = [json.loads(line) for line in gzip.open(sys.argv[1], "rt") if line.strip()]
print("   records:", len(rows), dict(sorted(collections.Counter(r.get("outcome") for r in rows).items())))
for r in rows:
    if r.get("outcome") in ("fail", "error", "xpass", "crash", "timeout"):
        print("   ", r.get("outcome"), r.get("cell"), str(r.get("message"))[:200])
EOF
  stamp
fi
if has bench; then
  for i in $(seq "$first" $((first + runs - 1))); do
    flag="--no-compile"
    { [ "$i" -eq 1 ] || [ "$compile_all" -eq 1 ]; } && flag=""
    echo "== qsnn_kernels.bench_gpu run $i $flag"
    timeout "$(limit "${BENCH_S:-420}")" python3 -m qsnn_kernels.bench_gpu $flag ${BENCH_ARGS:-} \
      --budget-s "${BENCH_COMPILE_S:-300}" \
      --out "$out/bench-$i.json" || status=1
    stamp
  done
fi
if has tests; then
  echo "== suites/kernels on CUDA"
  timeout "$(limit "${TESTS_S:-240}")" python3 -m pytest suites/kernels -p no:cacheprovider -q -o addopts="" -rs -n 12 \
    --tb=line || status=1
  stamp
fi
if has ncu; then
  echo "== ncu"
  timeout "$(limit "${NCU_S:-150}")" ncu --clock-control none --section SpeedOfLight --csv --page details \
    -k 'regex:xnor|leaky|sj_lif|gemm|sign|unpack|pack|conv' -c 24 python3 -m qsnn_kernels.bench_gpu --probe \
    > "$out/ncu.csv" 2> "$out/ncu.err"; echo "   ncu rc $?"; tail -3 "$out/ncu.err"; rm -f "$out/ncu.err"
  stamp
fi
echo "== done in $(( $(date +%s) - started ))s (status $status)"
exit "$status"
