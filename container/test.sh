#!/usr/bin/env bash
# The container check: builds the images (container/build.sh, passing its arguments on),
# starts compose.yaml's set with podman-compose under a project name of its own, and
# checks it end to end: both workers answer /healthz on their published ports and pass
# the image's HEALTHCHECK, a run of the example agent started on worker A waits for an
# approval, the approval given on worker B completes it, and the file its call wrote is
# in B's workspace. The set (containers, network, volume) is removed at the end, also on
# failure. Fails loudly (non-zero exit, the reason on stderr); prints `container check
# passed` last when all held.
#
#   container/test.sh --prebuilt target/release/toolgate
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
project="toolgate-check-$$"

fail() {
    echo "container/test.sh: $*" >&2
    exit 1
}

conf="$(bash "$here/build.sh" "$@" | tail -n 1)"
[[ -n "$conf" ]] && eval "$conf"

secrets="$(mktemp -d)"
head -c 32 /dev/urandom | base64 >"$secrets/secret_key"
head -c 24 /dev/urandom | base64 | tr -d '\n/+=' >"$secrets/api_key"
key="$(cat "$secrets/api_key")"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export TOOLGATE_SECRETS_DIR="$secrets" TOOLGATE_POSTGRES_IMAGE=localhost/toolgate-postgres:latest
export TOOLGATE_PORT_A="$(free_port)" TOOLGATE_PORT_B="$(free_port)" TOOLGATE_IMAGE=localhost/toolgate:latest
a="http://127.0.0.1:$TOOLGATE_PORT_A" b="http://127.0.0.1:$TOOLGATE_PORT_B"

compose() { podman-compose -f "$root/compose.yaml" -p "$project" "$@"; }
cleanup() {
    compose down -v >/dev/null 2>&1 || true
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    rm -rf "$secrets"
}
trap cleanup EXIT

compose up -d >"$secrets/up.log" 2>&1 || { cat "$secrets/up.log" >&2; fail "podman-compose up failed"; }

# Both workers answer /healthz (they restart until PostgreSQL accepts them).
for url in "$a" "$b"; do
    for _ in $(seq 1 60); do
        [[ "$(curl -fsS -m 2 "$url/healthz" 2>/dev/null)" == *'"ok"'* ]] && continue 2
        sleep 1
    done
    podman ps -a >&2
    compose logs >&2 || true
    fail "no /healthz answer from $url within 60 s"
done
for worker in worker-a worker-b; do
    podman healthcheck run "${project}_${worker}_1" >&2 ||
        fail "the image's HEALTHCHECK failed in ${project}_${worker}_1"
done

field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }
api() { curl -fsS -m 20 -H "Authorization: Bearer $key" -H 'content-type: application/json' "$@"; }

run="$(api -d '{"agent":"filer","input":"write the note"}' "$a/v1/runs")" || fail "POST /v1/runs on worker A failed"
id="$(field '["id"]' <<<"$run")"
[[ "$(field '["status"]' <<<"$run")" == requires_action ]] || fail "the run did not wait for approval: $run"
[[ "$(field '["required_action"]["items"][0]["tool"]' <<<"$run")" == write_file ]] || fail "unexpected wait: $run"

done_run="$(api -d '{"by":"container-check"}' "$b/v1/runs/$id/approve")" || fail "approving $id on worker B failed"
[[ "$(field '["status"]' <<<"$done_run")" == completed ]] || fail "the approved run did not complete: $done_run"
seen="$(api "$a/v1/runs/$id")" || fail "GET /v1/runs/$id on worker A failed"
[[ "$(field '["status"]' <<<"$seen")" == completed ]] || fail "worker A does not see the run completed: $seen"
note="$(podman exec "${project}_worker-b_1" cat /var/lib/toolgate/workspace/note.txt)" ||
    fail "the approved call wrote no note.txt in worker B's workspace"
[[ "$note" == "written in a container" ]] || fail "note.txt holds '$note'"
[[ "$(podman exec "${project}_worker-a_1" id -u)" != 0 ]] || fail "the worker runs as root"

echo "container check passed: /healthz on both workers, run $id started on A, approved on B"
