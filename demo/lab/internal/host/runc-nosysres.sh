#!/bin/sh
# OCI runtime wrapper installed by the Ptah lab. This host's capability
# bounding set lacks CAP_SYS_RESOURCE, so runc fails to start privileged
# containers (kind's nodes) with "unable to apply caps". Drop that capability
# from the container's spec, then exec the real runc unchanged.
#   create/run: <bundle>/config.json, .process.capabilities
#   exec:       the --process file, .capabilities
REAL=/usr/sbin/runc
[ -x "$REAL" ] || REAL=/usr/bin/runc
DROP=CAP_SYS_RESOURCE
bundle=""; procfile=""; prev=""; sub=""
for a in "$@"; do
  case "$prev" in --bundle|-b) bundle="$a";; --process|-p) procfile="$a";; esac
  case "$a" in
    --bundle=*) bundle="${a#--bundle=}";;
    --process=*) procfile="${a#--process=}";;
    create|run|exec) [ -z "$sub" ] && sub="$a";;
  esac
  prev="$a"
done
strip() {
  f=$1; p=$2
  [ -f "$f" ] && grep -q "$DROP" "$f" || return 0
  jq -c --arg d "$DROP" "$p |= (if . == null then . else with_entries(.value |= (if type==\"array\" then map(select(. != \$d)) else . end)) end)" "$f" > "$f.tmp.$$" && mv "$f.tmp.$$" "$f"
}
case "$sub" in
  create|run) strip "${bundle:-$PWD}/config.json" .process.capabilities;;
  exec) [ -n "$procfile" ] && strip "$procfile" .capabilities;;
esac
exec "$REAL" "$@"
