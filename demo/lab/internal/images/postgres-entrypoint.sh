#!/bin/bash
# Entrypoint of the lab's PostgreSQL image built from Debian's packages; it
# takes the settings the official image takes (POSTGRES_PASSWORD, PGDATA).
set -euo pipefail
BIN=/usr/lib/postgresql/15/bin
export PGDATA=${PGDATA:-/var/lib/postgresql/data}
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  umask 077
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  "$BIN/initdb" -D "$PGDATA" -U postgres --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
