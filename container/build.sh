#!/usr/bin/env bash
# Builds toolgate's container image (localhost/toolgate:latest) and, for machines that
# reach no image registry, the Debian base and PostgreSQL images compose.yaml needs.
#
#   container/build.sh                     # the binary built in the image (cargo, slow)
#   container/build.sh --prebuilt BINARY   # a release binary built for Debian 12 (fast)
#
# Idempotent: installs Debian's podman, podman-compose, runc, debootstrap and the CNI DNS
# plugin with apt-get when missing; makes localhost/toolgate-debian:bookworm with
# debootstrap + podman import when it is not there yet, and builds
# localhost/toolgate-postgres:latest from it when missing. The toolgate image is rebuilt
# on every call (podman's layer cache keeps that quick). Where podman's defaults cannot
# run a container (crun and hybrid cgroups, no CAP_SYS_RESOURCE), it uses
# container/podman.conf. Prints `export CONTAINERS_CONF=...` (or nothing) as its last
# line, for the podman commands that follow. Fails loudly (non-zero exit, the reason on
# stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
mirror="${TOOLGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
base="localhost/toolgate-debian:bookworm"

fail() {
    echo "container/build.sh: $*" >&2
    exit 1
}
say() { echo "container/build.sh: $*" >&2; }

prebuilt=""
if [[ "${1:-}" == "--prebuilt" ]]; then
    prebuilt="${2:-}"
    [[ -x "$prebuilt" ]] || fail "--prebuilt needs an executable toolgate binary (got '$prebuilt')"
elif [[ $# -gt 0 ]]; then
    fail "usage: container/build.sh [--prebuilt BINARY]"
fi

# One build at a time (tests may ask at once).
mkdir -p "$root/target/container"
exec 9>"$root/target/container/.lock"
command -v flock >/dev/null 2>&1 && flock 9

install_tools() {
    local missing=()
    command -v podman >/dev/null 2>&1 || missing+=(podman)
    command -v podman-compose >/dev/null 2>&1 || missing+=(podman-compose)
    command -v runc >/dev/null 2>&1 || missing+=(runc)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    [[ -x /usr/lib/cni/dnsname ]] || missing+=(golang-github-containernetworking-plugin-dnsname)
    [[ ${#missing[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null 2>&1 || fail "missing ${missing[*]} and no apt-get to install them"
    local sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || fail "installing ${missing[*]} needs root (or sudo)"
        sudo="sudo"
    fi
    say "installing Debian's ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
        "${missing[@]}" uidmap slirp4netns fuse-overlayfs >&2; then
        $sudo apt-get update >&2 || fail "apt-get update failed (is the Debian mirror reachable?)"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
            "${missing[@]}" uidmap slirp4netns fuse-overlayfs >&2 || fail "apt-get install ${missing[*]} failed"
    fi
}

make_base() {
    podman image exists "$base" && return 0
    [[ "$(id -u)" == 0 ]] || fail "debootstrap needs root to make $base"
    local dir
    dir="$(mktemp -d)"
    say "making $base with debootstrap from $mirror (a few minutes)"
    debootstrap --variant=minbase bookworm "$dir/rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
        { tail -n 20 "$dir/debootstrap.log" >&2; rm -rf "$dir"; fail "debootstrap failed"; }
    rm -rf "$dir/rootfs/var/cache/apt/archives/"*.deb "$dir/rootfs/var/lib/apt/lists/"*
    tar -C "$dir/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" >&2 ||
        { rm -rf "$dir"; fail "podman import of the debootstrap tree failed"; }
    rm -rf "$dir"
}

# The settings podman needs here: none, or container/podman.conf.
choose_conf() {
    unset CONTAINERS_CONF
    if podman run --rm "$base" true >/dev/null 2>&1; then
        return 0
    fi
    export CONTAINERS_CONF="$here/podman.conf"
    podman run --rm "$base" true >&2 ||
        fail "podman cannot run a container here, even with $CONTAINERS_CONF (the error is above)"
    say "podman's defaults fail here; using $CONTAINERS_CONF"
}

install_tools
make_base
choose_conf

if ! podman image exists localhost/toolgate-postgres:latest; then
    say "building localhost/toolgate-postgres:latest"
    podman build --network host --build-arg "BASE_IMAGE=$base" -f "$here/postgres.Dockerfile" \
        -t localhost/toolgate-postgres:latest "$root" >&2 || fail "the PostgreSQL image did not build"
fi

args=(--format docker --network host --build-arg "BASE_IMAGE=$base")
if [[ -n "$prebuilt" ]]; then
    install -m 0755 "$prebuilt" "$root/target/container/toolgate"
    args+=(--build-arg BINARY_FROM=prebuilt)
else
    rm -f "$root/target/container/toolgate"
    commit="$(git -C "$root" log -1 --format='%h %cs' --abbrev=12 2>/dev/null || true)"
    args+=(--build-arg "TOOLGATE_COMMIT=$commit")
fi
say "building localhost/toolgate:latest"
podman build "${args[@]}" -t localhost/toolgate:latest "$root" >&2 || fail "the toolgate image did not build"
echo "${CONTAINERS_CONF:+export CONTAINERS_CONF=$CONTAINERS_CONF}"
