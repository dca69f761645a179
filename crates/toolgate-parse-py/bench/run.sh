#!/usr/bin/env bash
# The Python package's bench: builds the optimised wheel (tests/run.sh --release), makes
# a venv of its own (target/bench-env) with the parsers of bench/requirements.txt and
# the wheel, and runs bench.py. Extra pip packages to compare with (e.g. vllm) can be
# installed into target/bench-env first; bench.py says which parsers it could not load.
#
#   crates/toolgate-parse-py/bench/run.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crate="$(cd "$here/.." && pwd)"
root="$(cd "$crate/../.." && pwd)"
venv="$root/target/bench-env"

fail() {
    echo "toolgate-parse-py/bench/run.sh: $*" >&2
    exit 1
}

bash "$crate/tests/run.sh" --release || fail "the release wheel did not build"
wheel="$(ls "$root"/target/py-wheel/wheels/toolgate_parse-*.whl | head -n 1)"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" || fail "python3 -m venv $venv failed"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" ||
    fail "pip could not install $here/requirements.txt (is PyPI reachable?)"
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel" ||
    fail "pip could not install $wheel"
exec "$venv/bin/python" "$here/bench.py"
