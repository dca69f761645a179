#!/usr/bin/env bash
# Makes the Node tools the cross-language tests use: Node 22 (the npm package `node@22`,
# for packages that need Node >= 22 where the machine has an older one), TypeScript,
# openapi-typescript and openapi-fetch (a typed client from /openapi.json), the MCP
# Inspector CLI, the official OpenAI Node SDK (`openai`) and the official MCP SDK
# (`@modelcontextprotocol/sdk`, its task client), all in target/node-tools
# (or $TOOLGATE_NODE_TOOLS), never in the source tree. Idempotent: an install matching tests/node/package.json is left as it is.
# Fails loudly (non-zero exit, the reason on stderr). Prints the folder last.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${TOOLGATE_NODE_TOOLS:-$root/target/node-tools}"

fail() {
    echo "tests/node/setup.sh: $*" >&2
    exit 1
}

command -v npm >/dev/null 2>&1 || fail "no npm on PATH (Debian: apt-get install nodejs npm)"
command -v node >/dev/null 2>&1 || fail "no node on PATH (Debian: apt-get install nodejs)"
mkdir -p "$dir"
# One setup at a time: cargo runs test binaries in parallel.
exec 9>"$dir.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi

stamp="$dir/.package.sha256"
want="$(sha256sum "$here/package.json" | cut -d' ' -f1)"
node22="$dir/node_modules/node/bin/node"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node22" ]]; then
    echo "$dir"
    exit 0
fi
cp "$here/package.json" "$dir/package.json"
echo "tests/node/setup.sh: installing tests/node/package.json into $dir" >&2
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2) ||
    fail "npm could not install tests/node/package.json into $dir (is the npm registry reachable?)"
[[ -x "$node22" ]] || fail "npm ran, but $node22 is missing"
"$node22" --version | grep -q '^v22\.' || fail "$node22 is not Node 22: $("$node22" --version)"
for bin in tsc openapi-typescript mcp-inspector-cli; do
    [[ -e "$dir/node_modules/.bin/$bin" ]] || fail "npm ran, but node_modules/.bin/$bin is missing"
done
echo "$want" >"$stamp"
echo "$dir"
