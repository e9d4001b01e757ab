# duix_exporter build and test entry points. `make help` lists them.

GO       ?= go
BIN      ?= duix_exporter
PKG      := github.com/prometheus/common/version
VERSION  ?= $(shell cat VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH   ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Revision=$(REVISION) \
            -X $(PKG).Branch=$(BRANCH) -X $(PKG).BuildUser=make \
            -X $(PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)
export CGO_ENABLED ?= 0

# Binaries the tests drive, as binary:debian-package pairs; `make
# test-deps` installs the packages of those missing.
TEST_TOOLS := promtool:prometheus prometheus:prometheus
TEST_TOOLS += chromium:chromium

# Test targets run by `make test` after the Go tests. Add a line per
# target here (prerequisites are expanded when the rule is read).
EXTRA_TESTS :=
EXTRA_TESTS += rules-test manifests-test e2e-test

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the binary.
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

.PHONY: run
run: build ## Run the exporter against the built-in simulator (no credentials), on :9866.
	./$(BIN) --demo

.PHONY: test
test: test-deps fmt-check vet go-test $(EXTRA_TESTS) ## Run every test.

.PHONY: go-test
go-test: ## The Go tests, race detector on.
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

.PHONY: test-deps
test-deps: ## Install what the tests drive (Debian packages), if missing.
	@missing=""; for tp in $(TEST_TOOLS); do \
		command -v "$${tp%%:*}" >/dev/null || missing="$$missing $${tp#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

.PHONY: vet
vet: ## go vet.
	$(GO) vet ./...

.PHONY: fmt-check
fmt-check: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: fmt
fmt: ## gofmt every file.
	gofmt -w $$(git ls-files '*.go')

.PHONY: bench
bench: ## Run the Go benchmarks.
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: clean
clean: ## Remove build output.
	rm -f $(BIN)

# Operations bundle: Prometheus rules, Kubernetes manifests, end to end
# against a real Prometheus, container image.
VALIDATE_DIR := deploy/kubernetes/validate
IMAGE        ?= ghcr.io/duix-exporter/duix_exporter:$(VERSION)

.PHONY: rules-test
rules-test: test-deps ## promtool check and unit tests of deploy/prometheus (rules and scrape config).
	promtool check rules deploy/prometheus/rules.yml
	promtool test rules deploy/prometheus/rules_test.yml
	promtool check config deploy/prometheus/prometheus.yml

.PHONY: manifests
manifests: ## Regenerate the PrometheusRule and dashboard ConfigMap of deploy/kubernetes.
	cd $(VALIDATE_DIR) && $(GO) generate ./...

.PHONY: manifests-test
manifests-test: ## Decode deploy/kubernetes strictly into the Kubernetes and Prometheus Operator types.
	cd $(VALIDATE_DIR) && $(GO) vet ./... && $(GO) test -count=1 ./...

.PHONY: e2e-test
e2e-test: test-deps ## Exporter, simulator, dashboard and rules against a real Prometheus.
	$(GO) vet -tags e2e ./e2e/
	$(GO) test -tags e2e -count=1 -timeout 5m ./e2e/

.PHONY: image
image: ## Build the container image with docker or podman, whichever is installed.
	@engine=$$(command -v docker || command -v podman) || { echo "image: neither docker nor podman is installed" >&2; exit 1; }; \
	set -x; "$$engine" build -t $(IMAGE) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg BRANCH=$(BRANCH) .
