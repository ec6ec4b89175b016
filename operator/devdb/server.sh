# The dev database: a throwaway PostgreSQL that desired SQL is loaded into.
# It initialises $PGDATA, lets the non-superuser role ptah (CREATEDB,
# CREATEROLE) in, through a unix socket in $PTAH_DEV_SOCKET_DIR (no TCP
# listener), and runs the server in the foreground. initdb, postgres and
# pg_isready come from PATH.
set -eu
: "${PGDATA:?set PGDATA to an empty directory}" "${PTAH_DEV_SOCKET_DIR:?set PTAH_DEV_SOCKET_DIR}"
initdb -D "$PGDATA" -U postgres --auth=reject -E UTF8 --locale=C --no-sync >/dev/null
# ptah logs in by trust and creates, per comparison, a database and a role
# of the same name that owns it (no other privilege, a random password):
# that role loads the desired SQL, by password, into its own database only
# (sameuser). The superuser logs in only by the password whose SCRAM
# verifier is in $PTAH_DEV_SUPER_VERIFIER, when it is set: ptah, which
# started the server and alone knows the password, uses it only to mark
# LEAKPROOF the functions desired SQL declared so, which no other role may.
# Unset (the operator's sidecar), nothing can log in as the superuser.
super=reject
[ -n "${PTAH_DEV_SUPER_VERIFIER:-}" ] && super=scram-sha-256
{
  echo "local all ptah trust"
  echo "local all postgres $super"
  echo "local sameuser all scram-sha-256"
} > "$PGDATA/pg_hba.conf"
{
  echo "CREATE ROLE ptah LOGIN CREATEDB CREATEROLE NOSUPERUSER NOREPLICATION NOBYPASSRLS"
  [ -n "${PTAH_DEV_SUPER_VERIFIER:-}" ] && echo "ALTER ROLE postgres PASSWORD '$PTAH_DEV_SUPER_VERIFIER'"
  true
} | postgres --single -D "$PGDATA" -c exit_on_error=true postgres >/dev/null
exec postgres -D "$PGDATA" -c listen_addresses= -c "unix_socket_directories=$PTAH_DEV_SOCKET_DIR" \
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=20 -c shared_buffers=16MB \
  -c password_encryption=scram-sha-256
