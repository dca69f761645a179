#!/usr/bin/env bash
# Builds the toolgate-parse wheel (abi3, debug profile: the tests check behaviour, not
# speed) with maturin from PyPI, installs it into the project's venv (target/pyenv, made
# by tests/py/setup.sh) and runs the Python tests with pytest. Extra arguments go to
# pytest. The wheel is left in target/py-wheel/wheels; `--release` as the first
# argument builds an optimised one instead (for the bench), and runs no tests.
# Fails loudly (non-zero exit, the reason on stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crate="$(cd "$here/.." && pwd)"
root="$(cd "$crate/../.." && pwd)"

fail() {
    echo "toolgate-parse-py/tests/run.sh: $*" >&2
    exit 1
}

python="$(bash "$root/tests/py/setup.sh" | tail -n 1)"
venv="$(cd "$(dirname "$python")/.." && pwd)"

# The build tools, once (the venv's lock: cargo runs test binaries in parallel).
exec 9>"$venv.lock"
command -v flock >/dev/null 2>&1 && flock 9
stamp="$venv/.toolgate-parse-py.sha256"
want="$(sha256sum "$crate/requirements-dev.txt" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" || ! -x "$venv/bin/maturin" ]]; then
    "$python" -m pip install --quiet --disable-pip-version-check -r "$crate/requirements-dev.txt" >&2 ||
        fail "pip could not install $crate/requirements-dev.txt into $venv (is PyPI reachable?)"
    echo "$want" >"$stamp"
fi

profile=()
if [[ "${1:-}" == "--release" ]]; then
    profile=(--release)
    shift
fi
# Its own target folder: maturin's environment (PYO3_*) differs from cargo test's, and
# sharing target/debug would rebuild pyo3 on every switch between the two.
out="$root/target/py-wheel/wheels"
rm -rf "$out"
"$venv/bin/maturin" build "${profile[@]}" --quiet \
    --manifest-path "$crate/Cargo.toml" \
    --target-dir "$root/target/py-wheel" \
    --interpreter "$python" \
    --out "$out" >&2 ||
    fail "maturin could not build the wheel"
wheel="$(ls "$out"/toolgate_parse-*.whl 2>/dev/null | head -n 1)"
[[ -n "$wheel" ]] || fail "maturin left no wheel in $out"
[[ "$wheel" == *abi3* ]] || fail "the wheel $wheel is not an abi3 wheel"
"$python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel" >&2 ||
    fail "pip could not install $wheel"
flock -u 9 2>/dev/null || true
echo "built and installed $(basename "$wheel")" >&2
if [[ ${#profile[@]} -gt 0 ]]; then
    exit 0
fi

cd "$crate"
exec "$python" -m pytest -q -p no:cacheprovider "$here" "$@"
