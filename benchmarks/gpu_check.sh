#!/usr/bin/env bash
# The checks that need a GPU, in one command of at most 4 minutes, on a CUDA machine where the app itself is not
# installed (it needs torch, transformers, tokenizers, Pillow, httpx and pytest; no Django). From the repository root:
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]          # OUT_DIR defaults to $OUT, else benchmarks/out
#
# 1. benchmarks/gpu_serving.py on the ~0.8B checkpoint: its lines to OUT_DIR/gpu_serving.log, its figures to
#    OUT_DIR/gpu_serving.json (both rewritten as it goes, so a run cut short keeps what it reached). It skips
#    what would end after --budget-seconds (BENCH_SECONDS - 5) and still prints its summary.
# 2. the runtime's tests that run differently with CUDA (compiled decoding with inductor and CUDA graphs, a model
#    released and loaded again, the fall-back when compiling fails, the backend on cuda/bfloat16), without Django:
#    OUT_DIR/tests.log. The other tests of tests/models_runtime need no GPU.
# Where pytest is not installed, a copy of it (pure Python) in var/gpu-pytest is put on the path; make one with
#   mkdir -p var/gpu-pytest && cp -r .venv/lib/python3.*/site-packages/{pytest,_pytest,pluggy,iniconfig,pygments,py.py} var/gpu-pytest
# BENCH_SECONDS and TEST_SECONDS cap each step (default 170 and 65: 235 s in all); extra arguments after OUT_DIR go
# to the benchmark (e.g. --quick).
set -u
out="${1:-${OUT:-benchmarks/out}}"
shift || true
mkdir -p "$out"
say() { echo "[$(date +%T)] $*"; }
bench_seconds="${BENCH_SECONDS:-170}"

if ! python3 -c "import pytest" 2>/dev/null && [ -d var/gpu-pytest ]; then
    export PYTHONPATH="$PWD/var/gpu-pytest${PYTHONPATH:+:$PYTHONPATH}"
fi
cuda_tests=(  # the most telling first: a run cut short by TEST_SECONDS still shows them
    tests/models_runtime/test_compiled_decoding.py::test_a_model_loaded_again_serves_with_cuda_graphs
    tests/models_runtime/test_compiled_decoding.py::test_inductor_with_cuda_graphs_serves_every_batch_size_without_compiling_again
    tests/models_runtime/test_transformers_backend.py::test_auto_picks_cuda_and_bfloat16_and_serves_four_concurrent_requests
    tests/models_runtime/test_compiled_decoding.py::test_auto_serves_without_compiling_when_compiling_fails
)

say "benchmark: python3 benchmarks/gpu_serving.py --json $out/gpu_serving.json --budget-seconds $((bench_seconds - 5)) $*"
timeout "$bench_seconds" python3 -u benchmarks/gpu_serving.py --json "$out/gpu_serving.json" \
    --budget-seconds "$((bench_seconds - 5))" "$@" \
    2>&1 | tee "$out/gpu_serving.log" | grep -v -e "Loading weights" -e "Writing model shards" -e "__cudagraphs\]"
bench=${PIPESTATUS[0]}
say "benchmark exit status $bench"

say "tests: compiled decoding and the backend on CUDA, without Django"
timeout "${TEST_SECONDS:-65}" python3 -m pytest -p no:django -p no:cacheprovider --confcutdir=tests/models_runtime \
    "${cuda_tests[@]}" -v -rs --durations=0 2>&1 | tee "$out/tests.log" | tail -n 40
tests=${PIPESTATUS[0]}
say "tests exit status $tests"
[ "$bench" = 0 ] && [ "$tests" = 0 ]
