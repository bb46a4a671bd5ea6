# snap — build, demo, test.
#
#   make demo   build snap into a temporary directory and run a scripted agent
#               session in a temporary project (leaves nothing in the checkout)
#   make test   gofmt + go vet + the whole test suite (what CI runs)
#   make build  build ./bin/snap

GO      ?= go
TMP     ?= $(or $(TMPDIR),/tmp)
DEMOBIN := $(TMP)/snap-demo-bin/snap

.PHONY: build demo test vet fmt-check test-race clean

build:
	$(GO) build -o bin/snap ./cmd/snap

demo:
	@mkdir -p $(dir $(DEMOBIN))
	$(GO) build -o $(DEMOBIN) ./cmd/snap
	bash scripts/demo.sh $(DEMOBIN)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The race detector runs over the packages with concurrent code paths;
# the whole suite runs once without it.
test-race:
	$(GO) test -race -short ./objects/ ./refs/ ./index/ ./worktree/ ./gc/ .

test: fmt-check vet
	$(GO) test ./...
	$(MAKE) test-race

clean:
	rm -rf bin
