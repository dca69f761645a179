#!/usr/bin/env bash
# Makes the Python environment the cross-language tests use: a venv under
# target/pyenv (or $TOOLGATE_PYENV) with tests/py/requirements.txt installed.
# Idempotent: an environment that already satisfies the requirements is left as it is.
# Fails loudly (non-zero exit, the reason on stderr) when it cannot make or fill it.
# Prints the venv's python path as its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TOOLGATE_PYENV:-$root/target/pyenv}"
requirements="$here/requirements.txt"
python="${PYTHON:-python3}"

fail() {
    echo "tests/py/setup.sh: $*" >&2
    exit 1
}

command -v "$python" >/dev/null 2>&1 ||
    fail "no '$python' on PATH: install Python 3.9 or newer (Debian: apt-get install python3 python3-venv)"

# One setup at a time: cargo runs test binaries in parallel.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi

stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
    "$venv/bin/python" -c 'import openai, mcp' >/dev/null 2>&1; then
    echo "$venv/bin/python"
    exit 0
fi

if [[ ! -x "$venv/bin/python" ]]; then
    echo "tests/py/setup.sh: making a venv in $venv" >&2
    "$python" -m venv "$venv" ||
        fail "'$python -m venv $venv' failed (Debian: apt-get install python3-venv)"
fi

echo "tests/py/setup.sh: installing $requirements" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 ||
    fail "pip could not install $requirements into $venv (is PyPI reachable?)"
"$venv/bin/python" -c 'import openai, mcp' ||
    fail "the venv at $venv has no usable 'openai' or 'mcp' package after pip install"
echo "$want" >"$stamp"
echo "$venv/bin/python"
