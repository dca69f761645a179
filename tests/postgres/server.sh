#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests, the benchmarks and the worker soak,
# and prints its URL (postgres://postgres@127.0.0.1:PORT/postgres) as the last line.
#
#   tests/postgres/server.sh WATCH_PID
#
# The server lives in a new temporary folder, listens on 127.0.0.1 on a free port, and
# is stopped (and its folder removed) once process WATCH_PID has ended. Debian's
# `postgresql` package is installed with apt-get when no initdb is found. As root, the
# server runs as the `postgres` user (PostgreSQL refuses to run as root).
# TOOLGATE_PG_DURABLE=1 keeps fsync on (for measurements); the tests turn it off.
# TOOLGATE_PG_STATEMENTS=1 loads pg_stat_statements (statement counts for the cost model).
# Fails loudly (non-zero exit, the reason on stderr) when it cannot start one.
set -euo pipefail

fail() {
    echo "tests/postgres/server.sh: $*" >&2
    exit 1
}

watch="${1:-}"
[[ "$watch" =~ ^[0-9]+$ ]] || fail "usage: server.sh WATCH_PID (the process whose end stops the server)"

find_bin() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    return 1
}

# One install at a time: test threads may all ask at once.
exec 9>/tmp/toolgate-pg-setup.lock
command -v flock >/dev/null 2>&1 && flock 9
if ! bin="$(find_bin)"; then
    command -v apt-get >/dev/null 2>&1 ||
        fail "no PostgreSQL (initdb) and no apt-get: install PostgreSQL (Debian: apt-get install postgresql)"
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || fail "installing postgresql needs root (or sudo)"
        sudo="sudo"
    fi
    echo "tests/postgres/server.sh: installing Debian's postgresql" >&2
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends postgresql >&2; then
        $sudo apt-get update >&2 || fail "apt-get update failed (is the Debian mirror reachable?)"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends postgresql >&2 ||
            fail "apt-get install postgresql failed"
    fi
    bin="$(find_bin)" || fail "postgresql installed, but no initdb found under /usr/lib/postgresql"
fi
exec 9>&-

as_owner=()
if [[ "$(id -u)" == 0 ]]; then
    id postgres >/dev/null 2>&1 || fail "running as root and there is no 'postgres' user to run the server as"
    as_owner=(runuser -u postgres --)
fi

dir="$(mktemp -d /tmp/toolgate-pg.XXXXXX)"
chmod 700 "$dir"
[[ ${#as_owner[@]} -gt 0 ]] && chown postgres "$dir"
"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
    fail "initdb failed: $(tail -5 "$dir/initdb.log")"

durable=()
if [[ "${TOOLGATE_PG_DURABLE:-0}" != 1 ]]; then
    durable=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
fi
if [[ "${TOOLGATE_PG_STATEMENTS:-0}" == 1 ]]; then
    durable+=(-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all)
fi
started=""
for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    if "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 ${durable[*]}" \
        start >"$dir/pg_ctl.log" 2>&1; then
        started=1
        break
    fi
done
[[ -n "$started" ]] || fail "the server did not start: $(tail -5 "$dir/server.log" 2>/dev/null)"

# Stopped once the watched process has ended, whatever way it ends.
setsid bash -c "
    while kill -0 $watch 2>/dev/null; do sleep 1; done
    ${as_owner[*]} '$bin/pg_ctl' -D '$dir/data' -m immediate stop >/dev/null 2>&1
    rm -rf '$dir'
" </dev/null >/dev/null 2>&1 &

echo "postgres://postgres@127.0.0.1:$port/postgres"
