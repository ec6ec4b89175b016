#!/bin/sh
# acceptance/first-apply.sh [RUNS]: how long the first apply takes on the
# lab (make demo-up first): RUNS times (default 5), the demo namespace reset
# and storefront v1 created with APPLY=Always, the time from the create to
# InSync=True, then each operation's Pod from its creation to its runner's
# end (the Pod's own timestamps, so to the second). Prints each run and the
# median, and where the machine's CPU went from create to InSync=True: the
# kind node in all, its API server and etcd, the operation Pods (every Pod
# that ended in between), and the container runtime and kubelet (the node
# outside Pods), read from the node's cgroup (cgroup v1, as on the machines
# this was measured on; the v2 paths are tried too but have not been seen
# here; skipped when neither is readable), with what the idle lab spends in
# 10 s beside it.
set -eu
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"
runs=${1:-5}
[ -f demo/.lab/environment ] || { echo "first-apply: no lab: run make demo-up" >&2; exit 1; }
set -a
. demo/.lab/environment
set +a
# cpu prints "name nanoseconds" for the kind node, its Pods in all, and each
# Pod that is running (by namespace/name), from the node container's cgroup
# (a static Pod's cgroup is named by its config hash, not its mirror's UID).
node=$(kubectl config current-context | sed 's/^kind-//')-control-plane
id=$(docker inspect -f '{{.Id}}' "$node" 2>/dev/null || true)
cg=""
for d in "/sys/fs/cgroup/cpuacct/docker/$id" "/sys/fs/cgroup/system.slice/docker-$id.scope"; do
	[ -n "$id" ] && [ -d "$d" ] && cg=$d && break
done
usage() {
	if [ -f "$1/cpuacct.usage" ]; then cat "$1/cpuacct.usage"
	elif [ -f "$1/cpu.stat" ]; then awk '$1 == "usage_usec" { print $2 * 1000 }' "$1/cpu.stat"
	else echo 0; fi
}
cpu() {
	[ -n "$cg" ] || return 0
	pods=$cg/kubelet.slice/kubelet-kubepods.slice
	echo "node $(usage "$cg")"
	echo "pods $(usage "$pods")"
	kubectl get pods -A -o json | jq -r '.items[] | "\(.metadata.annotations["kubernetes.io/config.hash"] // .metadata.uid) \(.metadata.namespace)/\(.metadata.name)"' | while read -r uid name; do
		u=$(echo "$uid" | tr - _)
		for d in "$pods"/kubelet-kubepods-pod"$u".slice "$pods"/*/kubelet-kubepods-*-pod"$u".slice; do
			[ -d "$d" ] && echo "$name $(usage "$d")" && break
		done
	done
}
# spent prints where CPU went between two snapshots of cpu, in seconds.
spent() {
	awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { d[$1] = ($2 - a[$1]) / 1e9 }
		END {
			for (n in d) if (n != "node" && n != "pods") { long += d[n]; if (n ~ /kube-apiserver/) api += d[n]; if (n ~ /^kube-system\/etcd/) etcd += d[n] }
			printf "node %.1f s CPU: API server %.1f, etcd %.1f, operation Pods %.1f, other Pods %.1f, runtime and kubelet %.1f",
				d["node"], api, etcd, d["pods"] - long, long - api - etcd, d["node"] - d["pods"]
		}' "$1" "$2"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$cg" ]; then
	cpu >"$tmp/idle0"
	sleep 10
	cpu >"$tmp/idle1"
	echo "idle lab, 10 s: $(spent "$tmp/idle0" "$tmp/idle1")"
else
	echo "first-apply: the kind node's cgroup is not readable here; CPU is not reported" >&2
fi
times=""
i=1
while [ "$i" -le "$runs" ]; do
	demo/bin/lab reset >/dev/null 2>&1
	digest=$(demo/bin/lab publish v1)
	doc=$(APPLY=Always demo/bin/lab manifest storefront "$digest")
	cpu >"$tmp/run0"
	t0=$(date +%s.%N)
	printf '%s\n' "$doc" | kubectl apply -f - >/dev/null
	kubectl -n "$NAMESPACE" wait ptahschema/storefront --for=condition=InSync=True --timeout=5m >/dev/null
	t1=$(date +%s.%N)
	cpu >"$tmp/run1"
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	times="$times $took"
	pods=$(kubectl -n "$NAMESPACE" get pods -l job-name --sort-by=.metadata.creationTimestamp -o json | jq -r '
		.items[] | . as $p | ($p.metadata.labels["operator.ptah.run/op"] // $p.metadata.name) + " "
		+ ([$p.status.containerStatuses[]? | select(.name == "runner") | .state.terminated.finishedAt // empty]
		   | if length == 0 then "running" else (((.[0] | fromdate) - ($p.metadata.creationTimestamp | fromdate)) | tostring) + "s" end)' | tr '\n' ' ')
	echo "run $i: create to InSync ${took} s; each Pod, creation to its runner's end: $pods"
	[ -z "$cg" ] || echo "run $i: $(spent "$tmp/run0" "$tmp/run1")"
	i=$((i + 1))
done
echo "$times" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "first apply, create to InSync=True over %d runs: median %.1f s (min %.1f, max %.1f)\n", NR, m, v[1], v[NR] }'
