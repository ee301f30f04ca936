# Watchword. `make dev` runs the demo on a local control plane; `make test`
# runs every test against a real kube-apiserver and etcd.
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/watchword-dev/watchword/internal/version.Version=$(VERSION)
export WATCHWORD_ASSETS ?= $(CURDIR)/.cache/tools/bin
GOLANGCI_LINT := $(CURDIR)/.cache/tools/bin/golangci-lint
BUF := $(CURDIR)/.cache/tools/bin/buf
REFDOCS := $(CURDIR)/.cache/tools/bin/crd-ref-docs
CHART := deploy/charts/watchword
export GOLANGCI_LINT_CACHE ?= $(CURDIR)/.cache/golangci-lint

.PHONY: all build image-binary image api-reference tools tools-vault tools-lint tools-proto tools-postgres tools-prometheus tools-barbican tools-ldap tools-helm tools-node tools-refdocs deploy-files lint dev e2e bench bench-smoke test test-unit test-integration generate verify-generate vet fmt-check fuzz fuzz-smoke clean

all: build

build: ## Build bin/watchword (the operator and its CLI) and bin/watchword-dev (the local control plane and demo of make dev).
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/watchword ./cmd/watchword
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/watchword-dev ./cmd/watchword-dev

image-binary: ## Build the static Linux binary of the image (bin/linux/watchword), and check that it is static.
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS) -s -w' -o bin/linux/watchword ./cmd/watchword
	$(GO) run ./hack/elfstatic bin/linux/watchword

# IMAGE_TAG is the reference the tarball records; the chart asks for
# watchword:<its appVersion> unless image.tag is set.
IMAGE_TAG ?= watchword:$(VERSION)

# image stamps the image with the commit and takes the commit's time as its
# time, so that the same commit gives the same digest. The OCI layout is
# written afresh, without blobs of earlier builds.
image: image-binary ## Build the container image without a container engine: bin/image/watchword.tar (docker load, crane push, ctr import) and the OCI layout bin/image/oci; prints its digest.
	rm -rf bin/image/oci
	$(GO) run ./hack/image -binary bin/linux/watchword -tarball bin/image/watchword.tar -oci-layout bin/image/oci \
		-tag '$(IMAGE_TAG)' -version '$(VERSION)' -revision "$$(git rev-parse HEAD)" -created "$$(git log -1 --format=%ct)"

tools: ## Build kube-apiserver, kube-controller-manager, kubectl and etcd from Go modules (cached).
	./hack/tools.sh

tools-vault: ## Also build the Vault server from Go modules (cached; about 15 minutes the first time).
	./hack/tools.sh vault

tools-lint: ## Build golangci-lint with the Kubernetes API linter from Go modules (cached; about a minute the first time).
	./hack/tools.sh lint

tools-proto: ## Build buf, the protobuf compiler, from Go modules (cached).
	./hack/tools.sh proto

tools-postgres: ## Fetch Debian's postgresql-15 and its libraries into .cache/tools/postgres, without installing them (cached; seconds the first time).
	./hack/tools.sh postgres

tools-prometheus: ## Fetch Debian's prometheus into .cache/tools/prometheus, without installing it (cached), for the dashboard's test and promtool for the chart's alerts.
	./hack/tools.sh prometheus

tools-refdocs: ## Build crd-ref-docs from its Go module (cached), which make generate runs for docs/api-reference.md.
	./hack/tools.sh refdocs

tools-ldap: ## Fetch Debian's slapd (OpenLDAP), and what it needs that the system lacks, into .cache/tools/ldap, without installing it (cached; 2 MB, seconds the first time), for the Vault provider's LDAP login test.
	./hack/tools.sh ldap

tools-barbican: ## Fetch Debian's barbican-api and keystone, and what they need that the system lacks, into .cache/tools/barbican, without installing them (cached; about 30 MB, under a minute the first time).
	./hack/tools.sh barbican

tools-node: ## Build kubelet, kube-scheduler and kube-proxy from Go modules and fetch Debian's containerd, runc, CNI plugins and iptables into .cache/tools/node (cached), for the end-to-end tests on a real node.
	./hack/tools.sh node

tools-helm: ## Build Helm from its Go module (cached), for the chart's tests.
	./hack/tools.sh helm

dev: build tools ## Run the operator and its demo on a local embedded control plane.
	./bin/watchword-dev --log-console $(DEV_ARGS)

generate: tools-proto tools-refdocs ## Regenerate CRDs, deep-copy code, the plugin protocol's Go code and docs/api-reference.md.
	$(BUF) lint
	$(BUF) generate
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./internal/operator/... \
		crd:maxDescLen=400 output:crd:artifacts:config=config/crd/bases \
		rbac:roleName=watchword output:rbac:artifacts:config=config/rbac
	$(MAKE) --no-print-directory deploy-files api-reference

# api-reference writes docs/api-reference.md from the Go types of api/ with
# crd-ref-docs (pinned in hack/tools/refdocs); make generate runs it.
api-reference: tools-refdocs ## Regenerate docs/api-reference.md from the API types.
	$(REFDOCS) --source-path=./api/v1alpha1 --config=hack/refdocs/config.yaml --renderer=markdown \
		--output-path=docs/api-reference.md --log-level=WARN

# deploy-files copies the generated CRDs and ClusterRole, the admission
# policy and the Grafana dashboard into the Helm chart (which is packaged on
# its own, so it holds copies) and lists the CRDs for Kustomize (which reads
# config/ directly). make generate runs it.
deploy-files: ## Copy the generated CRDs, RBAC, the admission policy and the Grafana dashboard into the Helm chart, and the CRDs into the Kustomize lists.
	rm -f $(CHART)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/crds/
	cp config/rbac/role.yaml $(CHART)/files/role.yaml
	cp config/policy/admissionpolicy.yaml $(CHART)/files/admissionpolicy.yaml
	mkdir -p $(CHART)/files/grafana
	cp deploy/grafana/watchword.json $(CHART)/files/grafana/watchword.json
	{ echo '# Generated by make deploy-files from the files in bases/: do not edit.'; \
	  echo 'apiVersion: kustomize.config.k8s.io/v1beta1'; echo 'kind: Kustomization'; echo 'resources:'; \
	  for f in config/crd/bases/*.yaml; do echo "- bases/$${f##*/}"; done; } > config/crd/kustomization.yaml

verify-generate: generate ## Fail when the generated files are stale.
	@if ! git diff --quiet -- api config deploy docs/api-reference.md || [ -n "$$(git ls-files --others --exclude-standard -- api config deploy docs/api-reference.md)" ]; then \
		git status --short -- api config deploy docs/api-reference.md; echo "generated files are stale: run make generate and commit"; exit 1; fi

vet:
	$(GO) vet ./...

lint: tools-lint ## golangci-lint with .golangci.yml: errors, shadowing, unused code, style, formatting, and the API conventions for api/.
	$(GOLANGCI_LINT) run ./...

fmt-check:
	@out=$$(gofmt -l api cmd internal test 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test-unit: ## Unit tests only (no control plane).
	$(GO) test -short ./...

# INTEGRATION_PARALLEL is how many of the integration suite's parallel
# tests run at once (go test's -parallel; its default is the number of
# cores). They share one control plane and operator and spend most of
# their time waiting for it, so more than the cores' count pays.
INTEGRATION_PARALLEL ?= 8

test-integration: tools ## The integration suite alone; its Vault tests skip unless `make tools-vault` built Vault. RUN=regexp selects tests.
	$(GO) test -count=1 -timeout 45m -parallel $(INTEGRATION_PARALLEL) ./test/integration $(if $(RUN),-run '$(RUN)')

# test sets WATCHWORD_REQUIRE_VAULT, WATCHWORD_REQUIRE_POSTGRES,
# WATCHWORD_REQUIRE_HELM, WATCHWORD_REQUIRE_PROMETHEUS,
# WATCHWORD_REQUIRE_BARBICAN and WATCHWORD_REQUIRE_LDAP, so that a missing Vault binary, PostgreSQL,
# Helm, Prometheus, Barbican or OpenLDAP fails their tests instead of skipping them.
test: tools-vault tools-postgres tools-prometheus tools-barbican tools-ldap tools-helm tools-node verify-generate lint vet build image ## Everything, against a real kube-apiserver, etcd, Vault, PostgreSQL, Prometheus, Barbican and Keystone, OpenLDAP, and the end-to-end tests on a real node (as root).
	WATCHWORD_REQUIRE_VAULT=1 WATCHWORD_REQUIRE_POSTGRES=1 WATCHWORD_REQUIRE_HELM=1 WATCHWORD_REQUIRE_PROMETHEUS=1 WATCHWORD_REQUIRE_BARBICAN=1 WATCHWORD_REQUIRE_LDAP=1 $(GO) test -count=1 -timeout 45m -parallel $(INTEGRATION_PARALLEL) $$($(GO) list ./... | grep -v '/test/e2e$$')
	WATCHWORD_REQUIRE_VAULT=1 WATCHWORD_REQUIRE_HELM=1 $(REQUIRE_NODE) $(GO) test -count=1 -timeout 20m ./test/e2e
	$(MAKE) --no-print-directory fuzz-smoke
	./bin/watchword-dev --exit-after-demo --workdir $(CURDIR)/.cache/dev-smoke
	$(MAKE) --no-print-directory bench-smoke

# The end-to-end tests run after the rest, not beside the integration
# suite: a node and two operator pods on two cores slow the suite's
# timing-sensitive tests.
# REQUIRE_NODE makes a missing node a failure in make test where one can
# run (as root); elsewhere the end-to-end tests skip and say why.
REQUIRE_NODE := $(if $(filter 0,$(shell id -u)),WATCHWORD_REQUIRE_NODE=1)

e2e: tools tools-helm tools-node ## The end-to-end tests alone: the image on a real node (containerd, kubelet, kube-proxy, kube-scheduler), the chart installed with Helm; needs root. RUN=regexp selects tests.
	$(REQUIRE_NODE) $(GO) test -count=1 -timeout 20m ./test/e2e $(if $(RUN),-run '$(RUN)') -v

bench: build tools ## The scale benchmark against the raw limit (BENCH_ARGS to change sizes; see docs/benchmark.md).
	$(GO) run ./test/bench $(BENCH_ARGS)

bench-smoke: build tools ## A small run of the benchmark, as CI does.
	$(GO) run ./test/bench -n 300 -keys 30 -unrelated 2000 -refresh 10s -cycles 1 -steady 10s -restart-window 5s -out .cache/bench-smoke.json

# FUZZ_TARGETS lists every fuzz target as package:Target. go test -fuzz
# runs one target at a time, so each gets its own run.
FUZZ_TARGETS := \
	./internal/engine:FuzzParsePath \
	./internal/engine:FuzzRender \
	./internal/engine:FuzzDecodeValue \
	./internal/engine:FuzzTemplateFromLiteral \
	./api/v1alpha1:FuzzParseDuration \
	./internal/pluginwire:FuzzPluginStatus \
	./internal/pluginwire:FuzzParseEndpoint \
	./internal/refreshhook:FuzzParseNotification \
	./internal/controller/restart:FuzzParseWindow \
	./internal/cli:FuzzConvert \
	./internal/provider/webhook:FuzzEscapeURL
# FUZZTIME is how long make fuzz runs each target.
FUZZTIME ?= 60s

fuzz: ## Run each fuzz target for FUZZTIME (60s by default).
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME); done

# fuzz-smoke runs a fixed number of executions per target, not a time:
# a time limit can end while the fuzzer handles a new input, which fails
# the run with no failing input.
fuzz-smoke: ## Run each fuzz target for 2,000 executions, as make test does.
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for 2000 executions"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime 2000x; done

clean:
	rm -rf bin .watchword-dev
