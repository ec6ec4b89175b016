# The dev database: a throwaway PostgreSQL that desired SQL is loaded into.
# It initialises $PGDATA, lets only the non-superuser role ptah (CREATEDB) in,
# through a unix socket in $PTAH_DEV_SOCKET_DIR (no TCP listener), and runs
# the server in the foreground. initdb, postgres and pg_isready come from PATH.
set -eu
: "${PGDATA:?set PGDATA to an empty directory}" "${PTAH_DEV_SOCKET_DIR:?set PTAH_DEV_SOCKET_DIR}"
initdb -D "$PGDATA" -U postgres --auth=reject -E UTF8 --locale=C --no-sync >/dev/null
# The superuser has no pg_hba line: nothing can log in as it.
echo "local all ptah trust" > "$PGDATA/pg_hba.conf"
echo "CREATE ROLE ptah LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION" |
  postgres --single -D "$PGDATA" -c exit_on_error=true postgres >/dev/null
exec postgres -D "$PGDATA" -c listen_addresses= -c "unix_socket_directories=$PTAH_DEV_SOCKET_DIR" \
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=20 -c shared_buffers=16MB
