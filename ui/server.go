// Package ui is snap's local web app (`snap ui`): the sessions, the
// timeline of a session with the operations beside it, a checkpoint with
// its changed files and conversation, compare, search, a rewind that shows
// its dry run before anything moves, undo and redo, the task tree. It is a
// front-end like the CLI and the MCP server: the same root package and
// workflow calls, JSON over HTTP, and the page itself (assets/, embedded:
// plain HTML, CSS and JavaScript, nothing fetched at run time).
//
// The server answers only API requests that carry its token (the page
// reads it from the URL 'snap ui' printed, keeps it in sessionStorage and
// sends it in the X-Snap-Token header), whose Host is the address it
// listens on, and, for anything that changes the store, a same-origin JSON
// POST: another site open in the same browser, or another server on this
// machine, can neither read the project's history nor rewind it. The page
// itself (HTML, CSS, JavaScript) holds no data and is served to any
// request for this Host.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/workflow"
)

//go:embed assets
var assets embed.FS

// Options configure a server.
type Options struct {
	Session string // the session shown first ("" = the store's default)
	Token   string // every request must carry it ("": New makes one)
	Version string // shown in the page's footer
	// Poll is how often the events stream looks for a change another
	// process made (hooks, the MCP server): 0 = one second.
	Poll time.Duration
}

// NewToken returns a random token (128 bits, hex).
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Server serves one project's store.
type Server struct {
	repo *snap.Repo
	flow *workflow.Flow
	o    Options
	mux  *http.ServeMux
}

// Token is the token requests must carry.
func (s *Server) Token() string { return s.o.Token }

// New returns the server for repo. Its handler checks every request
// against the token and the address it is served at (Handler).
func New(repo *snap.Repo, o Options) *Server {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Token == "" {
		o.Token = NewToken()
	}
	s := &Server{repo: repo, flow: workflow.New(repo), o: o, mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.get("/api/info", s.info)
	s.get("/api/sessions", s.sessions)
	s.get("/api/usage", s.usage)
	s.get("/api/log", s.log)
	s.get("/api/ops", s.ops)
	s.get("/api/show", s.show)
	s.get("/api/diff", s.diff)
	s.get("/api/conversation", s.conversation)
	s.get("/api/search", s.search)
	s.get("/api/tasks", s.tasks)
	s.get("/api/status", s.status)
	s.get("/api/blame", s.blame)
	s.get("/api/undoable", s.undoable)
	s.mux.HandleFunc("GET /api/events", s.events)
	s.post("/api/rewind", s.rewind)
	s.post("/api/undo", s.undo)
	s.post("/api/redo", s.redo)
	return s
}

// Handler is the server's handler for requests addressed to addr (the
// address it listens on, "127.0.0.1:8123"): a request whose Host names
// anything else is refused (a DNS rebinding page cannot reach it).
func (s *Server) Handler(addr string) http.Handler {
	hosts := allowedHosts(addr)
	// Listening on every address (0.0.0.0, [::]): a request may name the
	// machine by any of its IP addresses, with the port; never by a name,
	// which is how a DNS rebinding page would reach it.
	anyIP := ""
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			anyIP = port
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		if !hosts[strings.ToLower(r.Host)] && !(anyIP != "" && ipHost(r.Host, anyIP)) {
			httpError(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf("this server answers requests to %s only, not %q", addr, r.Host))
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			s.mux.ServeHTTP(w, r) // the page itself: no data in it
			return
		}
		// The page keeps the token from its URL in sessionStorage (per
		// origin, so per port: never sent to another local server, as a
		// cookie would be: adversarial U1) and sends it in a header; the
		// events stream, which cannot, in the query.
		token := r.Header.Get("X-Snap-Token")
		if token == "" && r.Method == http.MethodGet {
			token = r.URL.Query().Get("token")
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.o.Token)) != 1 {
			httpError(w, http.StatusUnauthorized, "no_token", "open the URL 'snap ui' printed: it carries the token this server needs")
			return
		}
		if r.Method == http.MethodPost {
			// Same origin only, and JSON (no form of another site can send it).
			if o := r.Header.Get("Origin"); o == "" || !strings.EqualFold(o, "http://"+r.Host) {
				httpError(w, http.StatusForbidden, "cross_origin", "a change must come from this page (same origin)")
				return
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				httpError(w, http.StatusUnsupportedMediaType, "not_json", "send application/json")
				return
			}
		}
		s.mux.ServeHTTP(w, r)
	})
}

// ipHost reports whether hostport is an IP address literal with port.
func ipHost(hostport, port string) bool {
	h, p, err := net.SplitHostPort(hostport)
	return err == nil && p == port && net.ParseIP(h) != nil
}

// allowedHosts are the Host values of requests to addr: itself, and for a
// loopback address the names of loopback too.
func allowedHosts(addr string) map[string]bool {
	out := map[string]bool{strings.ToLower(addr): true}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return out
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			out[h+":"+port] = true
		}
	}
	return out
}

type handler func(r *http.Request) (any, error)

func (s *Server) get(path string, h handler) {
	s.mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		v, err := call(h, r)
		reply(w, v, err)
	})
}

func (s *Server) post(path string, h handler) {
	s.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		v, err := call(h, r)
		reply(w, v, err)
	})
}

// call runs h; a panic (a bug, or data read from a damaged store that
// nothing checked) is an error the page shows, not a dropped connection
// (net/http would close it and the page would learn nothing).
func call(h handler, r *http.Request) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("%w in %s (a bug in snap ui: please report it): %v", errPanic, r.URL.Path, p)
		}
	}()
	return h(r)
}

// errPanic: a handler panicked.
var errPanic = errors.New("internal error")

// reply writes v as JSON, or err as {"error": {"code", "message"}} with the
// status that says what went wrong.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, code := classify(err)
		if status == http.StatusOK { // a partial rewind: the result says which paths failed
			writeJSON(w, status, map[string]any{"result": v, "error": map[string]string{"code": code, "message": err.Error()}})
			return
		}
		httpError(w, status, code, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// classify maps an engine error to an HTTP status and a code.
func classify(err error) (int, string) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{snap.ErrPartial, http.StatusOK, "partial"},
		{errChanged, http.StatusConflict, "changed_since_preview"},
		{snap.ErrExpired, http.StatusGone, "expired"},
		{snap.ErrNoCheckpoint, http.StatusNotFound, "no_checkpoint"},
		{snap.ErrNoSession, http.StatusNotFound, "no_session"},
		{snap.ErrNoPath, http.StatusNotFound, "no_path"},
		{snap.ErrAmbiguous, http.StatusBadRequest, "ambiguous"},
		{snap.ErrBadName, http.StatusBadRequest, "bad_name"},
		{snap.ErrUsage, http.StatusBadRequest, "usage"},
		{snap.ErrNothingToUndo, http.StatusConflict, "nothing_to_undo"},
		{snap.ErrNothingToRedo, http.StatusConflict, "nothing_to_redo"},
		{snap.ErrConflict, http.StatusConflict, "conflict"},
		{snap.ErrBusy, http.StatusServiceUnavailable, "busy"},
		{snap.ErrCorrupt, http.StatusInternalServerError, "corrupt"},
		{snap.ErrObjectMissing, http.StatusInternalServerError, "object_missing"},
	} {
		if errors.Is(err, c.err) {
			return c.status, c.code
		}
	}
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return http.StatusRequestEntityTooLarge, "too_large"
	}
	if errors.Is(err, context.Canceled) {
		return 499, "canceled"
	}
	return http.StatusInternalServerError, "internal"
}

// session is the request's session, or the server's.
func (s *Server) session(r *http.Request) string {
	if q := r.URL.Query().Get("session"); q != "" {
		return q
	}
	return snap.SessionFromEnv(s.o.Session)
}

// resolve reads REF parameter name of the request in its session.
func (s *Server) resolve(r *http.Request, name, def string) (snap.ID, error) {
	ref := r.URL.Query().Get(name)
	if ref == "" {
		ref = def
	}
	if ref == "" {
		return snap.ID{}, fmt.Errorf("%w: parameter %s (a checkpoint) is missing", snap.ErrUsage, name)
	}
	return s.repo.Resolve(r.Context(), s.session(r), ref)
}

// intParam reads a non-negative integer parameter.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a number >= 0", snap.ErrUsage, name, v)
	}
	return n, nil
}

// decode reads a POST's JSON body into v; unknown fields are refused.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && err != io.EOF {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return fmt.Errorf("%w: the request's JSON: %v", snap.ErrUsage, err)
	}
	return nil
}

// Serve serves h on l until ctx is done. The requests' contexts end with
// ctx too, so an open events stream does not hold the shutdown.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
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
