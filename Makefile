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
# test-deps` installs the packages of those missing. Debian's promtool
# (Prometheus 2.42) only runs the rule unit tests again, as a check that
# the rules still hold on Prometheus 2 (`make rules-test`).
TEST_TOOLS := /usr/bin/promtool:prometheus
TEST_TOOLS += chromium:chromium
TEST_TOOLS += prometheus-alertmanager:prometheus-alertmanager amtool:prometheus-alertmanager
# The image test runs the image under rootful podman, with runc.
TEST_TOOLS += podman:podman runc:runc

# Helm is not a Debian package: `make test-deps` builds it from the Go
# module proxy into .tools/ (a few minutes, once per version).
HELM_VERSION := v3.19.0
HELM_DIR     := .tools/helm-$(HELM_VERSION)
HELM         := $(HELM_DIR)/helm
CHART        := deploy/helm/duix-exporter

# crane (go-containerregistry) builds the image without a daemon or a base
# image to pull; built from the Go module proxy into .tools/.
CRANE_VERSION := v0.22.1
CRANE         := .tools/crane-$(CRANE_VERSION)/crane

# Prometheus 3, the reference for the rules, the dashboards and the
# end-to-end tests: prometheus and promtool built from the Go module proxy
# into .tools/ (about five minutes on two cores, once per version). Module
# version v0.3XX.Y is release 3.XX.Y; the build serves the API only (the
# web UI's assets are not built in), which is all the tests use.
PROMETHEUS_VERSION := v0.316.0
PROMETHEUS_RELEASE := 3.16.0
PROMETHEUS_DIR     := .tools/prometheus-$(PROMETHEUS_VERSION)
PROMETHEUS         := $(PROMETHEUS_DIR)/prometheus
PROMTOOL           := $(PROMETHEUS_DIR)/promtool
# Debian's promtool, for the Prometheus 2 compatibility run.
PROMTOOL_COMPAT    := /usr/bin/promtool

# cloudflare/pint, the rule linter, as a Go tool of the small module
# tools/pint (its go.mod pins the version; `go install pint@version` is
# not possible for it).
PINT_VERSION := v0.87.0
PINT         := .tools/pint-$(PINT_VERSION)/pint

# jsonnetfmt, for `make mixin-test`: the go-jsonnet version of mixin/go.mod.
JSONNETFMT_VERSION := v0.22.0
JSONNETFMT         := .tools/jsonnetfmt-$(JSONNETFMT_VERSION)/jsonnetfmt

# Test targets run by `make test` after the Go tests. Add a line per
# target here (prerequisites are expanded when the rule is read).
EXTRA_TESTS :=
EXTRA_TESTS += rules-test manifests-test e2e-test
EXTRA_TESTS += fuzz soak-smoke
EXTRA_TESTS += probe-config-test
EXTRA_TESTS += helm-test
EXTRA_TESTS += mixin-test
EXTRA_TESTS += alertmanager-test
EXTRA_TESTS += image-test
EXTRA_TESTS += pint-test

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the binary.
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

.PHONY: run
run: build ## Run the exporter against the built-in simulator (no credentials), on :9866 (RUN_FLAGS: more flags).
	./$(BIN) --demo $(RUN_FLAGS)

.PHONY: test
test: test-deps fmt-check vet go-test $(EXTRA_TESTS) ## Run every test.

# Build tags of the Go tests that drive a tool `make test-deps` installs:
# browser (chromium), promtool. A plain `go test ./...` leaves them out.
GO_TEST_TAGS := browser,promtool

.PHONY: go-test
go-test: ## The Go tests, race detector on, with the tests that need chromium and promtool.
	CGO_ENABLED=1 $(GO) test -race -count=1 -tags $(GO_TEST_TAGS) ./...

# Non-test Go lines of each part, against its budget: the core is every
# package but the tools around it.
LOC_EXCLUDE := simulator operator bench mixin deploy e2e cmd internal/platformtest
.PHONY: loc
loc: ## Non-test Go line counts: core, client/, collector/, web/ and package main against their budgets.
	@count() { find $$@ -name '*.go' ! -name '*_test.go' -print0 2>/dev/null | xargs -0 cat 2>/dev/null | wc -l; }; \
	excl=""; for d in $(LOC_EXCLUDE); do excl="$$excl -path ./$$d -prune -o"; done; \
	core=$$(find . $$excl -path ./.tools -prune -o -name '*.go' ! -name '*_test.go' -print0 | xargs -0 cat | wc -l); \
	main=$$(find . -maxdepth 1 -name '*.go' ! -name '*_test.go' -print0 | xargs -0 cat | wc -l); \
	printf '%s %s %s\n' core $$core 3000 client/ $$(count client) 1000 collector/ $$(count collector) 750 \
		web/ $$(count web) 300 main $$main 300 | \
		awk 'BEGIN { printf "%-12s %6s %6s\n", "part", "lines", "budget" } \
			{ printf "%-12s %6d %6d%s\n", $$1, $$2, $$3, ($$2 > $$3 ? "  over" : "") }'

.PHONY: test-deps
test-deps: $(HELM) $(CRANE) $(PROMETHEUS) $(PROMTOOL) $(PINT) $(JSONNETFMT) ## Install what the tests drive (Debian packages; helm, crane, Prometheus 3, pint and jsonnetfmt into .tools/), if missing.
	@missing=""; for tp in $(TEST_TOOLS); do \
		command -v "$${tp%%:*}" >/dev/null || missing="$$missing $${tp#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@[ -s /etc/ssl/certs/ca-certificates.crt ] || { \
		echo "installing Debian packages: ca-certificates (the image's CA bundle)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null; }

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
bench: bench-go load ## The Go benchmarks, then the load harness.

.PHONY: bench-go
bench-go: ## The Go benchmarks, allocations reported.
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The reference runs (bench/load), standard path as shipped (the harness
# sets no GOGC): 100 apps, then 1000 for the wall and CPU ratios, then 5000
# for peak RSS; series per app and the calls of two scrapers in each; 20 ms
# upstream latency, max_concurrency 64; `duix_exporter simulator` serves
# the apps in a process of its own. LOAD_FLAGS=-no-fail reports without
# failing; LOAD_FLAGS=-lifecycle prices the session lifecycle.
LOAD_FLAGS ?=
LOAD_5000  := -apps 5000 -scrapes 10
.PHONY: load
load: build ## Scrape 100, 1000, then 5000 simulated apps beside the same calls made directly: wall and CPU ratios, series per app, peak RSS, calls of two scrapers.
	$(GO) run ./bench/load -binary ./$(BIN) -apps 100 $(LOAD_FLAGS)
	$(GO) run ./bench/load -binary ./$(BIN) $(LOAD_FLAGS)
	$(GO) run ./bench/load -binary ./$(BIN) $(LOAD_5000) $(LOAD_FLAGS)

.PHONY: load-5000
load-5000: build ## The 5000-app run of `make load` alone (the reference for peak RSS).
	$(GO) run ./bench/load -binary ./$(BIN) $(LOAD_5000) $(LOAD_FLAGS)

# The tests that start Prometheus find it (and promtool) on PATH: the
# Prometheus 3 of .tools/ comes first.
PROM_PATH := PATH="$(CURDIR)/$(PROMETHEUS_DIR):$$PATH"

.PHONY: probe-config-test
probe-config-test: test-deps ## promtool check config, then a real Prometheus 3, on the per-app and sharding examples of deploy/prometheus.
	$(PROMTOOL) check config deploy/prometheus/probe-targets.yml
	$(PROMTOOL) check config deploy/prometheus/sharding.yml
	$(GO) vet -tags e2e ./deploy/prometheus/
	$(PROM_PATH) $(GO) test -tags e2e -count=1 -timeout 5m ./deploy/prometheus/

.PHONY: clean
clean: ## Remove build output.
	rm -f $(BIN)

# Operations bundle: Prometheus rules, Kubernetes manifests and Helm chart,
# end to end against a real Prometheus, container image.
VALIDATE_DIR := deploy/kubernetes/validate
IMAGE_REPO   ?= ghcr.io/duix-exporter/duix_exporter
IMAGE        ?= $(IMAGE_REPO):$(VERSION)
IMAGE_SOURCE := https://github.com/duix-exporter/duix_exporter
IMAGE_DIR    := .build/image
IMAGE_ARCH   ?= $(shell $(GO) env GOARCH)
# The files of the image carry the time of the last commit, and so does
# the binary's build date: the same commit gives the same image.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_LDFLAGS := -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Revision=$(REVISION) \
            -X $(PKG).Branch=$(BRANCH) -X $(PKG).BuildUser=make \
            -X $(PKG).BuildDate=$(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y%m%d-%H:%M:%S 2>/dev/null)

$(CRANE):
	GOBIN=$(CURDIR)/$(@D) $(GO) install github.com/google/go-containerregistry/cmd/crane@$(CRANE_VERSION)

.PHONY: rules-test
rules-test: test-deps ## promtool (Prometheus 3) check and unit tests of deploy/prometheus (rules and scrape config), then the unit tests again on Debian's Prometheus 2.
	$(PROMTOOL) check rules deploy/prometheus/rules.yml
	$(PROMTOOL) test rules deploy/prometheus/rules_test.yml
	$(PROMTOOL) check config deploy/prometheus/prometheus.yml
	@echo "Prometheus 2 compatibility: $$($(PROMTOOL_COMPAT) --version 2>&1 | head -1)"
	$(PROMTOOL_COMPAT) check rules deploy/prometheus/rules.yml
	$(PROMTOOL_COMPAT) test rules deploy/prometheus/rules_test.yml

# pint, offline: the rules against .pint.hcl. The run against a live
# Prometheus (its online checks: series, labels, rule dependencies) is
# part of `make e2e-test`, which has one scraping the exporter.
.PHONY: pint-test
pint-test: $(PINT) ## cloudflare/pint lint of the rules with .pint.hcl (offline checks); zero findings of any severity.
	$(PINT) --no-color --offline --config .pint.hcl lint --min-severity=info --fail-on=info deploy/prometheus/rules.yml

# The monitoring mixin (mixin/, a Go module of its own) renders the rules
# and the dashboards; the Kubernetes manifests are generated from those.
MIXIN_DIR := mixin

.PHONY: mixin
mixin: ## Render the mixin: deploy/prometheus/rules.yml, the Helm chart's rules, dashboards/*.json, then the manifests.
	cd $(MIXIN_DIR) && $(GO) run ./cmd/render -root ..
	$(MAKE) manifests

.PHONY: mixin-test
mixin-test: $(JSONNETFMT) ## Test the mixin (its conventions, as mixtool lint and dashboard-linter check them), jsonnetfmt its files, and fail when a rendered file differs from the committed one.
	@bad=""; for f in $$(find $(MIXIN_DIR) -name '*.libsonnet' -o -name '*.jsonnet'); do \
		$(JSONNETFMT) --test "$$f" || bad="$$bad $$f"; \
	done; \
	if [ -n "$$bad" ]; then echo "jsonnetfmt would change:$$bad (run \`make mixin-fmt\`)"; exit 1; fi
	cd $(MIXIN_DIR) && $(GO) vet ./... && $(GO) test -count=1 ./...

.PHONY: mixin-fmt
mixin-fmt: $(JSONNETFMT) ## jsonnetfmt every jsonnet file of the mixin.
	$(JSONNETFMT) -i $$(find $(MIXIN_DIR) -name '*.libsonnet' -o -name '*.jsonnet')

.PHONY: manifests
manifests: ## Regenerate the PrometheusRule and dashboard ConfigMap of deploy/kubernetes from the rendered rules and dashboards.
	cd $(VALIDATE_DIR) && $(GO) generate ./...

.PHONY: manifests-test
manifests-test: ## Decode deploy/kubernetes strictly into the Kubernetes and Prometheus Operator types.
	cd $(VALIDATE_DIR) && $(GO) vet ./... && $(GO) test -count=1 -skip '^TestHelm' ./...

$(HELM):
	GOBIN=$(CURDIR)/$(@D) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(PROMETHEUS) $(PROMTOOL) &:
	GOBIN=$(CURDIR)/$(PROMETHEUS_DIR) $(GO) install \
		-ldflags '-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_RELEASE)' \
		github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION) \
		github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

$(PINT): tools/pint/go.mod tools/pint/go.sum
	@grep -q 'github.com/cloudflare/pint $(PINT_VERSION)' tools/pint/go.mod || \
		{ echo "PINT_VERSION $(PINT_VERSION) is not the version tools/pint/go.mod requires" >&2; exit 1; }
	cd tools/pint && $(GO) build -ldflags '-s -w -X main.version=$(PINT_VERSION)' \
		-o $(CURDIR)/$(PINT) github.com/cloudflare/pint/cmd/pint

$(JSONNETFMT):
	GOBIN=$(CURDIR)/$(@D) $(GO) install github.com/google/go-jsonnet/cmd/jsonnetfmt@$(JSONNETFMT_VERSION)

.PHONY: helm-test
helm-test: $(HELM) ## helm lint the chart, then render it (default, full and other values) and check every object strictly.
	PATH="$(CURDIR)/$(HELM_DIR):$$PATH" helm lint --strict $(CHART)
	PATH="$(CURDIR)/$(HELM_DIR):$$PATH" helm lint --strict $(CHART) -f $(CHART)/ci/full-values.yaml
	cd $(VALIDATE_DIR) && $(GO) vet ./... && \
		PATH="$(CURDIR)/$(HELM_DIR):$$PATH" $(GO) test -count=1 -run '^TestHelm' ./...

.PHONY: e2e-test
e2e-test: test-deps ## Exporter, simulator, dashboards, rules and pint's online checks against a real Prometheus 3.
	$(GO) vet -tags e2e ./e2e/
	$(PROM_PATH) PINT="$(CURDIR)/$(PINT)" $(GO) test -tags e2e -count=1 -timeout 5m ./e2e/

# The shipped Alertmanager routing: amtool checks it and resolves where the
# key alerts go; the janitor's e2e (TestJanitorClosedLoop in e2e/, in e2e-test) loads
# it into a real Alertmanager (Debian's prometheus-alertmanager).
AM_CONFIG := deploy/alertmanager/alertmanager.yml
AM_ROUTE  := amtool config routes test --config.file=$(AM_CONFIG) --verify.receivers

.PHONY: alertmanager-test
alertmanager-test: test-deps ## amtool check-config and route tests of deploy/alertmanager/alertmanager.yml.
	amtool check-config $(AM_CONFIG)
	$(AM_ROUTE)=duix-janitor,duix-chat alertname=DuixSessionStuck severity=warning app=kiosk
	$(AM_ROUTE)=duix-pager alertname=DuixConcurrencyExhausted severity=critical app=kiosk
	$(AM_ROUTE)=duix-chat alertname=DuixConcurrencyNearLimit severity=warning app=kiosk
	$(AM_ROUTE)=duix-pager alertname=DuixExporterDown severity=critical
	$(AM_ROUTE)=duix-planning alertname=DuixAllowancePlanning severity=info app=kiosk
	$(AM_ROUTE)=duix-chat alertname=DuixJanitorFailing severity=warning
	$(AM_ROUTE)=duix-default alertname=Unrelated

.PHONY: image
image: ## Build the container image: `docker build` where a Docker daemon answers, else with crane into .build/image (no daemon, no base image).
	@if docker info >/dev/null 2>&1; then \
		set -x; docker build -t $(IMAGE) \
			--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg BRANCH=$(BRANCH) \
			--build-arg SOURCE=$(IMAGE_SOURCE) .; \
	else \
		echo "image: no Docker daemon answers (docker info): building with crane into $(IMAGE_DIR)"; \
		$(MAKE) --no-print-directory image-oci; \
	fi

.PHONY: image-oci
image-oci: $(CRANE) ## Build the image with crane, without a daemon: $(IMAGE_DIR)/image.tar (podman/docker load) and the OCI layout $(IMAGE_DIR)/oci.
	mkdir -p $(IMAGE_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(IMAGE_LDFLAGS)' -o $(IMAGE_DIR)/duix_exporter .
	GOARCH=$(IMAGE_ARCH) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) deploy/image/build.sh $(CRANE) $(IMAGE_DIR)/duix_exporter \
		$(IMAGE) $(VERSION) $(REVISION) $(IMAGE_SOURCE) $(IMAGE_DIR)

.PHONY: image-test
image-test: test-deps image-oci ## Load the crane-built image into podman, run it with --demo and check what it serves, its user and labels.
	$(GO) vet -tags image ./deploy/image/
	DUIX_IMAGE=$(IMAGE) DUIX_IMAGE_DIR=$(CURDIR)/$(IMAGE_DIR) DUIX_IMAGE_VERSION=$(VERSION) DUIX_IMAGE_REVISION=$(REVISION) \
		$(GO) test -tags image -count=1 -timeout 5m ./deploy/image/

# Reliability: fuzzing, soak, static analysis.
# A count of inputs, not a duration: with a duration, Go 1.26 can end a
# run on a busy machine with "context deadline exceeded" and no failing
# input (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 50000x
# Fuzz targets as package:FuzzName.
FUZZ_TARGETS := ./client:FuzzDecodeEnvelope ./client:FuzzDecodeSessionList ./collector:FuzzAppAnswers ./config:FuzzParse ./operator/janitor:FuzzWebhook ./web:FuzzScrapeRequest ./operator:FuzzCommandOutput

.PHONY: fuzz
fuzz: ## Fuzz each fuzz target for FUZZTIME (default 50000x: inputs); `go test` alone runs their seed corpora.
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -parallel 2 "$${t%%:*}" || exit 1; \
	done

SOAK_FLAGS ?=
.PHONY: soak
soak: build ## 50 scrapers for 60 s against 200 apps (10 failing): prints the figures, fails when a bar is missed.
	$(GO) run ./bench/soak -binary ./$(BIN) $(SOAK_FLAGS)

# The smoke run also bounds memory: 3 of its apps answer JSON bodies that
# never end, and the exporter runs with the GOMEMLIMIT that the Helm chart
# and kustomize set for their 128Mi limit.
.PHONY: soak-smoke
soak-smoke: build ## A 5 s soak against 20 apps, 3 of them answering endless bodies: peak RSS under 128 MiB with GOMEMLIMIT=115MiB (run by `make test`).
	$(GO) run ./bench/soak -binary ./$(BIN) -duration 5s -apps 20 -faulty 2 -endless 3 -scrapers 20 -gomemlimit 115MiB -max-peak-rss 128

# Linters at pinned versions, installed with `go install` into .tools/
# (one directory per version, so that changing a version reinstalls it).
STATICCHECK_VERSION := v0.8.2
GOSEC_VERSION       := v2.29.0
STATICCHECK := .tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck
GOSEC       := .tools/gosec-$(GOSEC_VERSION)/gosec
LINT_TAGS   := e2e,browser,promtool,image

$(STATICCHECK):
	GOBIN=$(CURDIR)/$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOSEC):
	GOBIN=$(CURDIR)/$(@D) $(GO) install github.com/securego/gosec/v2/cmd/gosec@$(GOSEC_VERSION)

# gosec runs without G104 (unchecked errors): the only ones it reports are
# go-kit's Logger.Log, whose error is never checked by convention (the
# Prometheus projects exempt it from errcheck too) and which gosec cannot
# exempt by name when the logger comes from level.Info(...). Every other
# finding is fixed or justified inline with `// #nosec G### -- reason`.
.PHONY: lint
lint: vet $(STATICCHECK) $(GOSEC) ## go vet, staticcheck and gosec at pinned versions; zero findings.
	$(STATICCHECK) -tags $(LINT_TAGS) ./...
	$(GOSEC) -quiet -tags $(LINT_TAGS) -exclude=G104 -exclude-dir=.build ./...
