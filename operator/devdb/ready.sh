# The dev database sidecar's postStart hook: `sh -c "$Ready" ptah-dev-ready
# SOCKET_DIR SECONDS` returns once the server Script started accepts
# connections on its socket in SOCKET_DIR, and fails after SECONDS. The
# kubelet starts the Pod's next container only once a native sidecar's
# postStart hook has returned, so the runner starts on a server that
# answers; this polls a tenth of a second apart, where a startup probe's
# period is a whole second. pg_isready comes from PATH.
set -eu
dir=$1 limit=$2
# Tenths of a second slept, not the clock: date's whole seconds would give
# up as much as a second early.
slept=0
until pg_isready -q -h "$dir" -U ptah -d postgres; do
  if [ "$slept" -ge $((limit * 10)) ]; then
    echo "the dev database did not accept connections on $dir within $limit s" >&2
    exit 1
  fi
  if sleep 0.1 2>/dev/null; then slept=$((slept + 1)); else sleep 1; slept=$((slept + 10)); fi
done
