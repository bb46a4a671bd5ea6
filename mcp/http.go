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
// The SDK's DNS-rebinding protection stays on: a request to a loopback
// address naming another host is refused. A request with an Origin header
// (one a browser sends for a web page's request) that is not the server's
// own loopback origin is refused with 403 before anything else (see
// ownOrigin); a request without one (a non-browser client) is served.
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
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux.Handle(Path, auth.RequireBearerToken(verify, nil)(mcpHandler))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origins, ok := r.Header["Origin"]; ok && (len(origins) != 1 || !ownOrigin(r, origins[0])) {
			http.Error(w, "forbidden: the Origin header names another site than this server", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether origin is the server's own: http://127.0.0.1,
// http://localhost or http://[::1] with the port of the connection's local
// address (the bound port). The MCP streamable HTTP transport asks servers
// to validate Origin: a web page the user visits may post to a loopback
// port, and only an origin on this very server is the server's own.
func ownOrigin(r *http.Request, origin string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	_, port, err := net.SplitHostPort(local.String())
	if err != nil {
		return false
	}
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		if strings.EqualFold(origin, "http://"+host+":"+port) {
			return true
		}
	}
	return false
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
