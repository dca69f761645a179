#!/bin/sh
# Starts PostgreSQL as the official image does: on first start (an empty $PGDATA) it makes
# the cluster with POSTGRES_USER / POSTGRES_PASSWORD (password logins over the network)
# and creates POSTGRES_DB; then it runs the server in the foreground, listening on all
# addresses. Fails loudly when POSTGRES_PASSWORD is missing.
set -eu
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "postgres-entrypoint: POSTGRES_PASSWORD is not set" >&2; exit 1; }
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$db" != postgres ]; then
        "$bin/psql" -v ON_ERROR_STOP=1 -U "$user" -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
    fi
    "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
