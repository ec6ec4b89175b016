# Ptah: the operator, the schema tool, the recorder and the demo lab.
# `make test` is everything CI runs; `make demo` is the main job (see README.md).

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
GO ?= go
KUBERNETES_VERSION := v1.37.2
OLDEST_KUBERNETES_VERSION := v1.33.13
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ptah
ENVTEST_DIR := $(CACHE)/envtest/$(KUBERNETES_VERSION)
export KUBEBUILDER_ASSETS := $(ENVTEST_DIR)
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(CACHE)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)

# Debian packages the tests need (binary that proves each one is there).
HOST_PACKAGES := postgresql-15:/usr/lib/postgresql/15/bin/postgres iproute2:/usr/sbin/ip git:/usr/bin/git jq:/usr/bin/jq chromium:/usr/bin/chromium npm:/usr/bin/npm

.PHONY: test host-deps envtest generate check-generated lint scenarios recording unit demo site-deps
.DEFAULT_GOAL := test

## test: everything CI runs (host packages, envtest binaries, generated code up to date, lint, all tests,
## then the lab: its end-to-end test and the smoke on it)
test: host-deps envtest check-generated lint chart scenarios recording unit lab-e2e lab-smoke

## host-deps: install the missing Debian packages the tests need (needs root when any is missing)
host-deps:
	@missing=""; for pb in $(HOST_PACKAGES); do [ -x "$${pb#*:}" ] || missing="$$missing $${pb%%:*}"; done; \
	if [ -z "$$missing" ]; then echo "host-deps: all present"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "host-deps: missing$$missing; install them with apt-get (needs root)" >&2; exit 1; fi; \
	echo "host-deps: installing$$missing"; \
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing

## envtest: build kube-apiserver and etcd from the Go module proxy into $(ENVTEST_DIR), and those of
## the oldest supported release ($(OLDEST_KUBERNETES_VERSION)) beside it, for the compatibility tests
envtest:
	@$(GO) run ./cmd/lab envtest -dir $(ENVTEST_DIR)
	@$(GO) run ./cmd/lab envtest -kubernetes-version $(OLDEST_KUBERNETES_VERSION)

$(CONTROLLER_GEN):
	@mkdir -p $(dir $@)
	GOBIN=$(CACHE)/bin-tmp $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(CACHE)/bin-tmp/controller-gen $@

## generate: deepcopy, CRDs and RBAC from the API types (committed)
generate: $(CONTROLLER_GEN)
	@if [ -d operator/api ]; then \
	  $(CONTROLLER_GEN) object paths=./operator/api/... && \
	  $(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:artifacts:config=operator/config/crd/bases && \
	  $(CONTROLLER_GEN) rbac:roleName=ptah-manager paths=./internal/controller/... output:rbac:artifacts:config=operator/config/rbac && \
	  $(MAKE) --no-print-directory chart-files; \
	else echo "generate: no API types yet, nothing to generate"; fi

CHART := operator/chart/ptah-operator
## chart-files: the chart's copies of the generated CRDs and RBAC rules and of the admission policies
.PHONY: chart-files
chart-files:
	@rm -rf $(CHART)/files && mkdir -p $(CHART)/files/crds $(CHART)/files/rbac $(CHART)/files/admission
	@cp operator/config/crd/bases/*.yaml $(CHART)/files/crds/
	@cp operator/config/rbac/role.yaml $(CHART)/files/rbac/
	@cp operator/config/admission/*.yaml $(CHART)/files/admission/

## check-generated: fail when `make generate` would change committed files
check-generated: generate
	@if [ -n "$$(git status --porcelain -- operator/api operator/config operator/chart)" ]; then \
	  git status --short -- operator/api operator/config operator/chart; \
	  echo "generated code is stale: run make generate and commit the result"; exit 1; fi

## lint: gofmt, go.mod as go mod tidy leaves it (an untidy go.mod is tidied by CI's own module download, which changes the operator source a recording names), and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy and commit the result"; exit 1; }
	$(GO) vet ./...
	@# What a user runs on a Mac (the plugin, ptah) must keep building there.
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/kubectl-ptah ./cmd/ptah

HELM := $(CACHE)/bin/helm-$(shell $(GO) list -m -f '{{.Version}}' helm.sh/helm/v3)
$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(CACHE)/bin-tmp $(GO) install helm.sh/helm/v3/cmd/helm@$(patsubst $(CACHE)/bin/helm-%,%,$@)
	mv $(CACHE)/bin-tmp/helm $@

## chart: helm lint, helm template and helm package of the operator's chart (Helm built from the Go module proxy, the version go.mod pins)
.PHONY: chart
chart: $(HELM)
	$(HELM) lint --strict $(CHART) --kube-version $(KUBERNETES_VERSION)
	$(HELM) lint --strict $(CHART) --kube-version $(OLDEST_KUBERNETES_VERSION)
	$(HELM) template ptah $(CHART) --namespace ptah-system --kube-version $(KUBERNETES_VERSION) > /dev/null
	$(HELM) template ptah $(CHART) --namespace ptah-system --kube-version $(OLDEST_KUBERNETES_VERSION) | grep -q '^kind: MutatingWebhookConfiguration'
	@out=$$(mktemp -d) && $(HELM) package $(CHART) -d $$out && rm -rf $$out

## scenarios: every scenario file loads (format, refusals, environment names), the census and
## those in scenarios/unrecorded, written and not yet recorded (moved to scenarios/ when recorded)
scenarios:
	$(GO) run ./cmd/record -check -scenarios scenarios
	@if ls scenarios/unrecorded/*.yaml >/dev/null 2>&1; then \
	  $(GO) run ./cmd/record -check -scenarios scenarios/unrecorded; \
	else echo "scenarios/unrecorded: none waiting to be recorded"; fi

## recording: the committed recording still matches the scenarios, and the site builds from it
recording:
	@if [ -f demo/recordings/runs.json ]; then \
	  $(GO) run ./cmd/record -verify && \
	  out=$$(mktemp -d) && $(GO) run ./cmd/site -recording demo/recordings -out $$out/site && rm -rf $$out; \
	else echo "recording: none committed yet"; fi

## site-deps: what the site's tests run in node and Chromium, as pinned in site/package-lock.json: axe-core (the
## accessibility rules the browser test runs on every page) and @xterm/headless (the emulator the casts are played in)
## (npm ci checks their integrity; npm's cache serves them without a network after the first install)
SITE_PACKAGES := axe-core @xterm/headless
site-deps:
	@stale=""; for p in $(SITE_PACKAGES); do \
	  want=$$(jq -r --arg p "node_modules/$$p" '.packages[$$p].version' site/package-lock.json); \
	  have=$$(jq -r .version site/node_modules/$$p/package.json 2>/dev/null || true); \
	  [ "$$have" = "$$want" ] || stale="$$stale $$p"; \
	done; \
	if [ -z "$$stale" ]; then echo "site-deps: $(SITE_PACKAGES) present as the lockfile pins them"; \
	else echo "site-deps: installing$$stale"; cd site && npm ci --prefer-offline --no-audit --no-fund; fi

## unit: the Go tests; the real components' start-up times are printed first
unit: site-deps
	$(GO) test -count=1 -v -run 'Test(APIServer|Postgres|Registry)' ./internal/testenv/ | grep -E 'testenv:|^(--- |ok|FAIL|PASS)'
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v /internal/testenv$$)

MIGRATE_FUZZ_CHECKS ?= 2000
.PHONY: migrate-fuzz
## migrate-fuzz: the migration generator's long run, $(MIGRATE_FUZZ_CHECKS) files (make test runs 30) on a PostgreSQL 15
## logging every statement: each refused before anything runs, or one transaction for its version, nothing of a failed one left
migrate-fuzz:
	$(GO) test -count=1 -v -timeout 4h -run '^TestGeneratedMigrationsRunAsChecked$$' ./operator/migrate/ -rapid.checks=$(MIGRATE_FUZZ_CHECKS)

.PHONY: schema-fuzz
## schema-fuzz: the long run of the generators (CHECKS=n cases each, 300 by default; make test runs 12 to 30): schema pairs
## planned and applied on a PostgreSQL 15 holding planted rows, then held to the after side loaded afresh; changes of type
## over drawn values; identities used before the plan and between plan and apply. Prints cases per minute
schema-fuzz:
	$(GO) test -count=1 -v -timeout 4h -run '^(TestGeneratedSchemaPairs|TestConversionsLoseNothingSilently|TestIdentityPositions)$$' ./operator/schema/ -rapid.checks=$(or $(CHECKS),300) | grep -E 'generated pairs|conversions in|identity cases|\[rapid\] failed|^(--- |ok|FAIL)'

.PHONY: peer-schemas
## peer-schemas: run the sqldef PostgreSQL suite from ../shared/peer-schemas (skipped with a message when absent):
## pass, converged, equal and errors, then the failures by cause (MATCH=regex for a subset)
peer-schemas:
	@./acceptance/peerschemas/run.sh

SITE_ADDR ?= 127.0.0.1:8080
.PHONY: site demo-serve
## site: build the replay site from the recording into site/public
site:
	$(GO) run ./cmd/site -recording demo/recordings -out site/public

## demo-serve: build the replay site and serve it on $(SITE_ADDR)
demo-serve:
	$(GO) run ./cmd/site -recording demo/recordings -out site/public -serve $(SITE_ADDR)

BUILD := $(CACHE)/build
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
.PHONY: binaries images lab-host demo-up demo-down lab-e2e lab-smoke faults

## binaries: static manager, ptah and runner binaries into $(BUILD)
binaries:
	@mkdir -p $(BUILD)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BUILD)/ ./cmd/ptah ./cmd/ptah-runner ./cmd/manager

## images: the manager and executor images (no Dockerfile) as tarballs in demo/.lab/images
images: binaries
	@./demo/bin/lab images $(BUILD)

## lab-host: prepare this host for the lab (Docker from apt, dockerd, the OCI runtime wrapper where needed)
lab-host:
	@./demo/bin/lab prepare

## demo-up: bring the lab up (idempotent): kind cluster, registry, PostgreSQL, the operator from this tree
demo-up: images
	@./demo/bin/lab up

## demo-down: remove exactly what the lab created, verify it is gone, say what remains
demo-down:
	@./demo/bin/lab down

## lab-e2e: the lab up from nothing beside any other, checked, and down (root and Docker)
lab-e2e: images
	PTAH_LAB_E2E=1 $(GO) test -count=1 -timeout 90m -run TestLabUpAndDown -v ./demo/lab/

## compat: the lab on the oldest supported Kubernetes ($(OLDEST_KUBERNETES_VERSION)): up beside any other, the operator
## from its OCI chart, the storefront converged through real Jobs, the README's quick start, down (root and Docker;
## the first run builds that release's node image: 11 minutes up, 12 in all, measured cold on 2 cores)
.PHONY: compat
compat: images
	PTAH_LAB_COMPAT=1 $(GO) test -count=1 -timeout 120m -run TestLabCompat -v ./demo/lab/

## faults: the fault table on a lab brought up beside any other and taken down (root and Docker): each fault
## landed in a phase of a PtahSchema, the invariants read from PostgreSQL and the cluster, the summary printed
## (FAULTS_ONLY=regex runs some rows; PTAH_LAB_FAULTS_REUSE=1 runs on the lab of make demo-up and leaves it up)
faults: images
	PTAH_LAB_FAULTS=1 PTAH_FAULTS_TABLE=$(BUILD)/faults-table.md $(GO) test -count=1 -timeout 150m -run TestFaults -v ./demo/lab/
	@cat $(BUILD)/faults-table.md

## lab-smoke: on the lab, first-apply and failure-recovery recorded into a temporary recording, then
## reproduce.sh failure-recovery; a lab this brought up is taken down again (root and Docker)
lab-smoke: images
	acceptance/smoke.sh

DIST ?= $(BUILD)/dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
.PHONY: plugin-archives
## plugin-archives: kubectl-ptah for each krew platform as DIST/kubectl-ptah_OS_ARCH.tar.gz, and the krew manifest
## naming them with their sha256, its version (v0.1.0 in the committed one) vVERSION
plugin-archives:
	@mkdir -p $(DIST) && sed "s/v0\.1\.0/v$(VERSION)/g" cmd/kubectl-ptah/krew/ptah.yaml > $(DIST)/ptah.yaml
	@for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; d=$$(mktemp -d); a=$(DIST)/kubectl-ptah_$${os}_$${arch}.tar.gz; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $$d/kubectl-ptah ./cmd/kubectl-ptah && \
	  cp cmd/kubectl-ptah/kubectl_complete-ptah LICENSE $$d/ && \
	  tar -C $$d --owner=0 --group=0 --mtime=@0 -czf $$a kubectl-ptah kubectl_complete-ptah LICENSE && rm -rf $$d && \
	  sed -i "s/SHA256_$${os}_$${arch}/$$(sha256sum $$a | cut -d' ' -f1)/" $(DIST)/ptah.yaml && echo "plugin-archives: $$a"; done

.PHONY: release
## release: VERSION=x.y.z REGISTRY=host[:port][/path] [PLAIN_HTTP=1]: the manager and executor images tagged VERSION
## and the chart (version and appVersion VERSION, its values naming those images) pushed to REGISTRY, refused when
## VERSION is there already (credentials from REGISTRY_USERNAME and REGISTRY_PASSWORD); before that, the plugin archives
## of PLATFORMS and the krew manifest naming them in DIST, judged by krew's own validate-krew-manifest
release: binaries
	@$(MAKE) --no-print-directory plugin-archives
	$(GO) run ./cmd/release -krew-manifest $(DIST)/ptah.yaml
	GOFLAGS=-mod=mod $(GO) run sigs.k8s.io/krew/cmd/validate-krew-manifest@$(KREW_VERSION) -manifest $(DIST)/ptah.yaml -skip-install
	$(GO) run ./cmd/release -version $(VERSION) -registry "$(REGISTRY)" -bin $(BUILD) $(if $(PLAIN_HTTP),-plain-http)
	@ls -l $(DIST)

KREW_VERSION := v0.4.3
ID ?= failure-recovery
.PHONY: demo-reproduce
## demo-reproduce: repeat a published scenario (ID=...) as a reader would, and diff it against the recording
demo-reproduce:
	acceptance/reproduce.sh $(ID)

## demo: the main job: the lab up, the census recorded on it, the replay site built and served
demo: demo-up
	$(GO) run ./cmd/record
	$(GO) run ./cmd/site -recording demo/recordings -out site/public -environment demo/.lab/environment -serve $(SITE_ADDR)

.PHONY: bench-census
## bench-census: the census recorded on the lab (make demo-up first; a clean tree) serially (-parallel 1) and with
## -parallel $(PARALLEL) (0: what the machine takes) in one run, into a temporary folder (the committed recording
## there first, so -parallel starts the longest scenarios first as it does on demo/recordings); both times and the ratio
PARALLEL ?= 0
bench-census:
	@out=$$(mktemp -d) && $(GO) build -o $$out/record ./cmd/record && mkdir -p $$out/parallel && \
	cp demo/recordings/runs.json $$out/parallel/ && \
	s0=$$(date +%s.%N) && $$out/record -parallel 1 -output $$out/serial/runs.json >$$out/serial.log 2>&1 || { tail -30 $$out/serial.log; exit 1; }; \
	s1=$$(date +%s.%N) && $$out/record -parallel $(PARALLEL) -output $$out/parallel/runs.json >$$out/parallel.log 2>&1 || { tail -30 $$out/parallel.log; exit 1; }; \
	s2=$$(date +%s.%N) && tail -1 $$out/serial.log && tail -1 $$out/parallel.log && \
	awk -v a=$$s0 -v b=$$s1 -v c=$$s2 -v n="$(PARALLEL)" 'BEGIN { printf "census serial: %.0f s; -parallel %s: %.0f s; ratio %.2fx\n", b-a, n, c-b, (b-a)/(c-b) }' && \
	rm -rf $$out

.PHONY: bench-first-apply
## bench-first-apply: on the lab (make demo-up first), storefront v1 applied to an empty database RUNS times (5):
## create to InSync=True for each, each Job's time, and the median
bench-first-apply:
	acceptance/first-apply.sh $(or $(RUNS),5)

.PHONY: bench-recorder
## bench-recorder: the recorder's per-command overhead against bare sh -c (x-bare, interleaved in one run)
## and the credential scan's cost on the committed census recording, each cast replayed in a player's terminal
## (ms/scan, and the fraction of its recorded time)
bench-recorder:
	$(GO) test ./recorder/execute -run '^$$' -bench Overhead -benchtime 300x -count 3
	$(GO) test ./recorder/recording -run '^$$' -bench ScanCensus -benchtime 5x -count 3

.PHONY: bench-reconcile
## bench-reconcile: the manager taking 200 PtahSchemas on 20 databases to InSync through jobsim, one object at a time
## and at the default --max-concurrent-reconciles (schemas/s and the manager's memory for each)
bench-reconcile: envtest
	$(GO) test ./internal/controller -run '^$$' -bench 'Reconcile200Schemas' -benchtime 1x -count $(or $(COUNT),1) -timeout 40m

.PHONY: bench-proof
## bench-proof: the Proof's cost: a no-change `ptah schema plan` of 2,000 objects against a database holding them, as a
## multiple of psql -f of the same DDL into a fresh database, interleaved round by round in one run (ROUNDS=n, 5 by
## default; BASELINE=path of another ptah binary, e.g. one built without the proof, is timed in the same rounds)
bench-proof:
	@out=$$(mktemp -d) && trap 'rm -rf $$out' EXIT && $(GO) build -o $$out/ptah ./cmd/ptah && \
	PTAH_BENCH_PROOF=$$out/ptah PTAH_BENCH_BASELINE=$(BASELINE) PTAH_BENCH_ROUNDS=$(or $(ROUNDS),5) \
	  $(GO) test -count=1 -timeout 30m -run '^TestBenchProof$$' -v ./cmd/ptah/ | grep -E 'bench-proof|^(--- |ok|FAIL)|limit'

.PHONY: readonly-fuzz
## readonly-fuzz: the long run of the generator of desired files with side-effecting expressions in every place
## PostgreSQL takes one, against a target logging every statement (CHECKS=n cases, 300 by default)
readonly-fuzz:
	$(GO) test -count=1 -timeout 3h -run 'TestReadOnlyCommandsSendTheTargetOnlyReviewedStatements' ./cmd/ptah/ -rapid.checks=$(or $(CHECKS),300) -v | grep -E 'rapid|desired files|^(--- |ok|FAIL)'
