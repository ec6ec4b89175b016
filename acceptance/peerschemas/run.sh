#!/usr/bin/env bash
# Measure ptah schema plan/apply against the sqldef PostgreSQL cases in
# ../shared/peer-schemas (other projects' test data, never needed by the
# product): build ptah, start a private dev server for the desired SQL (ptah
# refuses a dev database on the target's own server), run the suite's own
# harness, then print its counts and the failures grouped by cause.
#
#   acceptance/peerschemas/run.sh [CASES_DIR]
#
# Environment: MATCH, JOBS, KEEP, PTAH_TIMEOUT as the harness reads them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/peer-schemas}
CASES=${1:-$PEERS/sqldef}
if [[ ! -x $PEERS/run.sh || ! -d $CASES ]]; then
  echo "peer-schemas: skipped: $PEERS (the sqldef suite and its harness) is not on this machine"
  exit 0
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
WORK=$(mktemp -d /tmp/ptah-peers.XXXXXX)
chmod 755 "$WORK"
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  [[ -f $WORK/dev/postmaster.pid ]] && as_pg "$PGBIN/pg_ctl" -D "$WORK/dev" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/ptah" "$ROOT/cmd/ptah"
# ptah as a PtahSchema would run it: a case creating schemas of its own
# (meta.json "schemas") keeps them and public, as spec.schemas would say.
cat >"$WORK/ptah-schemas" <<'WRAP'
#!/usr/bin/env bash
extra=()
if [[ ${1:-} == schema && ( ${2:-} == plan || ${2:-} == drift ) ]]; then
  args=("$@")
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    [[ ${args[i]} == --schema-file ]] && meta=$(dirname "${args[i + 1]}")/meta.json
  done
  if [[ -n ${meta:-} && -f $meta ]]; then
    mapfile -t own < <(jq -r '.schemas[]?' "$meta")
    if ((${#own[@]})); then
      extra=(--schema public)
      for s in "${own[@]}"; do extra+=(--schema "$s"); done
    fi
  fi
fi
exec "$(dirname "$0")/ptah" "$@" "${extra[@]}"
WRAP
chmod 755 "$WORK/ptah-schemas"
[[ $(id -u) -eq 0 ]] && chown postgres "$WORK"
as_pg "$PGBIN/initdb" -D "$WORK/dev" -U postgres -A trust -E UTF8 --locale=C >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; exit 2; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$PGBIN/pg_ctl" -D "$WORK/dev" -l "$WORK/dev.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$WORK -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=100" \
  start >/dev/null
export PTAH_DEV_URL="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
"$PEERS/run.sh" "$CASES" "$WORK/ptah-schemas" | tee "$WORK/out.txt"
summary=$(grep '^peer schemas: [0-9]* cases' "$WORK/out.txt")
pass=$(grep -c '^PASS' "$WORK/out.txt" || true)
echo
echo "peer-schemas: pass $pass; ${summary#peer schemas: }"
echo "peer-schemas: failures by cause:"
# A cause is the error code and what it names, or the check that failed
# and the first kind of object or statement involved.
{ grep -E '^(FAIL|ERROR) ' "$WORK/out.txt" || true; } | sed -E \
  -e 's/^ERROR [^ ]+ -- plan: ptah does not plan ([^:]+):.*/refused (unmanaged_object): \1/' \
  -e 's/^ERROR [^ ]+ -- plan: the database differs .*/refused (unplanned_difference)/' \
  -e 's/^ERROR [^ ]+ -- apply: .*\(SQLSTATE ([0-9A-Z]+)\).*/apply failed: SQLSTATE \1/' \
  -e 's/^ERROR [^ ]+ -- plan: plan the changes to [^:]*: ([a-z ]+).*/plan failed (atlas): \1/' \
  -e 's/^ERROR [^ ]+ -- plan: [^ ]+\.sql:[0-9]+: .*/plan failed: the desired SQL did not load/' \
  -e 's/^ERROR [^ ]+ -- (.{0,60}).*/error: \1/' \
  -e 's/^FAIL  [^:]+: a\(converged\).* first: ([A-Z]+( [A-Z]+)?).*/not converged: second plan \1/' \
  -e 's/^FAIL  [^:]+: (b\(equal\)|c\(classified\)).*catalog differs .* first: (want|got) ([a-z]+).*/not equal: \2 \3/' \
  -e 's/^FAIL  [^:]+: c\(classified\).*/misclassified/' \
  | sort | uniq -c | sort -rn
