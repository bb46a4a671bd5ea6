package mcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the HTTP transport serves MCP.
const Path = "/mcp"

// HTTPHandler serves srv over MCP's streamable HTTP transport at [Path].
// Every request must carry "Authorization: Bearer TOKEN" (compared in
// constant time); others get 401 and reach no tool. token must not be empty.
// Before anything else, a request is refused with 403 unless its Host
// header names this very server (DNS-rebinding protection: see ownHost),
// and, when it has an Origin header (one a browser sends for a web page's
// request), unless that is the server's own loopback origin; a request
// without Origin (a non-browser client) is served.
func HTTPHandler(srv *sdk.Server, token string) http.Handler {
	if token == "" {
		panic("mcp: HTTPHandler needs a token")
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	// The SDK's own Host check is the looser one (any loopback name, any
	// port, case-sensitive): ownHost replaces it (adversarial A13).
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{DisableLocalhostProtection: true})
	mux.Handle(Path, auth.RequireBearerToken(verify, nil)(mcpHandler))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ownHost(r, r.Host) {
			http.Error(w, fmt.Sprintf("forbidden: the Host header %q names another server than this one", r.Host), http.StatusForbidden)
			return
		}
		if origins, ok := r.Header["Origin"]; ok && (len(origins) != 1 || !ownOrigin(r, origins[0])) {
			http.Error(w, "forbidden: the Origin header names another site than this server", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ownHost reports whether hostport names this server: 127.0.0.1,
// localhost or [::1] (any case) with the port of the connection's local
// address (the bound port). A page on another name that resolves to
// 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
func ownHost(r *http.Request, hostport string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	_, port, err := net.SplitHostPort(local.String())
	if err != nil {
		return false
	}
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		if strings.EqualFold(hostport, host+":"+port) {
			return true
		}
	}
	return false
}

// ownOrigin reports whether origin is the server's own: http:// and a
// host ownHost accepts. The MCP streamable HTTP transport asks servers to
// validate Origin: a web page the user visits may post to a loopback
// port, and only an origin on this very server is the server's own.
func ownOrigin(r *http.Request, origin string) bool {
	scheme, hostport, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(scheme, "http") && ownHost(r, hostport)
}

// ListenLoopback listens on addr (host:port; port 0 picks a free one),
// refusing any host that is not a loopback address: the server acts on
// the project's files with the user's rights, so it is never offered to
// the network.
func ListenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT, e.g. 127.0.0.1:8765", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
		addr = net.JoinHostPort(host, port)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--http %q: snap mcp serves loopback addresses only (127.0.0.1 or [::1]); it acts on your files with your rights", addr)
	}
	return net.Listen("tcp", addr)
}

// ServeHTTP serves h on l until ctx is done, then shuts down gracefully.
func ServeHTTP(ctx context.Context, l net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
