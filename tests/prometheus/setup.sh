#!/usr/bin/env bash
# Makes promtool (Debian's `prometheus` package) available to the tests that check the
# alerting rules in deploy/prometheus/ (tests/dashboards.rs), installing the package with
# apt-get when no promtool is found. Idempotent; one install at a time; fails loudly
# (non-zero exit, the reason on stderr). Prints promtool's path as its last line.
set -euo pipefail

fail() {
    echo "tests/prometheus/setup.sh: $*" >&2
    exit 1
}

exec 9>/tmp/toolgate-promtool-setup.lock
command -v flock >/dev/null 2>&1 && flock 9
if ! command -v promtool >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 ||
        fail "no promtool and no apt-get: install Prometheus's promtool (Debian: apt-get install prometheus)"
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || fail "installing prometheus needs root (or sudo)"
        sudo="sudo"
    fi
    echo "tests/prometheus/setup.sh: installing Debian's prometheus (for promtool)" >&2
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends prometheus >&2; then
        $sudo apt-get update >&2 || fail "apt-get update failed (is the Debian mirror reachable?)"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends prometheus >&2 ||
            fail "apt-get could not install prometheus"
    fi
fi
promtool="$(command -v promtool)" || fail "prometheus is installed, but there is no promtool on PATH"
"$promtool" --version >/dev/null 2>&1 || fail "$promtool does not run"
echo "$promtool"
