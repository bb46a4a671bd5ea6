# snap — build, demo, test.
#
#   make demo   build snap into a temporary directory and run a scripted agent
#               session in a temporary project (leaves nothing in the checkout)
#   make test   gofmt + go vet + staticcheck + deadcode + the whole test suite with coverage (what CI runs)
#   make lint   staticcheck and deadcode only (pinned versions, via go run)
#   make cover  coverage of the root package and the CLI together
#   make build  build ./bin/snap (the core build) and ./bin/snap-full beside it
#   make torture  the long crash / corruption / concurrency harness run
#   make bench    benchmarks against shadow git (make bench-quick: the CI version)

GO      ?= go
TMP     ?= $(or $(TMPDIR),/tmp)
DEMOBIN := $(TMP)/snap-demo-bin/snap
# The MCP TypeScript SDK the client test drives snap with: installed from npm
# here, outside the checkout.
TSDIR   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/snap-test/mcp-ts

.PHONY: build demo deps test test-core vet lint fmt-check test-race torture bench bench-quick clean cover

# The build tags of the snap binary, for a shorter start (bench/README.md, W10):
# urfave_cli_no_docs leaves out urfave/cli's man-page and markdown renderer
# (blackfriday, md2man: snap never calls ToMan or ToMarkdown); netgo and
# osusergo use Go's own DNS resolver and /etc/passwd reader, so no package
# needs cgo and the binary is static (no dynamic loader, no libc start at
# every run). A plain 'go build' or 'go install ./cmd/snap' works the same,
# slower to start. The test runs below pass them in GOFLAGS, which the tests
# that build the binary themselves ('go build' in mcp/, torture/, ...)
# inherit; cmd/snap's e2e test and bench/ pass them explicitly. GOFLAGS keeps
# what 'go env GOFLAGS' already says (set in the environment or with go env
# -w, e.g. -buildvcs=false), which the variable would otherwise replace.
SNAP_TAGS  := urfave_cli_no_docs,netgo,osusergo
TEST_FLAGS  = GOFLAGS="$(shell $(GO) env GOFLAGS) -tags=$(SNAP_TAGS)"

# Two binaries (cmd/snap/core.go): snap, the core build (the tag snapcore:
# the engine, the CLI, the agents' hooks; about two thirds of the start of
# the complete build), and snap-full beside it, the complete build, which snap
# runs in its own place for snap mcp, snap ui and the git bridge. Install
# both in one directory (or name snap-full's path in $SNAP_FULL).
build:
	$(GO) build -tags $(SNAP_TAGS),snapcore -o bin/snap ./cmd/snap
	$(GO) build -tags $(SNAP_TAGS) -o bin/snap-full ./cmd/snap

demo:
	@mkdir -p $(dir $(DEMOBIN))
	$(GO) build -tags $(SNAP_TAGS),snapcore -o $(DEMOBIN) ./cmd/snap
	$(GO) build -tags $(SNAP_TAGS) -o $(dir $(DEMOBIN))snap-full ./cmd/snap
	bash scripts/demo.sh $(DEMOBIN)

# The git bridge's tests check what the real git reads (fsck, archive, log,
# status, git daemon), and the benchmarks drive the git CLI as the peer:
# install git from Debian's packages when the machine lacks it. The MCP
# server is tested with the official TypeScript SDK's client: Node.js and
# npm from Debian when missing, the SDK from npm into $(TSDIR). snap ui's
# browser test (ui/browser_test.go) drives Debian's chromium headless:
# installed when missing (SNAP_UI_NO_BROWSER=1 skips that test instead).
deps:
	@command -v git >/dev/null 2>&1 || { echo "installing git (apt-get)"; \
	  (apt-get update -qq && apt-get install -y -qq git) >/dev/null 2>&1 || \
	  { echo "error: git is needed by the tests and could not be installed"; exit 1; }; }
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "installing nodejs, npm (apt-get)"; \
	  (apt-get update -qq && apt-get install -y -qq nodejs npm) >/dev/null 2>&1 || \
	  { echo "error: node and npm are needed by the MCP client test and could not be installed"; exit 1; }; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { echo "installing chromium (apt-get)"; \
	  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || \
	  { echo "error: chromium is needed by the browser test of snap ui and could not be installed (SNAP_UI_NO_BROWSER=1 skips that test)"; exit 1; }; }
	@mkdir -p $(TSDIR) && cmp -s mcp/testdata/ts/package.json $(TSDIR)/package.json && \
	  test -d $(TSDIR)/node_modules/@modelcontextprotocol/sdk || { \
	  cp mcp/testdata/ts/package.json $(TSDIR)/ && \
	  npm install --prefix $(TSDIR) --no-audit --no-fund --loglevel=error; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags $(SNAP_TAGS),snapcore ./cmd/snap

# The race detector runs over the packages with concurrent code paths;
# the whole suite runs once without it.
test-race:
	$(GO) test -race -short ./objects/ ./refs/ ./index/ ./worktree/ ./gc/ .

# Static checks at pinned versions, fetched through the module proxy:
# staticcheck, and deadcode counting tests as roots (library code only the
# tests reach is fine; code nothing reaches is not).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    := golang.org/x/tools/cmd/deadcode@v0.52.0
lint:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags $(SNAP_TAGS),snapcore ./cmd/snap
	@out=$$($(GO) run $(DEADCODE) -test ./...); \
	if [ -n "$$out" ]; then echo "deadcode: unreachable functions:"; echo "$$out"; exit 1; fi

# Every package's tests, with each package's statement coverage printed;
# then the root package, the workflow and the CLI measured together (the CLI's tests drive
# the engine), the per-function report in $(TMP)/snap-cover.txt.
test: deps fmt-check vet lint
	$(TEST_FLAGS) SNAP_MCP_TS_CLIENT=1 SNAP_MCP_TS_DIR=$(TSDIR) $(GO) test -timeout 20m -cover ./...
	$(MAKE) test-core
	$(MAKE) cover
	$(MAKE) test-race

# The CLI's scripts again, run by the core build (what 'make build' installs
# as snap), with the complete build as its snap-full.
test-core:
	@mkdir -p $(TMP)/snap-test-core
	$(GO) build -tags $(SNAP_TAGS) -o $(TMP)/snap-test-core/snap-full ./cmd/snap
	SNAP_FULL=$(TMP)/snap-test-core/snap-full $(GO) test -count=1 -tags $(SNAP_TAGS),snapcore -run 'TestScript' ./cmd/snap/

cover:
	$(TEST_FLAGS) $(GO) test -timeout 20m -coverpkg=github.com/snapcore-dev/snap,github.com/snapcore-dev/snap/workflow,github.com/snapcore-dev/snap/cmd/snap \
	  -coverprofile=$(TMP)/snap-cover.out . ./workflow/ ./cmd/snap/ >/dev/null
	$(GO) tool cover -func=$(TMP)/snap-cover.out > $(TMP)/snap-cover.txt
	@echo "root package + workflow + cmd/snap: $$(tail -1 $(TMP)/snap-cover.txt | awk '{print $$NF}') of statements (per function: $(TMP)/snap-cover.txt)"

# The long reliability run: 1,000 kill -9 iterations, 60 s of concurrent
# sessions against a gc loop (CI runs the short version inside make test).
torture:
	$(TEST_FLAGS) $(GO) test -count=1 -v -timeout 60m ./torture/ -torture.long

# Side-by-side benchmarks against shadow git and go-git (bench/README.md).
# The full run takes ~20 minutes and ~10 GB of /tmp; the quick one is what
# CI runs, with no thresholds.
bench: deps
	$(GO) run ./bench

bench-quick: deps
	$(GO) run ./bench -quick

clean:
	rm -rf bin $(TMP)/snap-cover.out $(TMP)/snap-cover.txt
