export CUDA_AGENT_BASELINE_MAX_AGE=0
export CUDA_AGENT_HOME=$PWD CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache
BIN=dist/bin/cuda-agent; OUTD=${OUT:-/tmp/out}
timeout 150 python3 bench/flaky/flaky_accept.py --binary $BIN --runs 32 --jobs 4 --out $OUTD/flaky_on_1in32.json \
  examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32 | grep -E '"(judged|accepted|p_accept)"'
timeout 120 python3 bench/flaky/flaky_accept.py --binary $BIN --runs 16 --jobs 4 --out $OUTD/flaky_off.json \
  examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32 -- --sampled-checks 0 | grep -E '"(judged|accepted|p_accept)"'
export THROUGHPUT_ARMS="on= off=CUDA_AGENT_SAMPLED_CHECKS=0" THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=250
timeout 270 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^warmup" | cut -c1-200
echo "== step-ab"
STEP_AB_WARMUP=0 STEP_AB_ROUNDS=1 OTHER_ENV=CUDA_AGENT_SAMPLED_CHECKS=0 timeout $((585 - SECONDS)) bash bench/gpu_session.sh step-ab 2>&1 | tail -2
