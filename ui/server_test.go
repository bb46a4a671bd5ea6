package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/storage"
	"github.com/snapcore-dev/snap/ui"
	"github.com/snapcore-dev/snap/workflow"
)

var ctx = context.Background()

// The address the handlers under test believe they listen on, and their
// token.
const (
	testAddr  = "127.0.0.1:8123"
	testToken = "0123456789abcdef0123456789abcdef"
)

// ---- a project an agent worked in ---------------------------------------

// project is a store with two sessions: A (an agent session with a Claude
// Code transcript as its conversation document) and B (another agent that
// wrote notes/b.txt after A's first checkpoint).
//
//	A #1 a1  prompt     README.md, .gitignore, src/main.go; "Add a greeting to main.go"
//	A #2 a2  post-tool  toolu_01Greet: src/main.go modified, src/greet.go added
//	B #1 b1  post-tool  toolu_B1Notes: notes/b.txt added
//	A #3 a3  post-tool  toolu_02Remove: README.md deleted
//
// Rewinding A to a1 restores README.md and src/main.go, deletes
// src/greet.go, and keeps notes/b.txt (B's).
type project struct {
	r          *snap.Repo
	root       string
	transcript string // A's conversation document (outside the project)
	a1, a2, a3 *snap.CheckpointResult
	b1         *snap.CheckpointResult
}

// The files of A's first checkpoint, and of the tree after a3.
var (
	filesAtA1 = map[string]string{
		"README.md":   "# demo\n\nA small program.\n",
		".gitignore":  "*.log\n",
		"src/main.go": "package main\n\nfunc main() {}\n",
	}
	mainAtA2  = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting())\n}\n"
	greetAtA2 = "package main\n\nfunc greeting() string { return \"hello, world\" }\n"
	notesOfB  = "B's notes: the greeting needs a test\n"
)

// Transcript lines in Claude Code's JSONL shape (the fields the parser
// reads, and some it skips), appended as the session goes.
func ccUser(uuid, text string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/demo","sessionId":"3f9c","version":"2.1.17","type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-02-14T15:17:46.705Z"}`, text, uuid)
}

func ccAssistant(uuid, msgID, text, toolID, tool string, input map[string]string) string {
	content := []any{map[string]any{"type": "text", "text": text}}
	if toolID != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": toolID, "name": tool, "input": input})
	}
	b, _ := json.Marshal(map[string]any{
		"parentUuid": nil, "isSidechain": false, "type": "assistant", "uuid": uuid, "timestamp": "2026-02-14T15:17:51.690Z",
		"message": map[string]any{"model": "claude-opus-4-5", "id": msgID, "type": "message", "role": "assistant", "content": content,
			"stop_reason": "tool_use", "usage": map[string]int{"input_tokens": 10, "output_tokens": 40}},
	})
	return string(b)
}

func ccToolResult(uuid, toolID, out string) string {
	b, _ := json.Marshal(map[string]any{
		"parentUuid": nil, "type": "user", "uuid": uuid, "timestamp": "2026-02-14T15:17:53.100Z",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": out}}},
	})
	return string(b)
}

// The conversation's texts the tests look for.
const (
	// B's summary and a tool's output hold markup: the page shows it as
	// text, never as elements.
	bSummary     = `B takes notes <img src=x onerror="window.__xss=1">`
	toolOutput   = `File created successfully at: src/greet.go <script>window.__xss=2</script>`
	promptText   = "Add a greeting to main.go, and please keep it short."
	answerText   = "I'll add a greeting function in src/greet.go and call it from main."
	removeText   = "The README is outdated; I'm removing it as you asked."
	secondPrompt = "Now remove the outdated README."
)

func appendLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := io.WriteString(f, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func conv(t testing.TB, path string) []snap.StateDoc {
	t.Helper()
	d, err := snap.ReadStateDoc(snap.ConversationDoc, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []snap.StateDoc{d}
}

func checkpoint(t testing.TB, r *snap.Repo, o snap.CheckpointOptions) *snap.CheckpointResult {
	t.Helper()
	res, err := r.Checkpoint(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newProject(t testing.TB) *project {
	t.Helper()
	r, root := snaptest.NewRepo(t)
	p := &project{r: r, root: root, transcript: filepath.Join(t.TempDir(), "3f9c.jsonl")}
	snaptest.WriteFiles(t, root, filesAtA1)
	appendLines(t, p.transcript, ccUser("u1", promptText))
	p.a1 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Kind: "prompt", MessageID: "u1", Actor: snap.ActorUser,
		Summary: "Add a greeting to main.go", State: conv(t, p.transcript)})

	snaptest.WriteFiles(t, root, map[string]string{"src/main.go": mainAtA2, "src/greet.go": greetAtA2})
	appendLines(t, p.transcript,
		ccAssistant("u2", "msg_01Greet", answerText, "toolu_01Greet", "Write", map[string]string{"file_path": "src/greet.go", "content": greetAtA2}),
		ccToolResult("u3", "toolu_01Greet", toolOutput))
	p.a2 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Kind: "post-tool", Actor: snap.ActorAgent, Call: "toolu_01Greet",
		MessageID: "msg_01Greet", Summary: "Add a greeting function", State: conv(t, p.transcript)})

	snaptest.WriteFiles(t, root, map[string]string{"notes/b.txt": notesOfB})
	p.b1 = checkpoint(t, r, snap.CheckpointOptions{Session: "B", Kind: "post-tool", Actor: snap.ActorAgent, Call: "toolu_B1Notes",
		Summary: bSummary})

	if err := os.Remove(filepath.Join(root, "README.md")); err != nil {
		t.Fatal(err)
	}
	appendLines(t, p.transcript,
		ccUser("u4", secondPrompt),
		ccAssistant("u5", "msg_02Remove", removeText, "toolu_02Remove", "Bash", map[string]string{"command": "rm README.md"}),
		ccToolResult("u6", "toolu_02Remove", ""))
	p.a3 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Kind: "post-tool", Actor: snap.ActorAgent, Call: "toolu_02Remove", Agent: "claude-code",
		MessageID: "msg_02Remove", Summary: "Remove the outdated README", State: conv(t, p.transcript)})
	return p
}

// disk is the project's tree and A's transcript, for exact comparisons.
func (p *project) disk(t testing.TB) map[string]string {
	t.Helper()
	m := snaptest.Snapshot(t, p.root, snaptest.SkipStore)
	b, err := os.ReadFile(p.transcript)
	if err != nil {
		t.Fatal(err)
	}
	m["<transcript>"] = string(b)
	return m
}

// ---- requests ---------------------------------------------------------

func handler(r *snap.Repo, session string) http.Handler {
	return ui.New(r, ui.Options{Session: session, Token: testToken, Version: "test", Poll: 20 * time.Millisecond}).Handler(testAddr)
}

// request builds a request to testAddr carrying the token in the header;
// edit changes it before it is served.
func request(method, target, body string, edit func(*http.Request)) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = testAddr
	req.Header.Set("X-Snap-Token", testToken)
	if method == http.MethodPost {
		req.Header.Set("Origin", "http://"+testAddr)
		req.Header.Set("Content-Type", "application/json")
	}
	if edit != nil {
		edit(req)
	}
	return req
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func get(h http.Handler, target string) *httptest.ResponseRecorder {
	return serve(h, request(http.MethodGet, target, "", nil))
}

func post(t testing.TB, h http.Handler, target string, body any) *httptest.ResponseRecorder {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return serve(h, request(http.MethodPost, target, string(b), nil))
}

// answer decodes w's JSON body into a value of type T, failing the test
// unless the status is want.
func answer[T any](t testing.TB, w *httptest.ResponseRecorder, want int) T {
	t.Helper()
	var v T
	if w.Code != want {
		t.Fatalf("status %d, want %d: %s", w.Code, want, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q: %s", ct, w.Body.String())
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, w.Body.String())
	}
	return v
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks an error answer: its status and code.
func wantError(t testing.TB, what string, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != status || e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("%s: %d %s, want %d with code %q", what, w.Code, strings.TrimSpace(w.Body.String()), status, code)
	}
}

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

// ---- the guard --------------------------------------------------------

// Every request needs the token (header, cookie or URL; the URL's sets the
// cookie) and the Host the server listens at; a change needs a same-origin
// JSON POST of at most 1 MiB.
func TestGuard(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")

	t.Run("no token", func(t *testing.T) {
		for _, target := range []string{"/api/sessions", "/api/events", "/api/show?ref=@"} {
			wantError(t, target, serve(h, request(http.MethodGet, target, "", func(r *http.Request) { r.Header.Del("X-Snap-Token") })), http.StatusUnauthorized, "no_token")
		}
		// The page itself holds no data: served without the token.
		for _, target := range []string{"/", "/app.js"} {
			if w := serve(h, request(http.MethodGet, target, "", func(r *http.Request) { r.Header.Del("X-Snap-Token") })); w.Code != http.StatusOK {
				t.Errorf("%s without a token: %d", target, w.Code)
			}
		}
		w := serve(h, request(http.MethodPost, "/api/undo", `{"session":"A"}`, func(r *http.Request) { r.Header.Del("X-Snap-Token") }))
		wantError(t, "POST without a token", w, http.StatusUnauthorized, "no_token")
	})
	t.Run("wrong token", func(t *testing.T) {
		for _, edit := range []func(*http.Request){
			func(r *http.Request) { r.Header.Set("X-Snap-Token", "not-the-token") },
			func(r *http.Request) { r.Header.Set("X-Snap-Token", testToken[:len(testToken)-1]) },
			func(r *http.Request) {
				r.Header.Del("X-Snap-Token")
				r.AddCookie(&http.Cookie{Name: "snap_ui_token", Value: "guess"})
			},
			func(r *http.Request) { r.Header.Del("X-Snap-Token"); r.URL.RawQuery = "token=guess" },
		} {
			wantError(t, "wrong token", serve(h, request(http.MethodGet, "/api/sessions", "", edit)), http.StatusUnauthorized, "no_token")
		}
	})
	t.Run("no cookie", func(t *testing.T) {
		// The token never travels in a cookie: a cookie goes to every port
		// of the host, so to every other local server (adversarial U1).
		w := serve(h, request(http.MethodGet, "/?token="+testToken, "", func(r *http.Request) { r.Header.Del("X-Snap-Token") }))
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<dialog id="rewind"`) || len(w.Result().Cookies()) != 0 {
			t.Fatalf("the page with the token in its URL: %d, cookies %v, %.200s", w.Code, w.Result().Cookies(), w.Body.String())
		}
		for _, target := range []string{"/api/sessions", "/api/info"} {
			w := serve(h, request(http.MethodGet, target, "", nil))
			answer[map[string]any](t, w, http.StatusOK)
			if len(w.Result().Cookies()) != 0 {
				t.Errorf("%s set a cookie: %q", target, w.Header().Values("Set-Cookie"))
			}
		}
		// A cookie with the token opens nothing.
		w = serve(h, request(http.MethodGet, "/api/sessions", "", func(r *http.Request) {
			r.Header.Del("X-Snap-Token")
			r.AddCookie(&http.Cookie{Name: "snap_ui_token", Value: testToken})
		}))
		wantError(t, "the token in a cookie", w, http.StatusUnauthorized, "no_token")
		// In the query: a GET (the events stream cannot send a header), never a change.
		w = serve(h, request(http.MethodGet, "/api/info?token="+testToken, "", func(r *http.Request) { r.Header.Del("X-Snap-Token") }))
		answer[map[string]any](t, w, http.StatusOK)
		w = serve(h, request(http.MethodPost, "/api/rewind?token="+testToken, fmt.Sprintf(`{"session":"A","target":%q,"dry_run":true}`, p.a1.ID),
			func(r *http.Request) { r.Header.Del("X-Snap-Token") }))
		wantError(t, "a POST with the token in its query", w, http.StatusUnauthorized, "no_token")
	})
	t.Run("foreign Host", func(t *testing.T) {
		for _, host := range []string{"evil.example", "evil.example:8123", "127.0.0.1:8124", "127.0.0.2:8123", "localhost.evil.example:8123", ""} {
			w := serve(h, request(http.MethodGet, "/api/sessions", "", func(r *http.Request) { r.Host = host }))
			wantError(t, "Host "+host, w, http.StatusForbidden, "forbidden_host")
			w = serve(h, request(http.MethodGet, "/?token="+testToken, "", func(r *http.Request) { r.Host = host }))
			if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
				t.Errorf("Host %q with the token in the URL: %d, cookies %v", host, w.Code, w.Result().Cookies())
			}
		}
		// The loopback names of the same port are the same server.
		for _, host := range []string{"localhost:8123", "LOCALHOST:8123", "[::1]:8123"} {
			w := serve(h, request(http.MethodGet, "/api/info", "", func(r *http.Request) { r.Host = host }))
			answer[map[string]any](t, w, http.StatusOK)
		}
		// A server on another address than loopback answers to it alone.
		other := ui.New(p.r, ui.Options{Token: testToken}).Handler("192.0.2.7:8123")
		w := serve(other, request(http.MethodGet, "/api/info", "", func(r *http.Request) { r.Host = "localhost:8123" }))
		wantError(t, "localhost to a server on 192.0.2.7", w, http.StatusForbidden, "forbidden_host")
		w = serve(other, request(http.MethodGet, "/api/info", "", func(r *http.Request) { r.Host = "192.0.2.7:8123" }))
		answer[map[string]any](t, w, http.StatusOK)
	})
	t.Run("cross-origin POST", func(t *testing.T) {
		before := p.disk(t)
		body := fmt.Sprintf(`{"session":"A","target":%q}`, p.a1.ID)
		for _, origin := range []string{"", "http://evil.example", "https://" + testAddr, "http://127.0.0.1:8124", "null"} {
			w := serve(h, request(http.MethodPost, "/api/rewind", body, func(r *http.Request) {
				if origin == "" {
					r.Header.Del("Origin")
				} else {
					r.Header.Set("Origin", origin)
				}
			}))
			wantError(t, "Origin "+origin, w, http.StatusForbidden, "cross_origin")
		}
		// Nor does a GET change anything.
		w := serve(h, request(http.MethodGet, "/api/rewind", "", nil))
		if w.Code == http.StatusOK {
			t.Errorf("GET /api/rewind: %d", w.Code)
		}
		if d := snaptest.Diff(before, p.disk(t)); d != "" {
			t.Fatalf("a refused rewind changed the tree:\n%s", d)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			w := serve(h, request(http.MethodPost, "/api/undo", `{"session":"A"}`, func(r *http.Request) { r.Header.Set("Content-Type", ct) }))
			wantError(t, "Content-Type "+ct, w, http.StatusUnsupportedMediaType, "not_json")
		}
	})
	t.Run("body too large", func(t *testing.T) {
		big := `{"session":"A","target":"` + strings.Repeat("x", 2<<20) + `"}`
		for _, path := range []string{"/api/rewind", "/api/undo", "/api/redo"} {
			wantError(t, path, serve(h, request(http.MethodPost, path, big, nil)), http.StatusRequestEntityTooLarge, "too_large")
		}
	})
	t.Run("unknown JSON field", func(t *testing.T) {
		for path, body := range map[string]string{
			"/api/rewind": fmt.Sprintf(`{"session":"A","target":%q,"force":true}`, p.a1.ID),
			"/api/undo":   `{"session":"A","everything":true}`,
			"/api/redo":   `{"sesion":"A"}`,
		} {
			wantError(t, path, serve(h, request(http.MethodPost, path, body, nil)), http.StatusBadRequest, "usage")
		}
		wantError(t, "not JSON at all", serve(h, request(http.MethodPost, "/api/rewind", `target=#1`, nil)), http.StatusBadRequest, "usage")
		wantError(t, "no target", post(t, h, "/api/rewind", map[string]any{"session": "A"}), http.StatusBadRequest, "usage")
	})
	t.Run("headers", func(t *testing.T) {
		w := get(h, "/")
		for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if got := w.Header().Get(k); got != want {
				t.Errorf("%s: %q", k, got)
			}
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy: %q", csp)
		}
		if w := get(h, "/api/sessions"); w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("an API answer may be cached: %q", w.Header().Get("Cache-Control"))
		}
	})
}

// ---- the read endpoints --------------------------------------------------

func TestStaticAssets(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	for path, want := range map[string]string{
		"/":           `id="rewind-go"`,
		"/index.html": `id="undo"`, // FileServer redirects index.html to /
		"/app.js":     "function route()",
		"/app.css":    "{",
	} {
		w := get(h, path)
		if path == "/index.html" {
			if w.Code != http.StatusMovedPermanently {
				t.Errorf("%s: %d", path, w.Code)
			}
			continue
		}
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %.120q", path, w.Code, w.Body.String())
		}
	}
	if w := get(h, "/nothing.js"); w.Code != http.StatusNotFound {
		t.Errorf("/nothing.js: %d", w.Code)
	}
	// Nothing in the page is fetched from elsewhere.
	for _, f := range []string{"/", "/app.js", "/app.css"} {
		if body := get(h, f).Body.String(); strings.Contains(body, "https://") || strings.Contains(body, "http://") {
			t.Errorf("%s names another site", f)
		}
	}
}

func TestInfoSessionsStatus(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	info := answer[map[string]any](t, get(h, "/api/info"), http.StatusOK)
	if info["root"] != p.root || info["session"] != "A" || info["version"] != "test" {
		t.Errorf("info: %v", info)
	}
	ss := answer[struct{ Sessions []snap.SessionInfo }](t, get(h, "/api/sessions"), http.StatusOK).Sessions
	if len(ss) != 2 || ss[0].Name != "A" || ss[0].Checkpoints != 3 || ss[0].Head != p.a3.ID || ss[1].Name != "B" || ss[1].Checkpoints != 1 {
		t.Errorf("sessions: %+v", ss)
	}
	st := answer[snap.StatusResult](t, get(h, "/api/status"+q("session", "A")), http.StatusOK)
	if !st.Clean || st.Head == nil || *st.Head != p.a3.ID {
		t.Errorf("status: %+v", st)
	}
	snaptest.WriteFiles(t, p.root, map[string]string{"src/main.go": "changed\n"})
	st = answer[snap.StatusResult](t, get(h, "/api/status"), http.StatusOK) // the server's session
	if st.Clean || st.Session != "A" || !slices.Equal(st.Files.Modified, []string{"src/main.go"}) {
		t.Errorf("status after an edit: %+v", st)
	}
	wantError(t, "status of a bad session name", get(h, "/api/status"+q("session", "../x")), http.StatusBadRequest, "usage")
}

// The log is paged: offset and limit select the entries, newest first;
// total counts them all.
func TestLogPaging(t *testing.T) {
	p := newProject(t)
	for i := range 4 {
		snaptest.WriteFiles(t, p.root, map[string]string{"src/more.go": fmt.Sprintf("package main // %d\n", i)})
		checkpoint(t, p.r, snap.CheckpointOptions{Session: "A", Summary: fmt.Sprintf("more %d", i)})
	}
	h := handler(p.r, "A")
	type page struct {
		Session string
		Total   int
		Offset  int
		Entries []snap.LogEntry
	}
	seqs := func(pg page) []int {
		var out []int
		for _, e := range pg.Entries {
			out = append(out, e.Seq)
		}
		return out
	}
	all := answer[page](t, get(h, "/api/log"), http.StatusOK)
	if all.Session != "A" || all.Total != 7 || !slices.Equal(seqs(all), []int{7, 6, 5, 4, 3, 2, 1}) || !all.Entries[0].Head {
		t.Fatalf("the whole log: %+v", all)
	}
	for _, c := range []struct {
		query string
		want  []int
	}{
		{q("offset", "0", "limit", "2"), []int{7, 6}},
		{q("offset", "2", "limit", "2"), []int{5, 4}},
		{q("offset", "6", "limit", "2"), []int{1}},
		{q("offset", "7", "limit", "2"), nil},
		{q("offset", "100"), nil},
		{q("limit", "3"), []int{7, 6, 5}},
	} {
		pg := answer[page](t, get(h, "/api/log"+c.query), http.StatusOK)
		if pg.Total != 7 || !slices.Equal(seqs(pg), c.want) || pg.Entries == nil {
			t.Errorf("log%s: total %d offset %d seqs %v, want %v", c.query, pg.Total, pg.Offset, seqs(pg), c.want)
		}
	}
	b := answer[page](t, get(h, "/api/log"+q("session", "B")), http.StatusOK)
	if b.Total != 1 || b.Entries[0].ID != p.b1.ID || b.Entries[0].Call != "toolu_B1Notes" {
		t.Errorf("B's log: %+v", b)
	}
	for _, bad := range []string{q("offset", "-1"), q("limit", "x"), q("offset", "1.5")} {
		wantError(t, "log"+bad, get(h, "/api/log"+bad), http.StatusBadRequest, "usage")
	}
	ops := answer[struct{ Ops []map[string]any }](t, get(h, "/api/ops"+q("session", "B")), http.StatusOK).Ops
	if len(ops) != 1 || ops[0]["session"] != "B" {
		t.Errorf("B's ops: %v", ops)
	}
	ops = answer[struct{ Ops []map[string]any }](t, get(h, "/api/ops"+q("n", "2")), http.StatusOK).Ops
	if len(ops) != 2 {
		t.Errorf("ops?n=2: %v", ops)
	}
	wantError(t, "ops?n=-2", get(h, "/api/ops"+q("n", "-2")), http.StatusBadRequest, "usage")
}

func TestShowDiffBlame(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	show := answer[snap.ShowResult](t, get(h, "/api/show"+q("session", "A", "ref", p.a2.ID.String())), http.StatusOK)
	if show.ID != p.a2.ID || show.Call != "toolu_01Greet" || !slices.Equal(show.Files.Added, []string{"src/greet.go"}) ||
		!slices.Equal(show.Files.Modified, []string{"src/main.go"}) || len(show.State) != 1 || show.State[0].Name != snap.ConversationDoc {
		t.Errorf("show a2: %+v", show)
	}
	for _, ref := range []string{"#1", "@~2", "msg:u1", p.a1.ID.String()[:12]} {
		if s := answer[snap.ShowResult](t, get(h, "/api/show"+q("ref", ref)), http.StatusOK); s.ID != p.a1.ID {
			t.Errorf("show %s: %s", ref, s.ID)
		}
	}
	if s := answer[snap.ShowResult](t, get(h, "/api/show"), http.StatusOK); s.ID != p.a3.ID { // @
		t.Errorf("show of the head: %s", s.ID)
	}

	d := answer[snap.DiffResult](t, get(h, "/api/diff"+q("session", "A", "from", p.a1.ID.String(), "to", p.a2.ID.String())), http.StatusOK)
	var patch string
	for _, f := range d.Files {
		if f.Path == "src/main.go" {
			patch = f.Patch
		}
	}
	if len(d.Files) != 2 || !strings.Contains(patch, "+\tfmt.Println(greeting())") || !strings.Contains(patch, "-func main() {}") {
		t.Errorf("diff a1..a2: %+v", d.Files)
	}
	// The conversation, message by message: a2 added the answer and the
	// tool's result.
	if len(d.State) != 1 || d.State[0].Conversation == nil || d.State[0].Conversation.Common != 1 || len(d.State[0].Conversation.Added) != 2 ||
		d.State[0].Conversation.Added[0].Text != answerText {
		t.Errorf("diff of the conversation: %+v", d.State)
	}
	// Only some paths; the conversation compared message by message.
	d = answer[snap.DiffResult](t, get(h, "/api/diff"+q("from", "#1", "to", "#2", "path", "src/greet.go")), http.StatusOK)
	if len(d.Files) != 1 || d.Files[0].Path != "src/greet.go" || d.Files[0].Status != "added" {
		t.Errorf("diff of one path: %+v", d.Files)
	}
	// Against the working tree (no "to").
	snaptest.WriteFiles(t, p.root, map[string]string{"src/greet.go": "package main\n"})
	d = answer[snap.DiffResult](t, get(h, "/api/diff"+q("from", p.a3.ID.String())), http.StatusOK)
	if d.To != nil || len(d.Files) != 1 || d.Files[0].Path != "src/greet.go" {
		t.Errorf("diff with the working tree: %+v", d)
	}

	bl := answer[snap.BlameResult](t, get(h, "/api/blame"+q("session", "A", "path", "src/main.go")), http.StatusOK)
	found := false
	for _, l := range bl.Lines {
		if strings.Contains(l.Text, "Println") && l.MessageID == "toolu_01Greet" && l.Checkpoint == p.a2.ID {
			found = true
		}
	}
	if !found {
		t.Errorf("blame of src/main.go: %+v", bl.Lines)
	}
	wantError(t, "blame without a path", get(h, "/api/blame"), http.StatusBadRequest, "usage")
	wantError(t, "blame of a path no checkpoint has", get(h, "/api/blame"+q("path", "nowhere.go")), http.StatusNotFound, "no_path")
}

// A checkpoint that does not exist is a 404 with code no_checkpoint,
// wherever it is named.
func TestNoSuchCheckpoint(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	missing := strings.Repeat("ab", 32)
	for _, target := range []string{
		"/api/show" + q("ref", "#99"),
		"/api/show" + q("ref", missing),
		"/api/show" + q("ref", "nolabel"),
		"/api/diff" + q("from", "#99"),
		"/api/diff" + q("from", "#1", "to", "msg:none"),
		"/api/conversation" + q("ref", "@~10"),
		"/api/show" + q("session", "nobody"), // a session without a head
	} {
		wantError(t, target, get(h, target), http.StatusNotFound, "no_checkpoint")
	}
	for _, dry := range []bool{true, false} {
		w := post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#99", "dry_run": dry})
		wantError(t, fmt.Sprintf("rewind to #99 (dry run %v)", dry), w, http.StatusNotFound, "no_checkpoint")
	}
	// A checkpoint without a conversation document.
	wantError(t, "conversation of B's checkpoint", get(h, "/api/conversation"+q("session", "B", "ref", p.b1.ID.String())), http.StatusNotFound, "no_path")
	wantError(t, "diff with an empty from", get(h, "/api/diff"+q("session", "nobody")), http.StatusNotFound, "no_checkpoint")
}

// The conversation is paged: messages [offset, offset+limit) of total.
func TestConversationPaging(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	type page struct {
		Checkpoint snap.ID
		Format     string
		Total      int
		Offset     int
		Messages   []struct {
			Index int
			Role  string
			Text  string
			Calls []struct {
				ID   string
				Name string
			} `json:"tool_calls"`
			Results []struct {
				ToolUseID string `json:"tool_use_id"`
			} `json:"tool_results"`
		}
	}
	all := answer[page](t, get(h, "/api/conversation"+q("ref", p.a3.ID.String(), "limit", "100")), http.StatusOK)
	if all.Checkpoint != p.a3.ID || all.Total != 6 || len(all.Messages) != 6 {
		t.Fatalf("the whole conversation: total %d, %d messages, format %q: %+v", all.Total, len(all.Messages), all.Format, all.Messages)
	}
	if m := all.Messages[0]; m.Role != "user" || m.Text != promptText {
		t.Errorf("first message: %+v", m)
	}
	if m := all.Messages[1]; m.Role != "assistant" || m.Text != answerText || len(m.Calls) != 1 || m.Calls[0].ID != "toolu_01Greet" || m.Calls[0].Name != "Write" {
		t.Errorf("second message: %+v", m)
	}
	if m := all.Messages[2]; len(m.Results) != 1 || m.Results[0].ToolUseID != "toolu_01Greet" {
		t.Errorf("third message: %+v", m)
	}
	for _, c := range []struct {
		offset, limit string
		want          []int
	}{
		{"0", "2", []int{0, 1}},
		{"1", "2", []int{1, 2}},
		{"4", "50", []int{4, 5}},
		{"6", "2", nil},
		{"60", "2", nil},
	} {
		pg := answer[page](t, get(h, "/api/conversation"+q("ref", "@", "offset", c.offset, "limit", c.limit)), http.StatusOK)
		var got []int
		for _, m := range pg.Messages {
			got = append(got, m.Index)
		}
		if pg.Total != 6 || !slices.Equal(got, c.want) {
			t.Errorf("offset %s limit %s: total %d, messages %v, want %v", c.offset, c.limit, pg.Total, got, c.want)
		}
		for i, m := range pg.Messages {
			if m.Text != all.Messages[m.Index].Text || m.Index != pg.Offset+i {
				t.Errorf("offset %s: message %d is %+v", c.offset, m.Index, m)
			}
		}
	}
	// At a1 the conversation had one message.
	pg := answer[page](t, get(h, "/api/conversation"+q("ref", "#1")), http.StatusOK)
	if pg.Total != 1 || len(pg.Messages) != 1 || pg.Messages[0].Text != promptText {
		t.Errorf("conversation at #1: %+v", pg)
	}
	wantError(t, "offset=-1", get(h, "/api/conversation"+q("offset", "-1")), http.StatusBadRequest, "usage")
}

// Search finds checkpoints of every session by summary, tool call id,
// message id, kind and changed path.
func TestSearch(t *testing.T) {
	p := newProject(t)
	if _, err := p.r.Label(ctx, "A", "#2", "greeting-done"); err != nil {
		t.Fatal(err)
	}
	h := handler(p.r, "A")
	type hit struct {
		snap.LogEntry
		Match string
		Path  string
	}
	search := func(query string) []hit {
		t.Helper()
		return answer[struct {
			Query string
			Hits  []hit
		}](t, get(h, "/api/search"+q("q", query)), http.StatusOK).Hits
	}
	for _, c := range []struct {
		query, match, path string
		want               []snap.ID
	}{
		{"OUTDATED readme", "summary", "", []snap.ID{p.a3.ID}},
		{"toolu_01greet", "call", "", []snap.ID{p.a2.ID}},
		{"toolu_B1Notes", "call", "", []snap.ID{p.b1.ID}}, // another session
		{"msg_02", "message_id", "", []snap.ID{p.a3.ID}},
		{"greeting-done", "label", "", []snap.ID{p.a2.ID}},
		// Paths are matched against what a checkpoint recorded first: its
		// tree against the one recorded just before it, in any session, so
		// B's notes are b1's, not a3's too; the first checkpoint of the
		// store recorded all its files.
		{"notes/b.txt", "path", "notes/b.txt", []snap.ID{p.b1.ID}},
		{"greet.go", "path", "src/greet.go", []snap.ID{p.a2.ID}},
		{"README.md", "path", "README.md", []snap.ID{p.a3.ID, p.a1.ID}},
		{"src/greet", "path", "src/greet.go", []snap.ID{p.a2.ID}},
		{"takes notes", "summary", "", []snap.ID{p.b1.ID}},
		{"no such thing", "", "", nil},
	} {
		hits := search(c.query)
		var ids []snap.ID
		for _, h := range hits {
			ids = append(ids, h.ID)
			if h.Match != c.match || h.Path != c.path {
				t.Errorf("search %q: hit %s matched %q %q, want %q %q", c.query, h.ID.Short(), h.Match, h.Path, c.match, c.path)
			}
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("search %q: %v, want %v", c.query, ids, c.want)
		}
	}
	if hits := answer[struct{ Hits []hit }](t, get(h, "/api/search"+q("q", "post-tool", "limit", "2")), http.StatusOK).Hits; len(hits) != 2 {
		t.Errorf("search with limit 2: %d hits", len(hits))
	}
	wantError(t, "empty search", get(h, "/api/search"+q("q", "  ")), http.StatusBadRequest, "usage")
	wantError(t, "search limit", get(h, "/api/search"+q("q", "a", "limit", "-1")), http.StatusBadRequest, "usage")
}

func TestTasks(t *testing.T) {
	p := newProject(t)
	flow := workflow.New(p.r)
	if _, err := flow.TaskBegin(ctx, workflow.TaskOptions{Session: "A", Text: "make the greeting configurable"}); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.EditStage(ctx, workflow.EditRequest{Session: "A", Path: "src/greet.go", Old: "hello, world", New: "hello, snap"}); err != nil {
		t.Fatal(err)
	}
	h := handler(p.r, "A")
	type tasksAnswer struct {
		Tasks workflow.TaskTree
		Edits struct {
			Pending []workflow.PendingChange `json:"pending_changes"`
		}
	}
	got := answer[tasksAnswer](t, get(h, "/api/tasks"), http.StatusOK)
	if len(got.Tasks.Tasks) != 1 || got.Tasks.Tasks[0].Goal != "make the greeting configurable" || got.Tasks.Current == nil {
		t.Errorf("tasks: %+v", got.Tasks)
	}
	if len(got.Edits.Pending) != 1 || got.Edits.Pending[0].Path != "src/greet.go" || !strings.Contains(got.Edits.Pending[0].Preview, "hello, snap") {
		t.Errorf("staged edits: %+v", got.Edits)
	}
	b := answer[map[string]map[string]any](t, get(h, "/api/tasks"+q("session", "B")), http.StatusOK)
	if tasks, _ := b["tasks"]["tasks"].([]any); len(tasks) != 0 {
		t.Errorf("B's tasks: %v", b)
	}
	// At a checkpoint: the tree as it recorded it (a3, before the task).
	then := answer[tasksAnswer](t, get(h, "/api/tasks"+q("ref", p.a3.ID.String())), http.StatusOK)
	if len(then.Tasks.Tasks) != 0 || then.Tasks.Checkpoint == nil || *then.Tasks.Checkpoint != p.a3.ID {
		t.Errorf("tasks at a3: %+v", then.Tasks)
	}
	now := answer[tasksAnswer](t, get(h, "/api/tasks"+q("ref", "@")), http.StatusOK)
	if len(now.Tasks.Tasks) != 1 {
		t.Errorf("tasks at the head: %+v", now.Tasks)
	}
	wantError(t, "tasks at no checkpoint", get(h, "/api/tasks"+q("ref", "nope")), http.StatusNotFound, "no_checkpoint")
}

// ---- rewind, undo, redo ---------------------------------------------------

type rewindAnswer struct {
	Result *snap.RewindResult `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func keptPaths(ks []snap.Kept) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Path)
	}
	return out
}

// A's rewind to a1 keeps notes/b.txt, which session B wrote after a1: the
// dry run and the rewind list it, and it stays on disk; Undo puts the tree
// and the transcript back exactly; Redo does the rewind again.
func TestRewindKeepsAnotherActorsPathsAndUndo(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	before := p.disk(t)

	dry := answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": p.a1.ID.String(), "dry_run": true}), http.StatusOK)
	check := func(what string, r snap.RewindResult) {
		t.Helper()
		if !slices.Equal(r.Restored, []string{"README.md", "src/main.go"}) || !slices.Equal(r.Deleted, []string{"src/greet.go"}) ||
			!slices.Equal(keptPaths(r.Kept), []string{"notes/b.txt"}) || r.Target != p.a1.ID {
			t.Fatalf("%s: restored %v deleted %v kept %v target %s", what, r.Restored, r.Deleted, keptPaths(r.Kept), r.Target.Short())
		}
		if k := r.Kept[0]; k.Session != "B" || k.Actor != snap.ActorAgent || k.Checkpoint != p.b1.ID || k.Seq != 1 {
			t.Fatalf("%s: kept %+v", what, k)
		}
		if len(r.State) != 1 || r.State[0].Name != snap.ConversationDoc || r.State[0].Path != p.transcript {
			t.Fatalf("%s: state %+v", what, r.State)
		}
	}
	check("dry run", dry)
	if !dry.DryRun || dry.SafetyCheckpoint != nil {
		t.Fatalf("dry run: %+v", dry)
	}
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Fatalf("the dry run changed the tree:\n%s", d)
	}

	res := answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": p.a1.ID.String()}), http.StatusOK)
	check("rewind", res)
	if res.DryRun || res.SafetyCheckpoint == nil {
		t.Fatalf("rewind: %+v", res)
	}
	want := maps(filesAtA1, map[string]string{"notes/b.txt": notesOfB})
	want["<transcript>"] = ccUser("u1", promptText) + "\n"
	if d := snaptest.Diff(want, p.disk(t)); d != "" {
		t.Fatalf("after the rewind (want a1's files and B's notes):\n%s", d)
	}
	// A's head holds what is on disk (a1's files and B's notes).
	st := answer[snap.StatusResult](t, get(h, "/api/status"+q("session", "A")), http.StatusOK)
	if st.Head == nil || !st.Clean {
		t.Errorf("A after the rewind: %+v", st)
	}

	u := answer[snap.UndoResult](t, post(t, h, "/api/undo", map[string]any{"session": "A"}), http.StatusOK)
	if u.Op.Kind != "rewind" || u.Rewind == nil {
		t.Fatalf("undo: %+v", u)
	}
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Fatalf("after undo the tree differs from before the rewind:\n%s", d)
	}
	if st := answer[snap.StatusResult](t, get(h, "/api/status"+q("session", "A")), http.StatusOK); st.Head == nil || *st.Head != p.a3.ID || !st.Clean {
		t.Errorf("A after undo: %+v", st)
	}

	r := answer[snap.UndoResult](t, post(t, h, "/api/redo", map[string]any{"session": "A"}), http.StatusOK)
	if r.Op.Kind != "rewind" {
		t.Fatalf("redo: %+v", r)
	}
	if d := snaptest.Diff(want, p.disk(t)); d != "" {
		t.Fatalf("after redo:\n%s", d)
	}
	wantError(t, "redo twice", post(t, h, "/api/redo", map[string]any{"session": "A"}), http.StatusConflict, "nothing_to_redo")
	// The server's session is the default of a request that names none.
	answer[snap.UndoResult](t, post(t, h, "/api/undo", map[string]any{}), http.StatusOK)
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Fatalf("after the second undo:\n%s", d)
	}
}

func maps(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Files only, conversation only, some paths, --all.
func TestRewindOptions(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	before := p.disk(t)
	undo := func() {
		t.Helper()
		answer[snap.UndoResult](t, post(t, h, "/api/undo", map[string]any{"session": "A"}), http.StatusOK)
		if d := snaptest.Diff(before, p.disk(t)); d != "" {
			t.Fatalf("after undo:\n%s", d)
		}
	}
	res := answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "files_only": true}), http.StatusOK)
	if len(res.State) != 0 || p.disk(t)["<transcript>"] != before["<transcript>"] || p.disk(t)["src/greet.go"] != "" {
		t.Errorf("files only: %+v", res)
	}
	undo()
	res = answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "conversation_only": true}), http.StatusOK)
	if len(res.Restored)+len(res.Deleted) != 0 || len(res.State) != 1 || p.disk(t)["src/greet.go"] != greetAtA2 {
		t.Errorf("conversation only: %+v", res)
	}
	undo()
	res = answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "paths": []string{"src/main.go"}}), http.StatusOK)
	if !slices.Equal(res.Restored, []string{"src/main.go"}) || len(res.Deleted) != 0 || p.disk(t)["src/greet.go"] != greetAtA2 {
		t.Errorf("paths: %+v", res)
	}
	undo()
	res = answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "all": true, "dry_run": true}), http.StatusOK)
	if len(res.Kept) != 0 || !slices.Contains(res.Deleted, "notes/b.txt") {
		t.Errorf("all (dry run): %+v", res)
	}
	wantError(t, "files only and conversation only", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "files_only": true, "conversation_only": true}),
		http.StatusBadRequest, "usage")
	wantError(t, "a path in no checkpoint", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1", "paths": []string{"nowhere"}}),
		http.StatusNotFound, "no_path")
}

// A rewind some path of which cannot be written answers 200 with the
// result and an error of code "partial"; the other paths are restored.
// (The path: a directory holding an ignored file stands where the target
// has a file. A read-only directory would not do: the tests may run as
// root.)
func TestPartialRewind(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	// README.md (deleted since a1) is now a directory holding an ignored file.
	snaptest.WriteFiles(t, p.root, map[string]string{"README.md/debug.log": "build output\n"})
	checkpoint(t, p.r, snap.CheckpointOptions{Session: "A", Actor: snap.ActorAgent, Summary: "build"})
	for _, dry := range []bool{true, false} {
		w := post(t, h, "/api/rewind", map[string]any{"session": "A", "target": p.a1.ID.String(), "dry_run": dry})
		a := answer[rewindAnswer](t, w, http.StatusOK)
		if a.Error == nil || a.Error.Code != "partial" || !strings.Contains(a.Error.Message, "README.md") || a.Result == nil {
			t.Fatalf("dry run %v: %s", dry, w.Body.String())
		}
		if len(a.Result.Errors) != 1 || a.Result.Errors[0].Path != "README.md" || !slices.Contains(a.Result.Restored, "src/main.go") {
			t.Fatalf("dry run %v: %+v", dry, a.Result)
		}
	}
	got := p.disk(t)
	if got["src/main.go"] != filesAtA1["src/main.go"] || got["README.md/debug.log"] != "build output\n" || got["src/greet.go"] != "" {
		t.Fatalf("after a partial rewind: %v", got)
	}
}

func TestNothingToUndo(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	for _, session := range []string{"nobody", "C"} {
		wantError(t, "undo in "+session, post(t, h, "/api/undo", map[string]any{"session": session}), http.StatusConflict, "nothing_to_undo")
		wantError(t, "redo in "+session, post(t, h, "/api/redo", map[string]any{"session": session}), http.StatusConflict, "nothing_to_redo")
	}
	wantError(t, "undo in a bad session name", post(t, h, "/api/undo", map[string]any{"session": "a/../../b"}), http.StatusBadRequest, "usage")
	// Undo of B's checkpoint, then nothing is left to undo in B.
	u := answer[snap.UndoResult](t, post(t, h, "/api/undo", map[string]any{"session": "B"}), http.StatusOK)
	if u.Op.Kind != "checkpoint" || u.Op.Session != "B" {
		t.Fatalf("undo in B: %+v", u)
	}
	wantError(t, "second undo in B", post(t, h, "/api/undo", map[string]any{"session": "B"}), http.StatusConflict, "nothing_to_undo")
}

// A lock another process holds past the store's lock timeout is a 503
// with code busy; nothing moves.
func TestStoreBusy(t *testing.T) {
	p := newProject(t)
	short, err := snap.Open(snap.Options{Dir: p.root, LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	h := handler(short, "A")
	before := p.disk(t)
	// A rewind in progress elsewhere holds move.lock.
	lock, err := p.r.Refs().Locks().Lock(ctx, storage.MoveLock, storage.Exclusive, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wantError(t, "rewind", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1"}), http.StatusServiceUnavailable, "busy")
	if time.Since(start) < 150*time.Millisecond {
		t.Errorf("busy after %v, before the lock timeout", time.Since(start))
	}
	// Reading is not held up.
	answer[map[string]any](t, get(h, "/api/log"), http.StatusOK)
	lock.Close()
	// A gc sweeping (it holds gc.lock exclusively): every change waits,
	// then is busy.
	release, err := storage.LockSweep(ctx, p.r.Refs().Locks(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, "undo", post(t, h, "/api/undo", map[string]any{"session": "B"}), http.StatusServiceUnavailable, "busy")
	wantError(t, "rewind", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1"}), http.StatusServiceUnavailable, "busy")
	release()
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Fatalf("a busy rewind changed the tree:\n%s", d)
	}
	// Once free, the same request works.
	answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#1"}), http.StatusOK)
}

// ---- the events stream ---------------------------------------------------

// The events stream sends a change event at once, and another when a
// checkpoint is made through another handle on the store (another process:
// a hook, the MCP server); it ends when the server shuts down.
func TestEvents(t *testing.T) {
	p := newProject(t)
	srv := ui.New(p.r, ui.Options{Session: "A", Token: testToken, Poll: 20 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ui.Serve(sctx, l, srv.Handler(addr)) }()
	defer func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(4 * time.Second):
			t.Errorf("Serve did not return after its context ended (an events stream held it)")
		}
	}()

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/events", nil)
	req.Header.Set("X-Snap-Token", testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	type event struct {
		name string
		seq  int64
	}
	events := make(chan event, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		var e event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var d struct{ Seq int64 }
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err == nil {
					e.seq = d.Seq
				}
			case line == "" && e.name != "":
				events <- e
				e = event{}
			}
		}
	}()
	next := func(what string, within time.Duration) event {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			return e
		case <-time.After(within):
			t.Fatalf("%s: no event within %v", what, within)
		}
		return event{}
	}
	first := next("the first event", time.Second)
	ops, err := p.r.Ops(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if first.name != "change" || first.seq != ops[0].Seq {
		t.Fatalf("first event %+v, want change with seq %d", first, ops[0].Seq)
	}
	// Nothing new: no event.
	select {
	case e := <-events:
		t.Fatalf("an event without a change: %+v", e)
	case <-time.After(150 * time.Millisecond):
	}
	other, err := snap.Open(snap.Options{Dir: p.root})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	snaptest.WriteFiles(t, p.root, map[string]string{"hook.txt": "written by a hook\n"})
	checkpoint(t, other, snap.CheckpointOptions{Session: "C", Kind: "post-tool", Actor: snap.ActorAgent})
	second := next("the event after another handle's checkpoint", 3*time.Second)
	if second.name != "change" || second.seq <= first.seq {
		t.Fatalf("second event %+v after %+v", second, first)
	}
	// The stream, too, needs the token.
	req, _ = http.NewRequest(http.MethodGet, "http://"+addr+"/api/events", nil)
	res2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusUnauthorized {
		t.Errorf("events without the token: %d", res2.StatusCode)
	}
}

// The store's usage: bytes on disk, new bytes per session, and on request
// what a gc would free (a dry run: nothing is removed).
func TestUsage(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	type usage struct {
		StoreBytes   int64            `json:"store_bytes"`
		SessionBytes map[string]int64 `json:"session_bytes"`
		GC           *snap.GCResult   `json:"gc"`
	}
	u := answer[usage](t, get(h, "/api/usage"), http.StatusOK)
	if u.StoreBytes <= 0 || u.SessionBytes["A"] <= 0 || u.SessionBytes["B"] <= 0 || u.GC != nil {
		t.Errorf("usage: %+v", u)
	}
	u = answer[usage](t, get(h, "/api/usage"+q("gc", "1")), http.StatusOK)
	if u.GC == nil || !u.GC.DryRun || u.GC.Reachable == 0 {
		t.Errorf("usage with gc: %+v", u.GC)
	}
	if ss := answer[struct{ Sessions []snap.SessionInfo }](t, get(h, "/api/sessions"), http.StatusOK).Sessions; len(ss) != 2 || ss[0].Checkpoints != 3 {
		t.Errorf("sessions after a gc dry run: %+v", ss)
	}
}

// Search finds a checkpoint by its prompt's text (issue 23: "find a
// checkpoint by prompt text, tool call, file path or summary"). A Claude
// Code hook records a prompt checkpoint with the prompt's first line as its
// summary (agent.FirstLine); the rest of the prompt is in the conversation.
func TestSearchFindsPromptText(t *testing.T) {
	p := newProject(t)
	prompt := "Write a test for the greeting.\n\nUse a table of cases, and name the helper checkGreeting."
	appendLines(t, p.transcript, ccUser("u7", prompt))
	c := checkpoint(t, p.r, snap.CheckpointOptions{Session: "A", Kind: "prompt", Actor: snap.ActorUser,
		Summary: "Write a test for the greeting.", State: conv(t, p.transcript)})
	h := handler(p.r, "A")
	hits := answer[struct{ Hits []snap.LogEntry }](t, get(h, "/api/search"+q("q", "a test for the greeting")), http.StatusOK).Hits
	if len(hits) != 1 || hits[0].ID != c.ID {
		t.Fatalf("search of the prompt's first line: %+v", hits)
	}
	hits = answer[struct{ Hits []snap.LogEntry }](t, get(h, "/api/search"+q("q", "checkGreeting")), http.StatusOK).Hits
	if len(hits) == 0 || hits[0].ID != c.ID {
		t.Fatalf("search of the prompt's third line (\"checkGreeting\") found %+v, want %s", hits, c.ID.Short())
	}
}

// `snap ui --addr 0.0.0.0:8766` (the help says another address lets other
// machines reach it) must answer a request that names the machine by its
// IP address: a DNS rebinding attack names it by a host name, never by an
// IP literal.
func TestUnspecifiedAddress(t *testing.T) {
	p := newProject(t)
	for _, addr := range []string{"0.0.0.0:8766", "[::]:8766"} {
		h := ui.New(p.r, ui.Options{Token: testToken}).Handler(addr)
		for _, host := range []string{"evil.example:8766", "192.0.2.7:8767"} {
			w := serve(h, request(http.MethodGet, "/api/info", "", func(r *http.Request) { r.Host = host }))
			wantError(t, addr+" with Host "+host, w, http.StatusForbidden, "forbidden_host")
		}
		for _, host := range []string{"192.0.2.7:8766", "127.0.0.1:8766", "[2001:db8::7]:8766"} {
			w := serve(h, request(http.MethodGet, "/api/info", "", func(r *http.Request) { r.Host = host }))
			if w.Code != http.StatusOK {
				t.Errorf("a server listening on %s refuses Host %s: %d %s", addr, host, w.Code, strings.TrimSpace(w.Body.String()))
			}
		}
	}
}

// ---- adversarial findings (torture/ui-findings) ---------------------------

// U2: a rewind sent with the plan its dialog showed is refused, changing
// nothing, when the working tree changed since the preview; with the same
// plan it runs.
func TestRewindRefusedWhenThePreviewIsStale(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	req := map[string]any{"session": "A", "target": p.a1.ID.String(), "dry_run": true}
	dry := answer[snap.RewindResult](t, post(t, h, "/api/rewind", req), http.StatusOK)
	plan := map[string][]string{"restored": dry.Restored, "deleted": dry.Deleted, "kept": keptPaths(dry.Kept)}
	snaptest.WriteFiles(t, p.root, map[string]string{"new-while-the-dialog-was-open.txt": "mine\n"})
	before := p.disk(t)
	req["dry_run"], req["expect"] = false, plan
	wantError(t, "a stale preview", post(t, h, "/api/rewind", req), http.StatusConflict, "changed_since_preview")
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Fatalf("a refused rewind changed the tree:\n%s", d)
	}
	// Previewed again: it goes through, and did what the preview said.
	req["dry_run"], req["expect"] = true, nil
	dry = answer[snap.RewindResult](t, post(t, h, "/api/rewind", req), http.StatusOK)
	req["dry_run"], req["expect"] = false, map[string][]string{"restored": dry.Restored, "deleted": dry.Deleted, "kept": keptPaths(dry.Kept)}
	got := answer[snap.RewindResult](t, post(t, h, "/api/rewind", req), http.StatusOK)
	if !slices.Equal(got.Deleted, dry.Deleted) || !slices.Equal(got.Restored, dry.Restored) {
		t.Fatalf("rewind: restored %v deleted %v, preview %v %v", got.Restored, got.Deleted, dry.Restored, dry.Deleted)
	}
}

// U5: a huge page size is a page, not a panic; U8: a path of the dialog
// may be absolute, in the project; /api/undoable names what Undo and Redo
// would reverse.
func TestPageSizeAbsolutePathsUndoable(t *testing.T) {
	p := newProject(t)
	h := handler(p.r, "A")
	page := answer[struct {
		Total   int
		Entries []snap.LogEntry
	}](t, get(h, "/api/log"+q("offset", "1", "limit", "9223372036854775807")), http.StatusOK)
	if page.Total != 3 || len(page.Entries) != 2 {
		t.Fatalf("log page: total %d, %d entries", page.Total, len(page.Entries))
	}
	abs := filepath.Join(p.root, "src", "main.go")
	res := answer[snap.RewindResult](t, post(t, h, "/api/rewind", map[string]any{"session": "A", "target": p.a1.ID.String(), "paths": []string{abs}}), http.StatusOK)
	if !slices.Equal(res.Restored, []string{"src/main.go"}) {
		t.Fatalf("rewind of an absolute path: restored %v", res.Restored)
	}
	outside := filepath.Join(filepath.Dir(p.root), "elsewhere.txt")
	wantError(t, "a path outside the project", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": p.a1.ID.String(), "paths": []string{outside}}),
		http.StatusNotFound, "no_path")
	u := answer[map[string]*snap.Op](t, get(h, "/api/undoable"+q("session", "A")), http.StatusOK)
	if u["undo"] == nil || u["undo"].Kind != "rewind" || u["redo"] != nil {
		t.Fatalf("undoable: %+v", u)
	}
	if u := answer[map[string]*snap.Op](t, get(h, "/api/undoable"+q("session", "nobody")), http.StatusOK); u["undo"] != nil {
		t.Fatalf("undoable of a session with no operation: %+v", u)
	}
}

// damagedProject is a store (without the fsck at the end that NewRepo
// adds: the test damages it) where session A has three checkpoints and B
// one; it returns the pack file that holds what A's second checkpoint
// added (its checkpoint object among them).
func damagedProject(t *testing.T) (r *snap.Repo, root string, a1, a2, a3, b1 *snap.CheckpointResult, pack string) {
	t.Helper()
	root = t.TempDir()
	r, _, err := snap.Init(snap.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	packs := func() map[string]bool {
		m := map[string]bool{}
		es, err := os.ReadDir(filepath.Join(r.StoreDir, "packs"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			m[e.Name()] = true
		}
		return m
	}
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "one\n", "d/b.txt": "b\n"})
	a1 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Summary: "one"})
	before := packs()
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "two\n", "c.txt": "new in two\n"})
	a2 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Summary: "two"})
	for n := range packs() {
		if !before[n] {
			if pack != "" {
				t.Fatalf("the second checkpoint wrote two packs: %s, %s", pack, n)
			}
			pack = filepath.Join(r.StoreDir, "packs", n)
		}
	}
	if pack == "" {
		t.Fatal("the second checkpoint wrote no pack")
	}
	snaptest.WriteFiles(t, root, map[string]string{"e.txt": "B's\n"})
	b1 = checkpoint(t, r, snap.CheckpointOptions{Session: "B", Summary: "B's"})
	snaptest.WriteFiles(t, root, map[string]string{"a.txt": "three\n"})
	a3 = checkpoint(t, r, snap.CheckpointOptions{Session: "A", Summary: "three"})
	// The store as another process opens it (snap ui is not the process
	// that wrote the packs, and has none of them open yet).
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err = snap.Open(snap.Options{Dir: root}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, root, a1, a2, a3, b1, pack
}

// A store damaged while snap ui serves it (a pack file deleted, or cut
// short): what needs the lost objects answers a JSON error that says so
// (object_missing or corrupt, a message, a non-200 status), never a panic
// or an empty answer; what does not keeps working.
func TestDamagedStore(t *testing.T) {
	for _, damage := range []string{"deleted", "truncated", "emptied"} {
		t.Run(damage, func(t *testing.T) {
			r, _, a1, _, a3, b1, pack := damagedProject(t)
			h := handler(r, "A")
			// Served before the damage. (Not A's pages: the server would
			// keep the pack open, and a deleted file's data would still be
			// read through it.)
			for _, target := range []string{"/api/info", "/api/log" + q("session", "B")} {
				answer[map[string]any](t, get(h, target), http.StatusOK)
			}
			switch damage {
			case "deleted":
				err := os.Remove(pack)
				if err != nil {
					t.Fatal(err)
				}
			case "truncated":
				fi, err := os.Stat(pack)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(pack, fi.Size()/2); err != nil {
					t.Fatal(err)
				}
			case "emptied":
				if err := os.Truncate(pack, 0); err != nil {
					t.Fatal(err)
				}
			}
			// What needs A's second checkpoint: A's timeline, its head
			// (whose parent it is), search (which reads every checkpoint).
			// (Blame and a compare of #1 with #3 need only what survives a
			// truncation; the engine then leaves #2 out of who wrote what.)
			for _, target := range []string{
				"/api/log" + q("session", "A"),
				"/api/show" + q("session", "A", "ref", "@"),
				"/api/show" + q("session", "A", "ref", a3.ID.String()),
				"/api/search" + q("q", "c.txt"),
			} {
				w := get(h, target)
				var e errorBody
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code == http.StatusOK || e.Error.Message == "" ||
					(e.Error.Code != "object_missing" && e.Error.Code != "corrupt") {
					t.Errorf("%s on a store whose pack was %s: %d %q, want a JSON error object_missing or corrupt", target, damage, w.Code, w.Body.String())
				} else if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
					t.Errorf("%s: Content-Type %q", target, w.Header().Get("Content-Type"))
				}
			}
			wantError(t, "rewind to the lost checkpoint", post(t, h, "/api/rewind", map[string]any{"session": "A", "target": "#2", "dry_run": true}),
				http.StatusInternalServerError, map[string]string{"deleted": "object_missing"}[damage]+map[bool]string{true: "corrupt"}[damage != "deleted"])
			// What does not: the sessions, B's timeline and checkpoint, A's
			// first checkpoint, the status, the operations, the page itself.
			ss := answer[struct{ Sessions []snap.SessionInfo }](t, get(h, "/api/sessions"), http.StatusOK).Sessions
			if len(ss) != 2 || ss[0].Name != "A" || ss[0].Head != a3.ID || ss[1].Name != "B" {
				t.Errorf("sessions: %+v", ss)
			}
			if lb := answer[struct{ Entries []snap.LogEntry }](t, get(h, "/api/log"+q("session", "B")), http.StatusOK); len(lb.Entries) != 1 || lb.Entries[0].ID != b1.ID {
				t.Errorf("B's log: %+v", lb)
			}
			if s := answer[snap.ShowResult](t, get(h, "/api/show"+q("session", "B", "ref", "@")), http.StatusOK); s.ID != b1.ID {
				t.Errorf("B's head: %s", s.ID)
			}
			if s := answer[snap.ShowResult](t, get(h, "/api/show"+q("session", "A", "ref", a1.ID.String())), http.StatusOK); s.ID != a1.ID {
				t.Errorf("A's first checkpoint: %s", s.ID)
			}
			answer[snap.StatusResult](t, get(h, "/api/status"+q("session", "A")), http.StatusOK)
			answer[map[string]any](t, get(h, "/api/ops"), http.StatusOK)
			if w := get(h, "/"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "<title>snap</title>") {
				t.Errorf("the page: %d", w.Code)
			}
		})
	}
}

// A handler that panics (a bug; data from a damaged store nothing
// checked) answers a JSON error the page shows, with status 500: the
// connection is not dropped with nothing said.
func TestPanicIsAnError(t *testing.T) {
	p := newProject(t)
	srv := ui.New(p.r, ui.Options{Session: "A", Poll: 20 * time.Millisecond})
	srv.HandleGet("/api/panics", func(*http.Request) (any, error) {
		var rows []int
		_ = rows[len(rows)] // an index out of range: panics
		return nil, nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ui.Serve(sctx, l, srv.Handler(l.Addr().String())) }()
	defer func() { stop(); <-served }()
	req, _ := http.NewRequest(http.MethodGet, "http://"+l.Addr().String()+"/api/panics", nil)
	req.Header.Set("X-Snap-Token", srv.Token())
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("a panicking handler: %v (the connection was dropped)", err)
	}
	defer res.Body.Close()
	var e errorBody
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != http.StatusInternalServerError || e.Error.Code != "internal" ||
		!strings.Contains(e.Error.Message, "/api/panics") || !strings.Contains(e.Error.Message, "index out of range") {
		t.Errorf("a panicking handler: %d %+v (%v)", res.StatusCode, e, err)
	}
}

// A checkpoint's changed files, and a compare's (stat=1), come a page at a
// time (offset, limit): added, then modified, then deleted; files_total
// counts them all. A checkpoint of thousands of files is not sent whole.
func TestShowAndDiffPageTheFiles(t *testing.T) {
	p := newProject(t)
	files := map[string]string{}
	for i := range 7 {
		files[fmt.Sprintf("many/f%d.txt", i)] = "x\n"
	}
	snaptest.WriteFiles(t, p.root, files)
	snaptest.WriteFiles(t, p.root, map[string]string{"src/main.go": "changed\n"})
	os.Remove(filepath.Join(p.root, "src", "greet.go"))
	c := checkpoint(t, p.r, snap.CheckpointOptions{Session: "A", Summary: "many"})
	h := handler(p.r, "A")
	type showPage struct {
		snap.ShowResult
		FilesTotal  int `json:"files_total"`
		FilesOffset int `json:"files_offset"`
	}
	all := []string{}
	for off := 0; ; off += 4 {
		pg := answer[showPage](t, get(h, "/api/show"+q("ref", c.ID.String(), "offset", fmt.Sprint(off), "limit", "4")), http.StatusOK)
		if pg.FilesTotal != 9 || pg.FilesOffset != off || pg.Files.Added == nil || pg.Files.Modified == nil || pg.Files.Deleted == nil {
			t.Fatalf("show offset %d: total %d offset %d files %+v", off, pg.FilesTotal, pg.FilesOffset, pg.Files)
		}
		n := len(pg.Files.Added) + len(pg.Files.Modified) + len(pg.Files.Deleted)
		if n == 0 {
			break
		}
		if n > 4 {
			t.Fatalf("show offset %d limit 4: %d files", off, n)
		}
		for _, l := range [][]string{pg.Files.Added, pg.Files.Modified, pg.Files.Deleted} {
			all = append(all, l...)
		}
	}
	want := append(append(slices.Clone(c.Files.Added), c.Files.Modified...), c.Files.Deleted...)
	if !slices.Equal(all, want) || len(want) != 9 {
		t.Errorf("the pages of show list %v, want %v", all, want)
	}
	// Without offset and limit: the first 50.
	if pg := answer[showPage](t, get(h, "/api/show"+q("ref", c.ID.String())), http.StatusOK); len(pg.Files.Added) != 7 || pg.FilesTotal != 9 {
		t.Errorf("show: %+v", pg.Files)
	}
	type diffPage struct {
		snap.DiffResult
		FilesTotal  int `json:"files_total"`
		FilesOffset int `json:"files_offset"`
	}
	d := answer[diffPage](t, get(h, "/api/diff"+q("from", p.a3.ID.String(), "to", c.ID.String(), "stat", "1", "offset", "3", "limit", "2")), http.StatusOK)
	if d.FilesTotal != 9 || d.FilesOffset != 3 || len(d.Files) != 2 || d.Files[0].Patch != "" || len(d.State) != 0 {
		t.Errorf("diff stat page: %+v", d)
	}
	whole := answer[snap.DiffResult](t, get(h, "/api/diff"+q("from", p.a3.ID.String(), "to", c.ID.String())), http.StatusOK)
	if len(whole.Files) != 9 || d.Files[0].Path != whole.Files[3].Path || whole.Files[3].Patch == "" {
		t.Errorf("diff without stat: %d files", len(whole.Files))
	}
	wantError(t, "show with a bad offset", get(h, "/api/show"+q("offset", "-1")), http.StatusBadRequest, "usage")
}
