#!/bin/sh
# acceptance/smoke.sh: the end-to-end smoke on the lab that `make test` runs
# (make lab-smoke). Needs the operator's images (make images), root and Docker.
#
# 1. The lab up (demo/bin/lab up; idempotent, so a lab already up is used).
# 2. first-apply and failure-recovery recorded into a temporary recording,
#    every check holding, and the site built from it with the lab's
#    credentials refused.
# 3. acceptance/reproduce.sh failure-recovery against the published recording.
# 4. The lab down, but only when this script brought it up: a lab the user
#    already had stays up.
# The recorder records only a committed tree, so a tree with uncommitted
# changes is refused before anything starts.
set -eu

root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"

# The recorder's own rule (recording.Pin), asked before the lab comes up so a
# refusal costs nothing; demo/.lab is ignored by git.
dirty=$(git status --porcelain=v1 --untracked-files=all | head -n 5)
if [ -n "$dirty" ]; then
	echo "smoke: refused: the tree has uncommitted changes ($(echo "$dirty" | tr '\n' ' ')); the recorder records only a committed tree: commit them, or run make test on a clean checkout" >&2
	exit 1
fi

step() {
	echo "== smoke: $*"
	started=$(date +%s)
}
took() { echo "== smoke: took $(($(date +%s) - started))s"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptah-smoke.XXXXXX")
brought_up=no
[ -e demo/.lab/created ] || brought_up=yes
finish() {
	status=$?
	if [ "$brought_up" = yes ]; then
		echo "== smoke: taking down the lab it brought up"
		demo/bin/lab down || status=1
	else
		echo "== smoke: the lab was up before the smoke; it stays up (make demo-down takes it down)"
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

step "lab up"
demo/bin/lab up
took

for id in first-apply failure-recovery; do
	step "record $id into $tmp/runs.json"
	go run ./cmd/record -only "$id" -output "$tmp/runs.json" -junit "$tmp/$id.xml"
	took
done

step "site built from the smoke's recording, the lab's credentials refused"
go run ./cmd/site -recording "$tmp" -out "$tmp/site" -environment demo/.lab/environment
took

step "reproduce failure-recovery as a reader"
acceptance/reproduce.sh failure-recovery
took
echo "== smoke: passed"
