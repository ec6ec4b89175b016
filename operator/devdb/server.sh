# The dev database: a throwaway PostgreSQL that desired SQL is loaded into.
# It makes $PGDATA, lets the non-superuser role ptah (CREATEDB,
# CREATEROLE) in, through a unix socket in $PTAH_DEV_SOCKET_DIR (no TCP
# listener), and runs the server in the foreground. initdb, postgres and
# pg_isready come from PATH.
#
# `sh -c "$Script" ptah-dev-database template` makes, in $PTAH_DEV_TEMPLATE,
# the cluster a start makes, and exits: an image that holds one (and sets
# PTAH_DEV_TEMPLATE) starts by copying it instead of running initdb, which
# is most of a start's time and CPU.
set -eu
create_role="CREATE ROLE ptah LOGIN CREATEDB CREATEROLE NOSUPERUSER NOREPLICATION NOBYPASSRLS"
fresh() {
  initdb -D "$1" -U postgres --auth=reject -E UTF8 --locale=C --no-sync >/dev/null
}
single() {
  postgres --single -D "$1" -c exit_on_error=true postgres >/dev/null
}
if [ "${1:-}" = template ]; then
  : "${PTAH_DEV_TEMPLATE:?set PTAH_DEV_TEMPLATE to the directory to make the template in}"
  fresh "$PTAH_DEV_TEMPLATE"
  echo "$create_role" | single "$PTAH_DEV_TEMPLATE"
  exit 0
fi
: "${PGDATA:?set PGDATA to an empty directory}" "${PTAH_DEV_SOCKET_DIR:?set PTAH_DEV_SOCKET_DIR}"
# ptah logs in by trust and creates, per comparison, a database and a role
# of the same name that owns it (no other privilege, a random password):
# that role loads the desired SQL, by password, into its own database only
# (sameuser). The superuser logs in only by the password whose SCRAM
# verifier is in $PTAH_DEV_SUPER_VERIFIER, when it is set: ptah, which
# started the server and alone knows the password, uses it only to mark
# LEAKPROOF the functions desired SQL declared so, which no other role may.
# Unset (the operator's sidecar), nothing can log in as the superuser.
super=reject
alter_super=
if [ -n "${PTAH_DEV_SUPER_VERIFIER:-}" ]; then
  super=scram-sha-256
  alter_super="ALTER ROLE postgres PASSWORD '$PTAH_DEV_SUPER_VERIFIER'"
fi
if [ -f "${PTAH_DEV_TEMPLATE:-/nonexistent}/PG_VERSION" ]; then
  # Plain -R: the copy is the running user's, with the template's modes.
  cp -R "$PTAH_DEV_TEMPLATE" "$PGDATA"
  [ -z "$alter_super" ] || echo "$alter_super" | single "$PGDATA"
else
  fresh "$PGDATA"
  printf '%s\n%s\n' "$create_role" "$alter_super" | single "$PGDATA"
fi
{
  echo "local all ptah trust"
  echo "local all postgres $super"
  echo "local sameuser all scram-sha-256"
} > "$PGDATA/pg_hba.conf"
exec postgres -D "$PGDATA" -c listen_addresses= -c "unix_socket_directories=$PTAH_DEV_SOCKET_DIR" \
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=20 -c shared_buffers=16MB \
  -c password_encryption=scram-sha-256
