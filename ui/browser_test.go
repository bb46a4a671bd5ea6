package ui_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/snaptest"
	"github.com/snapcore-dev/snap/ui"
)

// chromium finds the browser the test drives: Debian's chromium.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser drives one headless Chromium tab; every step fails the test
// with what it was doing.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string // $SNAP_UI_SCREENSHOTS ("": none)
	n     int

	mu         sync.Mutex
	exceptions []string // uncaught JavaScript exceptions of the page
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for _, step := range steps {
		// A live refresh can redraw the page between finding a node and
		// acting on it; the step found nothing to act on then, so it is
		// run again (on a loaded machine: seen in make test).
		var err error
		for try := 0; try < 5; try++ {
			if err = chromedp.Do(b.ctx, step); err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			b.t.Fatalf("%s: %v%s", what, err, b.pageState())
		}
	}
}

// eval returns a JavaScript expression's value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// wait waits until the JavaScript expression is true (10 s at most; at
// most limit, if given).
func (b *browser) wait(what, expr string, limit ...time.Duration) {
	b.t.Helper()
	timeout := 10 * time.Second
	if len(limit) > 0 {
		timeout = limit[0]
	}
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v%s", what, expr, err, b.pageState())
	}
}

// text is the visible text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {innerText: ''}).innerText`, sel))
}

// pageState describes the page for a failure message.
func (b *browser) pageState() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\nnotice: " + document.getElementById('notice').innerText + "\nmain: " + document.getElementById('main').innerText.slice(0, 1500) +
		(document.getElementById('rewind').open ? "\ndialog: " + document.getElementById('rewind').innerText.slice(0, 1500) : "")`))
	if err != nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return "\npage: " + s + "\nexceptions: " + strings.Join(b.exceptions, "; ")
}

// key presses a key with nothing focused (the page's shortcuts ignore keys
// typed into a field).
func (b *browser) key(k string) {
	b.t.Helper()
	eval[chromedp.Void](b, `document.activeElement && document.activeElement.blur()`)
	b.do("key "+k, chromedp.KeyEvent(k))
}

// shot writes a screenshot of the whole page to $SNAP_UI_SCREENSHOTS.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	// Let the page settle (a refresh the events stream started).
	time.Sleep(100 * time.Millisecond)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.n++
	p := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// TestBrowser drives snap ui in a real headless Chromium over a project
// two sessions worked in: the sessions page, a timeline, a checkpoint and
// its conversation, a compare of two checkpoints, search, a rewind
// through its confirmation dialog (checked on disk against what the
// dialog said), and Undo (checked on disk: everything is back). Requests
// without the token, with a foreign Host, or a cross-origin POST are
// refused.
//
// It needs Debian's chromium (`make deps` installs it) and fails without
// it, unless SNAP_UI_NO_BROWSER=1, which skips it. With
// SNAP_UI_SCREENSHOTS=DIR it writes a PNG of every page it visits to DIR:
//
//	SNAP_UI_SCREENSHOTS=/tmp/snap-ui go test -run TestBrowser -v ./ui/
func TestBrowser(t *testing.T) {
	start := time.Now()
	p := newProject(t)
	b, base, srv := startBrowser(t, p.r, "A")

	// Sessions: the URL with the token; the page then drops it from the
	// address bar (the cookie carries it).
	b.do("open the URL", chromedp.Navigate(base+"/?token="+srv.Token()))
	t.Logf("chromium started and the page opened after %v", time.Since(start).Round(time.Millisecond))
	b.wait("the sessions", `document.querySelector('#main a[href="#/s/A"]') && document.querySelector('#main a[href="#/s/B"]')`)
	row := func(s string) string {
		return eval[string](b, fmt.Sprintf(`document.querySelector('#main a[href="#/s/%s"]').closest('tr').innerText`, s))
	}
	// A's agent is named (by its last checkpoint); B's is not known.
	if a, bb := row("A"), row("B"); !strings.Contains(a, "\tclaude-code\t3\t") || !strings.Contains(bb, "\t—\t1\t") {
		t.Errorf("sessions page: A %q, B %q", a, bb)
	}
	if u := eval[string](b, `location.href`); strings.Contains(u, "token") {
		t.Errorf("the token stays in the address bar: %s", u)
	}
	b.shot("sessions")
	b.checkContrast("the sessions page", "body")

	// The timeline of A: three checkpoints, newest first, the operations beside.
	b.do("open A's timeline", chromedp.Click(chromedp.CSS(`#main a[href="#/s/A"]`)))
	b.wait("A's timeline", `document.querySelectorAll('#timeline tbody tr').length === 3 && document.querySelectorAll('#ops li').length > 0`)
	rows := eval[[]string](b, `[...document.querySelectorAll('#timeline tbody tr')].map((r) => r.dataset.id)`)
	if !slices.Equal(rows, []string{p.a3.ID.String(), p.a2.ID.String(), p.a1.ID.String()}) {
		t.Errorf("timeline rows %v", rows)
	}
	if tl := b.text("#timeline"); !strings.Contains(tl, "toolu_01Greet") || !strings.Contains(tl, "Remove the outdated README") {
		t.Errorf("timeline: %q", tl)
	}
	b.shot("timeline")
	b.checkContrast("the timeline page", "body")

	// A checkpoint: its files and the conversation at that point.
	b.do("open checkpoint #3", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline a[href="#/s/A/c/%s"]`, p.a3.ID))))
	b.wait("the conversation", `document.querySelectorAll('#conversation .msg').length === 6`)
	convText := b.text("#conversation")
	for _, want := range []string{promptText, answerText, secondPrompt, removeText, "toolu_01Greet", "toolu_02Remove", "messages 1–6 of 6"} {
		if !strings.Contains(convText, want) {
			t.Errorf("the conversation of #3 lacks %q:\n%s", want, convText)
		}
	}
	b.do("unfold the tool's result", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#conversation details').forEach((d) => d.open = true)`))
	if !strings.Contains(b.text("#conversation"), toolOutput) || eval[bool](b, `!!document.querySelector('#conversation script')`) {
		t.Errorf("the tool's output is not shown as text: %q", b.text("#conversation"))
	}
	if files := b.text("#files"); !strings.Contains(files, "deleted README.md") || !strings.Contains(files, "added notes/b.txt") {
		t.Errorf("changed files of #3: %q", files)
	}
	// A changed file is a click from its diff.
	b.do("open README.md's diff", chromedp.Click(`//ul[@id="files"]//button[.="README.md"]`))
	b.wait("README.md's diff", `[...document.querySelectorAll('#filediff pre.diff span.del')].some((s) => s.textContent === '-# demo')`)
	b.shot("checkpoint")
	b.checkContrast("the checkpoint page", "body")

	// Compare #1 with #2: the diff of main.go, and the conversation.
	b.do("compare #1 with #2", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/s/A/compare/%s/%s'`, p.a1.ID, p.a2.ID)))
	b.wait("the compare view", `[...document.querySelectorAll('pre.diff span.add')].some((s) => s.textContent === '+\tfmt.Println(greeting())')`)
	if main := b.text("#main"); !strings.Contains(main, "2 file(s) differ") || !strings.Contains(main, "src/greet.go") || !strings.Contains(main, answerText) {
		t.Errorf("compare #1 with #2: %q", main)
	}
	b.shot("compare")
	b.checkContrast("the compare page", "body")
	b.do("side by side", chromedp.Click(chromedp.CSS(`#main .pager label:nth-of-type(2) input`)))
	b.wait("the side by side view", `[...document.querySelectorAll('table.sbs td.add')].some((s) => s.textContent === '\tfmt.Println(greeting())')`)
	b.shot("compare-side-by-side")
	b.checkContrast("the compare side by side page", "body")

	// c: the head against the working tree (nothing differs).
	b.key("c")
	b.wait("compare with now", `location.hash === '#/s/A/compare/@/now' && document.querySelector('#main h1').innerText.includes('working tree now') && document.getElementById('main').innerText.includes('No file differs.')`)
	b.shot("compare-now")

	// /: search a tool call id, across sessions.
	b.key("/")
	b.wait("the search box focused", `document.activeElement.id === 'q'`)
	// The page cancels the key's keydown; a browser then types nothing, but
	// the DevTools protocol sends the key's char event on its own, which
	// types the "/" a person would not see: clear it.
	b.do("search", chromedp.Evaluate[chromedp.Void](`document.getElementById('q').value = ''`), chromedp.SendKeys(chromedp.ID("q"), "toolu_01Greet"+kb.Enter))
	b.wait("the search hits", `location.hash === '#/search/toolu_01Greet' && document.querySelectorAll('#hits tbody tr').length === 1`)
	if hit := b.text("#hits tbody"); !strings.Contains(hit, "Add a greeting function") || !strings.Contains(hit, "call") {
		t.Errorf("search hit: %q", hit)
	}
	b.shot("search")
	b.checkContrast("the search page", "body")
	b.do("search a path", chromedp.Evaluate[chromedp.Void](`location.hash = '#/search/notes%2Fb.txt'`))
	b.wait("the path hits", `document.querySelector('#main h1').innerText === 'Search: notes/b.txt' && document.getElementById('hits').innerText.includes('path: notes/b.txt')`)
	b.shot("search-path")
	// Across sessions: B's summary, which holds markup, shown as text.
	b.do("search B's summary", chromedp.Evaluate[chromedp.Void](`location.hash = '#/search/takes%20notes'`))
	b.wait("B's hit", `document.querySelector('#main h1').innerText === 'Search: takes notes' && document.querySelectorAll('#hits tbody tr').length === 1`)
	if hits := b.text("#hits"); !strings.Contains(hits, bSummary) || eval[bool](b, `!!document.querySelector('#hits img')`) {
		t.Errorf("B's summary is not shown as text: %q", hits)
	}

	// The tasks tab.
	b.do("open the tasks", chromedp.Evaluate[chromedp.Void](`location.hash = '#/s/A/tasks'`))
	b.wait("the tasks", `document.querySelector('#main h1').innerText.startsWith('Tasks of')`)
	b.shot("tasks")
	b.checkContrast("the tasks page", "body")

	// h: the timeline; select #1, r: the rewind dialog with its dry run.
	b.key("h")
	b.wait("the timeline", `location.hash === '#/s/A' && document.querySelectorAll('#timeline tbody tr').length === 3`)
	b.do("select #1", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline tr[data-id="%s"] td:first-child`, p.a1.ID))))
	b.wait("#1 selected", fmt.Sprintf(`document.querySelector('#timeline tr[data-id="%s"]').classList.contains('sel')`, p.a1.ID))
	b.key("r")
	b.wait("the rewind dialog's dry run", `document.getElementById('rewind').open && !document.getElementById('rewind-go').disabled && document.getElementById('rewind-preview').dataset.ready`)
	if target := b.text("#rewind-target"); !strings.Contains(target, p.a1.ID.Short()) || !strings.Contains(target, "#1 of A") {
		t.Errorf("the dialog's target: %q", target)
	}
	// The lists as the dialog shows them: each h3 and the items of the
	// list after it.
	lists := eval[map[string][]string](b, `(() => {
		const out = {};
		let cur = null;
		for (const n of document.querySelectorAll('#rewind-preview > *')) {
			if (n.tagName === 'H3') { cur = n.textContent.replace(/ \(\d+\)$/, ''); out[cur] = []; }
			else if (n.tagName === 'UL' && cur) out[cur] = [...n.querySelectorAll('li')].map((li) => li.textContent);
		}
		return out;
	})()`)
	restored, deleted := lists["restored"], lists["deleted"]
	var kept []string
	for _, k := range lists["KEPT as they are"] {
		path, _, _ := strings.Cut(k, ": ")
		kept = append(kept, path)
	}
	t.Logf("the dialog says: restored %v, deleted %v, kept %v, state %v", restored, deleted, kept, lists["state documents"])
	if !slices.Equal(restored, []string{"README.md", "src/main.go"}) || !slices.Equal(deleted, []string{"src/greet.go"}) || !slices.Equal(kept, []string{"notes/b.txt"}) {
		t.Fatalf("the dry run in the dialog: %v", lists)
	}
	if k := lists["KEPT as they are"][0]; !strings.Contains(k, "session B") {
		t.Errorf("kept: %q does not say who wrote it", k)
	}
	if s := lists["state documents"]; len(s) != 1 || s[0] != "conversation → "+p.transcript {
		t.Errorf("state documents in the dialog: %v", s)
	}
	b.shot("rewind-dialog")
	b.checkContrast("the rewind dialog page", "#rewind")

	// Rewind, and check on disk that exactly what the dialog said changed.
	before := p.disk(t)
	b.do("press Rewind", chromedp.Click(chromedp.ID("rewind-go")))
	b.wait("the rewind's notice", `!document.getElementById('rewind').open && document.getElementById('notice').innerText.startsWith('Rewound: 2 restored, 1 deleted, 1 kept')`)
	after := p.disk(t)
	var changed []string
	for k := range maps(before, after) {
		if k != "<transcript>" && before[k] != after[k] {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	if want := slices.Sorted(slices.Values(append(slices.Clone(restored), deleted...))); !slices.Equal(changed, want) {
		t.Errorf("the rewind changed %v; the dialog said %v", changed, want)
	}
	for _, path := range restored {
		if after[path] != filesAtA1[path] {
			t.Errorf("restored %s: %q, want #1's %q", path, after[path], filesAtA1[path])
		}
	}
	for _, path := range deleted {
		if _, err := os.Lstat(filepath.Join(p.root, path)); !os.IsNotExist(err) {
			t.Errorf("deleted %s is still there (%v)", path, err)
		}
	}
	for _, path := range kept {
		if after[path] == "" || after[path] != before[path] {
			t.Errorf("kept %s: %q, was %q", path, after[path], before[path])
		}
	}
	if want := ccUser("u1", promptText) + "\n"; after["<transcript>"] != want {
		t.Errorf("the transcript after the rewind: %q, want #1's", after["<transcript>"])
	}
	b.wait("the timeline after the rewind", `document.querySelectorAll('#timeline tbody tr').length > 3`)
	b.shot("after-rewind")

	// Undo: everything is back.
	b.do("press Undo", chromedp.Click(chromedp.ID("undo")))
	b.do("confirm the undo", chromedp.Click(chromedp.ID("undo-confirm")))
	b.wait("the undo's notice", `document.getElementById('notice').innerText.startsWith('Undid rewind')`)
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Errorf("after Undo the tree is not as before the rewind:\n%s", d)
	}
	b.shot("after-undo")
	b.checkContrast("the after undo page", "body")

	// Redo: the rewind again, exactly; Undo once more.
	b.do("press Redo", chromedp.Click(chromedp.ID("redo")))
	b.do("confirm the redo", chromedp.Click(chromedp.ID("redo-confirm")))
	b.wait("the redo's notice", `document.getElementById('notice').innerText.startsWith('Redid rewind')`)
	if d := snaptest.Diff(after, p.disk(t)); d != "" {
		t.Errorf("after Redo the tree is not as after the rewind:\n%s", d)
	}
	b.do("press Undo again", chromedp.Click(chromedp.ID("undo")))
	b.do("confirm the second undo", chromedp.Click(chromedp.ID("undo-confirm")))
	b.wait("the second undo's notice", `document.getElementById('notice').innerText.startsWith('Undid rewind')`)
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Errorf("after the second Undo:\n%s", d)
	}

	// Narrow window: still usable (screenshot only).
	if b.shots != "" {
		b.do("narrow", chromedp.EmulateViewport(420, 900))
		b.do("checkpoint #2", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/s/A/c/%s'`, p.a2.ID)))
		b.wait("the conversation of #2", `document.querySelectorAll('#conversation .msg').length === 3`)
		b.shot("narrow-checkpoint")
	}

	if v := eval[[]string](b, `window.__csp`); len(v) > 0 || eval[bool](b, `window.__xss !== undefined`) {
		t.Errorf("Content-Security-Policy violations: %q (window.__xss %v)", v, eval[bool](b, `window.__xss !== undefined`))
	}
	b.mu.Lock()
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %s", strings.Join(b.exceptions, "\n"))
	}
	b.mu.Unlock()

	// Refused: no token, a foreign Host, a cross-origin POST.
	client := &http.Client{Timeout: 5 * time.Second}
	status := func(req *http.Request) int {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/sessions", nil)
	if s := status(req); s != http.StatusUnauthorized {
		t.Errorf("no token: %d", s)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/?token="+srv.Token(), nil)
	req.Host = "attacker.example:" + strings.TrimPrefix(base, "http://127.0.0.1:")
	if s := status(req); s != http.StatusForbidden {
		t.Errorf("foreign Host: %d", s)
	}
	body := fmt.Sprintf(`{"session":"A","target":%q}`, p.a1.ID)
	req, _ = http.NewRequest(http.MethodPost, base+"/api/rewind", strings.NewReader(body))
	req.Header.Set("X-Snap-Token", srv.Token())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://attacker.example")
	if s := status(req); s != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", s)
	}
	if d := snaptest.Diff(before, p.disk(t)); d != "" {
		t.Errorf("a refused request changed the tree:\n%s", d)
	}
	t.Logf("browser test: %v", time.Since(start).Round(time.Millisecond))
}

// startBrowser serves repo as `snap ui` does (session shown first: session)
// and starts a headless Chromium tab on it; it returns the tab, the
// server's base URL and the server. Both stop when the test ends; the
// tab's steps must all be done within a minute (within timeout, if given).
func startBrowser(t *testing.T, repo *snap.Repo, session string, timeout ...time.Duration) (*browser, string, *ui.Server) {
	t.Helper()
	if os.Getenv("SNAP_UI_NO_BROWSER") == "1" {
		t.Skip("SNAP_UI_NO_BROWSER=1: the browser test is skipped")
	}
	exe := chromium()
	if exe == "" {
		t.Fatal("chromium is not installed: `make deps` installs it (apt-get install chromium); SNAP_UI_NO_BROWSER=1 skips this test")
	}
	srv := ui.New(repo, ui.Options{Session: session, Version: "test", Poll: 100 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ui.Serve(sctx, l, srv.Handler(addr)) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + addr

	b := &browser{t: t, shots: os.Getenv("SNAP_UI_SCREENSHOTS")}
	if b.shots != "" {
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	profile := t.TempDir()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		// A headless tab is never in front: without these, its timers and
		// animation frames may be throttled (TestBrowserPerf saw a frame
		// come 50 s late).
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	tctx, cancelTab := chromedp.NewContext(actx)
	limit := 60 * time.Second
	if len(timeout) > 0 {
		limit = timeout[0]
	}
	ctx, cancelTimeout := context.WithTimeout(tctx, limit)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() }) // before the profile is removed
	b.ctx = ctx
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			b.mu.Lock()
			b.exceptions = append(b.exceptions, msg)
			b.mu.Unlock()
		}
	}()

	// Any Content-Security-Policy violation is recorded for the end.
	b.do("watch for CSP violations", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__csp = [];
			document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber));`})
		return err
	}))
	return b, base, srv
}

// checkContrast fails the test for every text of sel (lowContrast) that is
// too faint to read.
func (b *browser) checkContrast(what, sel string) {
	b.t.Helper()
	if low := b.lowContrast(sel); len(low) > 0 {
		b.t.Errorf("%s: text below the WCAG contrast minimum:\n%s", what, strings.Join(low, "\n"))
	}
}

// lowContrast lists the texts in the element sel matches (the whole page:
// "body") whose colour has less than 4.5:1 contrast (3:1 for large text)
// against the background they are drawn on, as WCAG 2 computes it (the
// background: the nearest opaque one of the element and its ancestors,
// translucent ones blended over it). Disabled controls are exempt.
func (b *browser) lowContrast(sel string) []string {
	b.t.Helper()
	return eval[[]string](b, fmt.Sprintf(`((root) => {
		const parse = (c) => {
			const m = /rgba?\(([^)]+)\)/.exec(c);
			if (!m) return null;
			const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
			return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
		};
		const blend = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
		const lum = (c) => {
			const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
			return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
		};
		const background = (e) => {
			const layers = [];
			for (let n = e; n; n = n.parentElement) {
				const c = parse(getComputedStyle(n).backgroundColor);
				if (c && c[3] > 0) { layers.push(c); if (c[3] === 1) break; }
			}
			let bg = [255, 255, 255, 1];
			for (let i = layers.length - 1; i >= 0; i--) bg = blend(layers[i], bg);
			return bg;
		};
		const out = [], seen = new Set();
		const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
		for (let t; (t = walk.nextNode());) {
			const e = t.parentElement;
			if (!t.textContent.trim() || seen.has(e)) continue;
			seen.add(e);
			if (!e.getClientRects().length || e.closest(':disabled') || getComputedStyle(e).visibility === 'hidden') continue;
			const st = getComputedStyle(e);
			const bg = background(e), fg = blend(parse(st.color), bg);
			const l1 = lum(fg), l2 = lum(bg);
			const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
			const size = parseFloat(st.fontSize), large = size >= 24 || (size >= 18.66 && +st.fontWeight >= 700);
			if (ratio < (large ? 3 : 4.5)) out.push(t.textContent.trim().slice(0, 40) + ' (' + e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + '): ' + st.color + ' on rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ') ' + ratio.toFixed(2) + ':1');
		}
		return out;
	})(document.querySelector(%q))`, sel))
}
