#!/usr/bin/env bash
# A property-based run of schemathesis against `toolgate serve`'s own OpenAPI document:
# every operation of /openapi.json gets generated requests (valid and invalid), and each
# answer is checked: no 5xx, a documented status, the documented content type, a body
# that matches the documented schema, invalid input rejected, and auth enforced.
#
#   tests/py/schemathesis.sh [EXTRA SCHEMATHESIS ARGS...]
#
# The venv is target/pyenv (or $TOOLGATE_PYENV), shared with tests/py/setup.sh;
# schemathesis comes from tests/py/requirements-schemathesis.txt. The server is
# $TOOLGATE_BIN when set, else a debug build made here (`cargo build --bin toolgate`),
# on a free loopback port with a temporary database, agents folder (examples/agents
# and examples/serve/agents) and workspace, and an API key. It is stopped at the end.
# Exits with schemathesis's exit code (0: no failure found).
# Knobs: ST_MAX_EXAMPLES (default 25 per operation), ST_SEED, ST_CHECKS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TOOLGATE_PYENV:-$root/target/pyenv}"
requirements="$here/requirements-schemathesis.txt"
python="${PYTHON:-python3}"

fail() {
    echo "tests/py/schemathesis.sh: $*" >&2
    exit 2
}

# --- the venv -------------------------------------------------------------------
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi
stamp="$venv/.schemathesis.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if ! [[ -x "$venv/bin/schemathesis" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    command -v "$python" >/dev/null 2>&1 || fail "no '$python' on PATH (Debian: apt-get install python3 python3-venv)"
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "tests/py/schemathesis.sh: making a venv in $venv" >&2
        "$python" -m venv "$venv" || fail "'$python -m venv $venv' failed (Debian: apt-get install python3-venv)"
    fi
    echo "tests/py/schemathesis.sh: installing $requirements" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 ||
        fail "pip could not install $requirements into $venv"
    echo "$want" >"$stamp"
fi
exec 9>&-

# --- the server -----------------------------------------------------------------
if [[ -n "${TOOLGATE_BIN:-}" ]]; then
    bin="$TOOLGATE_BIN"
else
    (cd "$root" && cargo build --quiet --bin toolgate) || fail "cargo build --bin toolgate failed"
    bin="$root/target/debug/toolgate"
fi
[[ -x "$bin" ]] || fail "$bin is not an executable (set TOOLGATE_BIN, or cargo build)"

work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-schemathesis.XXXXXX")"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    if [[ "${ST_KEEP:-}" == 1 ]]; then
        echo "tests/py/schemathesis.sh: kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

mkdir -p "$work/agents" "$work/workspace"
cp "$root"/examples/agents/*.yaml "$work/agents/"   # files only (team/ is a folder of its own)
# The served assistant plays scripted replies, so runs go on offline.
cp "$root"/examples/serve/agents/* "$work/agents/"
key="schemathesis-$RANDOM$RANDOM"

# No model server is reachable from here: an `openai:` model points at a closed loopback
# port, so such a run fails at once (one attempt) as it would with its server down.
env OPENAI_API_KEY=unused OPENAI_BASE_URL=http://127.0.0.1:9/v1 TOOLGATE_MODEL_ATTEMPTS=1 \
    TOOLGATE_API_KEY="$key" \
    "$bin" --db "$work/toolgate.db" serve --addr 127.0.0.1:0 \
    --agents "$work/agents" --tools "$root/tools" --workspace "$work/workspace" \
    >"$work/server.out" 2>"$work/server.log" &
server_pid=$!

url=""
for _ in $(seq 1 300); do
    url="$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/server.out" | head -1)"
    [[ -n "$url" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited before listening"; }
    sleep 0.1
done
[[ -n "$url" ]] || fail "the server did not listen within 30 s"
echo "tests/py/schemathesis.sh: toolgate serve on $url (log: $work/server.log)" >&2

# --- schemathesis ---------------------------------------------------------------
# The checks are in schemathesis.toml; ST_CHECKS=a,b overrides them all.
check_args=()
if [[ -n "${ST_CHECKS:-}" ]]; then
    check_args=(--checks "$ST_CHECKS")
fi
seed_args=()
if [[ -n "${ST_SEED:-}" ]]; then
    seed_args=(--seed "$ST_SEED")
fi
status=0
# Its caches and reports go to the temporary folder, not the work tree.
cd "$work"
env -u OPENAI_API_KEY -u OPENAI_BASE_URL SCHEMATHESIS_HOOKS= \
    "$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run "$url/openapi.json" \
    --header "Authorization: Bearer $key" \
    --max-examples "${ST_MAX_EXAMPLES:-25}" \
    --workers 1 \
    --request-timeout 30 \
    --no-color \
    --suppress-health-check too_slow \
    "${check_args[@]}" "${seed_args[@]}" "$@" || status=$?

if grep -q 'panicked' "$work/server.log"; then
    echo "tests/py/schemathesis.sh: the server panicked:" >&2
    grep -m5 'panicked' "$work/server.log" >&2
    [[ $status -ne 0 ]] || status=1
fi
exit $status
