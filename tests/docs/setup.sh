#!/usr/bin/env bash
# Installs mdBook, which the docs tests build the book with: `cargo install mdbook
# --locked --version 0.5.4` into target/mdbook (or $TOOLGATE_MDBOOK_ROOT).
# Idempotent: an mdbook of that version already there is left as it is.
# Fails loudly (non-zero exit, the reason on stderr) when it cannot install it.
# Prints the mdbook binary's path as its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${TOOLGATE_MDBOOK_ROOT:-$root/target/mdbook}"
version="0.5.4"
mdbook="$dest/bin/mdbook"

fail() {
    echo "tests/docs/setup.sh: $*" >&2
    exit 1
}

command -v cargo >/dev/null 2>&1 || fail "no 'cargo' on PATH: install Rust (https://rustup.rs)"

# One install at a time: cargo runs test binaries in parallel.
mkdir -p "$dest"
exec 9>"$dest.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi

if [[ -x "$mdbook" ]] && [[ "$("$mdbook" --version 2>/dev/null)" == *"v$version"* ]]; then
    echo "$mdbook"
    exit 0
fi

echo "tests/docs/setup.sh: installing mdbook $version in $dest (once; a few minutes)" >&2
cargo install mdbook --locked --version "$version" --root "$dest" >&2 ||
    fail "cargo install mdbook $version failed (it needs crates.io): see the output above"
[[ -x "$mdbook" ]] || fail "cargo install finished but $mdbook is missing"
echo "$mdbook"
