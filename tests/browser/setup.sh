#!/usr/bin/env bash
# Makes what the browser tests need: Debian's Chromium at /usr/bin/chromium (installed
# with apt-get when missing) and playwright-core from the npm registry in
# target/browser-node (or $TOOLGATE_BROWSER_NODE), never in the source tree.
# Idempotent: what is already there is left as it is. Fails loudly (non-zero exit, the
# reason on stderr) when it cannot install either. Prints the node_modules path last.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${TOOLGATE_BROWSER_NODE:-$root/target/browser-node}"
chromium="${TOOLGATE_CHROMIUM:-/usr/bin/chromium}"

fail() {
    echo "tests/browser/setup.sh: $*" >&2
    exit 1
}

mkdir -p "$dir"
# One setup at a time: cargo runs test binaries in parallel.
exec 9>"$dir.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi

if [[ ! -x "$chromium" ]]; then
    command -v apt-get >/dev/null 2>&1 ||
        fail "no $chromium and no apt-get: install Chromium (Debian: apt-get install chromium)"
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || fail "installing chromium needs root (or sudo)"
        sudo="sudo"
    fi
    echo "tests/browser/setup.sh: installing Debian's chromium" >&2
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium >&2; then
        $sudo apt-get update >&2 || fail "apt-get update failed (is the Debian mirror reachable?)"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium >&2 ||
            fail "apt-get install chromium failed"
    fi
    [[ -x "$chromium" ]] || fail "chromium installed, but $chromium is not there"
fi

command -v node >/dev/null 2>&1 || fail "no node on PATH: install Node.js 18 or newer"
command -v npm >/dev/null 2>&1 || fail "no npm on PATH: install npm"

stamp="$dir/.package.sha256"
want="$(sha256sum "$here/package.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$dir/node_modules/playwright-core" ]]; then
    echo "$dir/node_modules"
    exit 0
fi
cp "$here/package.json" "$dir/package.json"
echo "tests/browser/setup.sh: installing playwright-core into $dir" >&2
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2) ||
    fail "npm could not install playwright-core into $dir (is the npm registry reachable?)"
[[ -d "$dir/node_modules/playwright-core" ]] ||
    fail "npm ran, but $dir/node_modules/playwright-core is missing"
echo "$want" >"$stamp"
echo "$dir/node_modules"
