#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests run against: PyPI mcp-server-time (into
# the venv of tests/py/setup.sh, from tests/py/requirements.txt) and npm
# @modelcontextprotocol/server-everything (into target/mcp-npm, with the machine's npm).
# Idempotent; one setup at a time; fails loudly (non-zero exit, the reason on stderr).
# Prints two lines: `python=PATH` and `everything=PATH` (the server's JavaScript entry).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prefix="${TOOLGATE_MCP_NPM:-$root/target/mcp-npm}"
package="@modelcontextprotocol/server-everything"

fail() {
    echo "tests/mcp/setup.sh: $*" >&2
    exit 1
}

python="$("$root/tests/py/setup.sh" | tail -n 1)" || fail "tests/py/setup.sh failed"
"$python" -c 'import mcp_server_time' >/dev/null 2>&1 ||
    fail "the venv at $python has no mcp_server_time after setup"

command -v npm >/dev/null 2>&1 || fail "no npm on PATH (Debian: apt-get install npm)"
command -v node >/dev/null 2>&1 || fail "no node on PATH (Debian: apt-get install nodejs)"
mkdir -p "$prefix"
exec 9>"$prefix.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi
entry="$prefix/node_modules/$package/dist/index.js"
if [[ ! -f "$entry" ]]; then
    echo "tests/mcp/setup.sh: installing $package into $prefix" >&2
    npm install --prefix "$prefix" --no-audit --no-fund --silent "$package@^2026" >&2 ||
        npm install --prefix "$prefix" --no-audit --no-fund --silent "$package" >&2 ||
        fail "npm could not install $package into $prefix (is the npm registry reachable?)"
fi
[[ -f "$entry" ]] || fail "$package installed, but $entry is missing"
echo "python=$python"
echo "everything=$entry"
