package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapcore-dev/snap/snaptest"
)

// The official TypeScript SDK's client (testdata/ts/client.mjs, run with
// the machine's Node.js) spawns 'snap mcp' over stdio and over
// streamable HTTP with its bearer token, lists the tools and
// runs a staged-edit task and a dry-run then confirmed rewind. 'make test'
// installs the SDK (npm) into $SNAP_MCP_TS_DIR, outside the checkout, and
// sets SNAP_MCP_TS_CLIENT=1, which turns a missing Node.js or SDK into a
// failure instead of a skip.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the snap binary and runs Node.js")
	}
	required := os.Getenv("SNAP_MCP_TS_CLIENT") == "1"
	missing := func(what string) {
		if required {
			t.Fatalf("%s (SNAP_MCP_TS_CLIENT=1: 'make deps' installs it)", what)
		}
		t.Skipf("%s: run 'make deps' to install it", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	// The SDK is installed outside the checkout ($SNAP_MCP_TS_DIR, which
	// 'make deps' fills); the client runs from there, so that Node.js
	// resolves the SDK beside it.
	dir := os.Getenv("SNAP_MCP_TS_DIR")
	if dir == "" {
		missing("SNAP_MCP_TS_DIR is not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		missing("the TypeScript MCP SDK is not installed in " + dir)
	}
	client, err := os.ReadFile(filepath.Join("testdata", "ts", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), client, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildSnap(t)
	for _, mode := range []string{"stdio", "--http"} {
		t.Run(mode, func(t *testing.T) {
			_, root := snaptest.NewRepo(t)
			if err := os.WriteFile(filepath.Join(root, "config.yaml"), []byte("a:\n  timeout: 30\nb:\n  timeout: 30\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), bin, root, mode)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second // a stray child holding the output open cannot hang the test
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("the TypeScript client failed: %v", err)
			}
		})
	}
}
