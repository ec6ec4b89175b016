#!/bin/sh
# acceptance/reproduce.sh [ID]: repeat a published scenario (default
# failure-recovery) the way a reader would, and compare it with what was
# published in demo/recordings/runs.json. Needs a lab (make demo-up).
#
# 1. As the lab: a ServiceAccount that may read and write the Ptah kinds, read
#    Events, Jobs, the controller and the CRDs, and exec into demo-psql, but
#    may not create a Job; a kubeconfig holding a token for it.
# 2. As the lab: the scenario's reset, then the lab's two hand-overs.
#    `lab credentials` is kept in a file the reader's shell sources. Each
#    `demo/bin/lab manifest ...` (or `lab credentials`) call in a step is run
#    exactly as written, its output kept in the directory, and the call is
#    replaced by `cat FILE`; nothing else in the step changes. So
#      APPLY=Always demo/bin/lab manifest storefront "$(cat demo/.lab/digest)" \
#        | sed 's/name: demo-database/name: demo-database-broken/' | kubectl apply -f -
#    runs as
#      cat step1-manifest.yaml \
#        | sed 's/name: demo-database/name: demo-database-broken/' | kubectl apply -f -
# 3. In a fresh temporary directory holding neither demo/bin/lab nor the
#    recorder, under env -i with only the published names (KUBECONFIG names
#    the account's kubeconfig): `kubectl auth can-i create jobs` must print
#    "no"; every step runs and every claim is checked on the live objects;
#    the normalized transcript is diffed against the published one; can-i is
#    asked again.
# The exit status is 0 only when every claim held and the account could
# create no Job before and after.
set -eu

id=${1:-failure-recovery}
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"

environment=$root/demo/.lab/environment
recording=$root/demo/recordings/runs.json
[ -r "$environment" ] || { echo "reproduce: no lab ($environment is missing): run make demo-up first" >&2; exit 2; }
[ -r "$recording" ] || { echo "reproduce: nothing published ($recording is missing): run make demo first" >&2; exit 2; }

# labvalue NAME: the value the lab's environment file gives NAME.
labvalue() {
	sed -n "s/^\(export \)\{0,1\}$1=//p" "$environment" | tail -n 1 | sed "s/^\"\(.*\)\"\$/\1/; s/^'\(.*\)'\$/\1/"
}
admin=$(labvalue KUBECONFIG)
ns=$(labvalue NAMESPACE)
operator_ns=$(labvalue OPERATOR_NAMESPACE)
[ -n "$admin" ] && [ -n "$ns" ] && [ -n "$operator_ns" ] || {
	echo "reproduce: $environment lacks KUBECONFIG, NAMESPACE or OPERATOR_NAMESPACE: run make demo-up again" >&2
	exit 2
}
lab() { kubectl --kubeconfig "$admin" "$@"; }

account=ptah-reproduce
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptah-reproduce.XXXXXX")
tools=$tmp/tools work=$tmp/work home=$tmp/home
mkdir -m 700 "$tools" "$work" "$home"
cleanup() {
	lab delete --ignore-not-found --wait=false clusterrolebinding,clusterrole "$account:$ns" >/dev/null 2>&1 || true
	lab -n "$operator_ns" delete --ignore-not-found --wait=false rolebinding,role "$account:$ns" >/dev/null 2>&1 || true
	lab -n "$ns" delete --ignore-not-found --wait=false rolebinding,role,serviceaccount "$account" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build the repetition's checker (kept outside the directory and off PATH)"
go build -o "$tools/reproduce" ./acceptance/reproduce
echo "== install the kubectl plugin as a reader would (kubectl-ptah on PATH)"
mkdir -m 700 "$tmp/plugins"
CGO_ENABLED=0 go build -trimpath -o "$tmp/plugins/kubectl-ptah" ./cmd/kubectl-ptah

echo "== as the lab: account $account in $ns, which may not create a Job"
sed -e "s/\${NAMESPACE}/$ns/g" -e "s/\${OPERATOR_NAMESPACE}/$operator_ns/g" acceptance/account.yaml | lab apply -f - >/dev/null
server=$(lab config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(lab config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
[ -n "$server" ] && [ -n "$ca" ] || { echo "reproduce: $admin names no server with certificate-authority-data" >&2; exit 1; }
token=$(lab -n "$ns" create token "$account" --duration=2h)
umask 077
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $account, user: {token: "$token"}}]
contexts: [{name: $account, context: {cluster: lab, user: $account, namespace: "$ns"}}]
current-context: $account
EOF
unset token

echo "== as the lab: reset $id and prepare the hand-overs"
demo/bin/lab credentials >"$tmp/credentials"
"$tools/reproduce" -scenarios "$root/scenarios" -recording "$recording" -environment "$environment" -prepare "$work" "$id"

# reader CMD...: CMD in the directory with only the published names, the
# registry's three coming from the credentials hand-over as a reader's
# `eval "$(demo/bin/lab credentials)"` would set them.
reader() {
	(cd "$work" && env -i PATH="$tmp/plugins:$PATH" HOME="$home" TERM=xterm-256color LANG=C.UTF-8 \
		KUBECONFIG="$work/kubeconfig" NAMESPACE="$ns" OPERATOR_NAMESPACE="$operator_ns" \
		CONTROLLER="$(labvalue CONTROLLER)" REGISTRY_IN_CLUSTER="$(labvalue REGISTRY_IN_CLUSTER)" \
		sh -c '. "$0" && exec "$@"' "$tmp/credentials" "$@")
}
cannot_create_jobs() {
	answer=$(reader kubectl auth can-i create jobs -n "$ns" 2>&1 || true)
	echo "kubectl auth can-i create jobs ($1): $answer"
	[ "$answer" = no ] || { echo "reproduce: the account may create Jobs ($1); the repetition proves nothing" >&2; exit 1; }
}

echo "== in $work, as $(reader kubectl auth whoami -o jsonpath='{.status.userInfo.username}')"
echo "directory: $(ls -A "$work" | tr '\n' ' ')"
cannot_create_jobs before
status=0
reader "$tools/reproduce" -scenarios "$root/scenarios" -recording "$recording" -environment "$environment" "$id" || status=$?
cannot_create_jobs after
exit "$status"
