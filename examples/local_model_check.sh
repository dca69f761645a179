#!/usr/bin/env bash
# The opt-in check of toolgate against a real llama.cpp server: installs llama.cpp's
# OpenAI-compatible server from PyPI (llama-cpp-python[server], compiled from source,
# several minutes the first time), serves the GGUF model you give it on loopback, and
# runs `local_models::a_real_local_server_runs_calls_with_no_dialect` against it.
#
#   LOCAL_MODEL_GGUF=path/to/qwen2.5-1.5b-instruct-q4_k_m.gguf examples/local_model_check.sh
#
# No package registry this project uses ships model weights: the GGUF file is yours.
set -euo pipefail
: "${LOCAL_MODEL_GGUF:?set LOCAL_MODEL_GGUF to a small instruct model (.gguf)}"
PORT="${LOCAL_MODEL_PORT:-8089}"
VENV="${LOCAL_MODEL_VENV:-target/llama-venv}"
cd "$(dirname "$0")/.."
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet 'llama-cpp-python[server]'
fi
# The chat template's own tool handling (like llama-server --jinja): calls may come back
# native or as text; toolgate reads both.
"$VENV/bin/python" -m llama_cpp.server --model "$LOCAL_MODEL_GGUF" \
    --host 127.0.0.1 --port "$PORT" --n_ctx 4096 >"$VENV/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
    sleep 1
done
started=$(date +%s)
TOOLGATE_LOCAL_MODEL_URL="http://127.0.0.1:$PORT/v1" \
    cargo test --test all -- --ignored --nocapture local_models::a_real_local_server
echo "the check took $(( $(date +%s) - started )) s"
