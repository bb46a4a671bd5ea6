package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapcore-dev/snap/mcp"
	"github.com/snapcore-dev/snap/snaptest"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func httpClient(ctx context.Context, t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	client := sdk.NewClient(&sdk.Implementation{Name: "http-test-client", Version: "1"}, nil)
	return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

// Streamable HTTP: the right token reaches the tools; a missing or wrong
// one is refused before any tool runs.
func TestHTTPBearerToken(t *testing.T) {
	ctx := context.Background()
	repo, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644)
	ts := httptest.NewServer(mcp.HTTPHandler(mcp.New(repo, mcp.Options{Session: "web", Version: "test"}), "s3cret"))
	defer ts.Close()
	url := ts.URL + mcp.Path

	for _, tok := range []string{"", "wrong", "s3cre", "s3cret2"} {
		cs, err := httpClient(ctx, t, url, tok)
		if err == nil {
			cs.Close()
			t.Fatalf("token %q: connected", tok)
		}
	}
	// Plain HTTP without a header: 401, and no checkpoint was taken.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"checkpoint","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d", resp.StatusCode)
	}

	cs, err := httpClient(ctx, t, url, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint", Arguments: map[string]any{"summary": "over http"}})
	if err != nil || res.IsError {
		t.Fatalf("checkpoint: %v %v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "log", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("log: %v %v", err, res)
	}
	if got := mustJSON(res.StructuredContent); strings.Count(got, `"id"`) != 1 || !strings.Contains(got, "over http") {
		t.Fatalf("log: one checkpoint expected (the refused calls took none): %s", got)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80", "[::]:0", "127.0.0.1"} {
		if l, err := mcp.ListenLoopback(addr); err == nil {
			l.Close()
			t.Errorf("%s: accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		l, err := mcp.ListenLoopback(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if !strings.HasPrefix(l.Addr().String(), "127.0.0.1:") {
			t.Errorf("%s listens on %s", addr, l.Addr())
		}
		l.Close()
	}
}

// 'snap mcp --http 127.0.0.1:0' as a process: it prints its URL, makes a
// 0600 token file that a second run reuses, serves a real client, and
// stops cleanly on SIGINT.
func TestHTTPCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the snap binary")
	}
	bin := buildSnap(t)
	_, root := snaptest.NewRepo(t)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644)

	serve := func() (url, tokenFile string, stop func()) {
		cmd := exec.Command(bin, "mcp", "-C", root, "-s", "h", "--http", "127.0.0.1:0", "--json")
		cmd.Env = append(os.Environ(), "SNAP_NO_AUTO_GC=1", "SNAP_MCP_TOKEN=")
		out, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var ready struct{ URL, Token_file string }
		if err := json.NewDecoder(bufio.NewReader(out)).Decode(&ready); err != nil {
			cmd.Process.Kill()
			t.Fatalf("no address printed: %v %s", err, stderr.String())
		}
		return ready.URL, ready.Token_file, func() {
			cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("snap mcp --http after SIGINT: %v %s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Error("snap mcp --http did not stop on SIGINT")
			}
		}
	}
	ctx := context.Background()
	url, tokenFile, stop := serve()
	st, err := os.Stat(tokenFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v", tokenFile, st, err)
	}
	token, _ := os.ReadFile(tokenFile)
	cs, err := httpClient(ctx, t, url, strings.TrimSpace(string(token)))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "status", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("status: %v %v", err, res)
	}
	cs.Close()
	stop()

	url2, tokenFile2, stop2 := serve()
	defer stop2()
	token2, _ := os.ReadFile(tokenFile2)
	if tokenFile2 != tokenFile || string(token2) != string(token) || url2 == "" {
		t.Fatalf("second run: %s %q, want the same token file and token", tokenFile2, token2)
	}
}

// A request carrying an Origin other than the server's own loopback origin
// (a web page's fetch, or "null" from a sandboxed frame) is refused with
// 403 even with the right token; no Origin (a non-browser client) and the
// server's own origins are served.
func TestHTTPOrigin(t *testing.T) {
	repo, _ := snaptest.NewRepo(t)
	ts := httptest.NewServer(mcp.HTTPHandler(mcp.New(repo, mcp.Options{Session: "web", Version: "test"}), "s3cret"))
	defer ts.Close()
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	const initReq = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	status := func(origin string, token string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+mcp.Path, strings.NewReader(initReq))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "-" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, o := range []string{"-", "http://127.0.0.1:" + port, "http://localhost:" + port, "http://[::1]:" + port} {
		if got := status(o, "s3cret"); got != http.StatusOK {
			t.Errorf("Origin %q: status %d, want 200", o, got)
		}
	}
	other := "1"
	if port == "1" {
		other = "2"
	}
	for _, o := range []string{"https://evil.example", "null", "", "http://127.0.0.1:" + other, "https://127.0.0.1:" + port,
		"http://localhost", "http://127.0.0.1:" + port + ".evil.example", "http://evil.example:" + port, "file://"} {
		for _, tok := range []string{"s3cret", ""} {
			if got := status(o, tok); got != http.StatusForbidden {
				t.Errorf("Origin %q, token %q: status %d, want 403", o, tok, got)
			}
		}
	}
}

// The Host header must name this server: a loopback name (any case) with
// the bound port (adversarial A13: the check was the SDK's, case-sensitive
// and blind to the port). A DNS-rebinding page sends its own name.
func TestHTTPHost(t *testing.T) {
	repo, _ := snaptest.NewRepo(t)
	ts := httptest.NewServer(mcp.HTTPHandler(mcp.New(repo, mcp.Options{Session: "web", Version: "test"}), "s3cret"))
	defer ts.Close()
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	const initReq = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	status := func(host string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+mcp.Path, strings.NewReader(initReq))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port} {
		if got := status(h); got != http.StatusOK {
			t.Errorf("Host %q: status %d, want 200", h, got)
		}
	}
	other := "1"
	if port == "1" {
		other = "2"
	}
	for _, h := range []string{"127.0.0.1", "127.0.0.1:" + other, "evil.example:" + port, "localhost.:" + port, "127.1:" + port} {
		if got := status(h); got != http.StatusForbidden {
			t.Errorf("Host %q: status %d, want 403", h, got)
		}
	}
}
