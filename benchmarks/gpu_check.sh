#!/usr/bin/env bash
# The checks that need a GPU, in one command, on a CUDA machine where the app itself is not installed (it needs
# torch, transformers, tokenizers, Pillow, httpx and pytest; no Django). From the repository root:
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]          # OUT_DIR defaults to $OUT, else benchmarks/out
#
# 1. benchmarks/gpu_serving.py on the ~0.8B checkpoint: its lines to OUT_DIR/gpu_serving.log, its figures to
#    OUT_DIR/gpu_serving.json (both rewritten as it goes, so a run cut short keeps what it reached);
# 2. the model runtime's tests (tests/models_runtime) without Django: OUT_DIR/tests.log.
# Where pytest is not installed, a copy of it (pure Python) in var/gpu-pytest is put on the path; make one with
#   mkdir -p var/gpu-pytest && cp -r .venv/lib/python3.*/site-packages/{pytest,_pytest,pluggy,iniconfig,pygments,py.py} var/gpu-pytest
# BENCH_SECONDS and TEST_SECONDS cap each step (default 270 and 180: 7.5 minutes in all); extra arguments after
# OUT_DIR go to the benchmark (e.g. --quick).
set -u
out="${1:-${OUT:-benchmarks/out}}"
shift || true
mkdir -p "$out"
say() { echo "[$(date +%T)] $*"; }

if ! python3 -c "import pytest" 2>/dev/null && [ -d var/gpu-pytest ]; then
    export PYTHONPATH="$PWD/var/gpu-pytest${PYTHONPATH:+:$PYTHONPATH}"
fi
say "$(python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
      transformers.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name())')"

say "benchmark: python3 benchmarks/gpu_serving.py --json $out/gpu_serving.json $*"
timeout "${BENCH_SECONDS:-270}" python3 -u benchmarks/gpu_serving.py --json "$out/gpu_serving.json" "$@" \
    2>&1 | tee "$out/gpu_serving.log" | grep -v -e "Loading weights" -e "Writing model shards"
bench=${PIPESTATUS[0]}
say "benchmark exit status $bench"

say "tests: tests/models_runtime without Django"
timeout "${TEST_SECONDS:-180}" python3 -m pytest -p no:django -p no:cacheprovider \
    --confcutdir=tests/models_runtime tests/models_runtime -q -rs 2>&1 | tee "$out/tests.log" | tail -n 25
tests=${PIPESTATUS[0]}
say "tests exit status $tests"
[ "$bench" = 0 ] && [ "$tests" = 0 ]
