# Watchword. `make dev` runs the demo on a local control plane; `make test`
# runs every test against a real kube-apiserver and etcd.
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/watchword-dev/watchword/internal/version.Version=$(VERSION)
export WATCHWORD_ASSETS ?= $(CURDIR)/.cache/tools/bin
GOLANGCI_LINT := $(CURDIR)/.cache/tools/bin/golangci-lint
BUF := $(CURDIR)/.cache/tools/bin/buf
export GOLANGCI_LINT_CACHE ?= $(CURDIR)/.cache/golangci-lint

.PHONY: all build tools tools-vault tools-lint tools-proto tools-postgres lint dev bench bench-smoke test test-unit test-integration generate verify-generate vet fmt-check fuzz clean

all: build

build: ## Build bin/watchword.
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/watchword ./cmd/watchword

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

dev: build tools ## Run the operator and its demo on a local embedded control plane.
	./bin/watchword dev --log-console $(DEV_ARGS)

generate: tools-proto ## Regenerate CRDs, deep-copy code and the plugin protocol's Go code.
	$(BUF) lint
	$(BUF) generate
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./internal/operator/... \
		crd:maxDescLen=400 output:crd:artifacts:config=config/crd/bases \
		rbac:roleName=watchword output:rbac:artifacts:config=config/rbac

verify-generate: generate ## Fail when the generated files are stale.
	@if ! git diff --quiet -- api config || [ -n "$$(git ls-files --others --exclude-standard -- api config)" ]; then \
		git status --short -- api config; echo "generated files are stale: run make generate and commit"; exit 1; fi

vet:
	$(GO) vet ./...

lint: tools-lint ## golangci-lint with .golangci.yml: errors, shadowing, unused code, style, formatting, and the API conventions for api/.
	$(GOLANGCI_LINT) run ./...

fmt-check:
	@out=$$(gofmt -l api cmd internal test 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test-unit: ## Unit tests only (no control plane).
	$(GO) test -short ./...

test-integration: tools ## The integration suite alone; its Vault tests skip unless `make tools-vault` built Vault. RUN=regexp selects tests.
	$(GO) test -count=1 -timeout 30m ./test/integration $(if $(RUN),-run '$(RUN)')

# test sets WATCHWORD_REQUIRE_VAULT and WATCHWORD_REQUIRE_POSTGRES, so that a
# missing Vault binary or PostgreSQL fails their tests instead of skipping
# them.
test: tools-vault tools-postgres verify-generate lint vet build ## Everything, against a real kube-apiserver, etcd, Vault and PostgreSQL.
	WATCHWORD_REQUIRE_VAULT=1 WATCHWORD_REQUIRE_POSTGRES=1 $(GO) test -count=1 -timeout 30m ./...
	./bin/watchword dev --exit-after-demo --workdir $(CURDIR)/.cache/dev-smoke
	$(MAKE) --no-print-directory bench-smoke

bench: build tools ## The scale benchmark against the raw limit (BENCH_ARGS to change sizes; see docs/benchmark.md).
	$(GO) run ./test/bench $(BENCH_ARGS)

bench-smoke: build tools ## A small run of the benchmark, as CI does.
	$(GO) run ./test/bench -n 300 -keys 30 -unrelated 2000 -refresh 10s -cycles 1 -steady 10s -restart-window 5s -out .cache/bench-smoke.json

fuzz: ## Run each fuzz target for a short while.
	$(GO) test ./internal/engine -run '^$$' -fuzz FuzzParsePath -fuzztime 20s
	$(GO) test ./internal/engine -run '^$$' -fuzz FuzzRender -fuzztime 20s
	$(GO) test ./internal/cli -run '^$$' -fuzz FuzzConvert -fuzztime 20s

clean:
	rm -rf bin .watchword-dev
