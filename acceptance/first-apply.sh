#!/bin/sh
# acceptance/first-apply.sh [RUNS]: how long the first apply takes on the
# lab (make demo-up first): RUNS times (default 5), the demo namespace reset
# and storefront v1 created with APPLY=Always, the time from the create to
# InSync=True, then each operation's Pod from its creation to its runner's
# end (the Pod's own timestamps, so to the second). Prints each run and the
# median.
set -eu
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"
runs=${1:-5}
[ -f demo/.lab/environment ] || { echo "first-apply: no lab: run make demo-up" >&2; exit 1; }
set -a
. demo/.lab/environment
set +a
times=""
i=1
while [ "$i" -le "$runs" ]; do
	demo/bin/lab reset >/dev/null 2>&1
	digest=$(demo/bin/lab publish v1)
	doc=$(APPLY=Always demo/bin/lab manifest storefront "$digest")
	t0=$(date +%s.%N)
	printf '%s\n' "$doc" | kubectl apply -f - >/dev/null
	kubectl -n "$NAMESPACE" wait ptahschema/storefront --for=condition=InSync=True --timeout=5m >/dev/null
	t1=$(date +%s.%N)
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	times="$times $took"
	pods=$(kubectl -n "$NAMESPACE" get pods -l job-name --sort-by=.metadata.creationTimestamp -o json | jq -r '
		.items[] | . as $p | ($p.metadata.labels["operator.ptah.run/op"] // $p.metadata.name) + " "
		+ ([$p.status.containerStatuses[]? | select(.name == "runner") | .state.terminated.finishedAt // empty]
		   | if length == 0 then "running" else (((.[0] | fromdate) - ($p.metadata.creationTimestamp | fromdate)) | tostring) + "s" end)' | tr '\n' ' ')
	echo "run $i: create to InSync ${took} s; each Pod, creation to its runner's end: $pods"
	i=$((i + 1))
done
echo "$times" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "first apply, create to InSync=True over %d runs: median %.1f s (min %.1f, max %.1f)\n", NR, m, v[1], v[NR] }'
