package ui_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	snap "github.com/snapcore-dev/snap"
)

// TestBrowserPerf measures, in headless Chromium, how long the timeline
// and a checkpoint's page take to paint for a session whose tree has
// 20,000 files ($SNAP_UI_PERF_FILES) and whose checkpoints add, then
// change, all of them. It only runs with SNAP_UI_PERF=1 (building the
// project takes a while) and writes what it measured to the test log;
// ui/PERF.md holds the numbers:
//
//	SNAP_UI_PERF=1 go test -run TestBrowserPerf -v ./ui/
//
// SNAP_UI_PERF_PAGE=compare measures only the pages whose name holds it.
// For each page, the median of 5 loads (a new navigation each, the URL
// with the page's hash): first-contentful-paint (the browser's paint
// timing: the page's frame, "Loading…"), the paint after the view's
// content is in the DOM (two animation frames after it appeared, as a
// MutationObserver saw it), and the API calls' durations and sizes.
func TestBrowserPerf(t *testing.T) {
	if os.Getenv("SNAP_UI_PERF") != "1" {
		t.Skip("SNAP_UI_PERF=1 runs it (builds a project of 20,000 files)")
	}
	n := 20000
	if v := os.Getenv("SNAP_UI_PERF_FILES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	r, _, err := snap.Init(snap.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	write := func(gen int) {
		for i := range n {
			dir := filepath.Join(root, "src", fmt.Sprintf("pkg%03d", i/100))
			if i%100 == 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			content := fmt.Sprintf("package pkg // file %d\n\nvar V = %d\n", i, gen)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%05d.go", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	write(1)
	c1 := checkpoint(t, r, snap.CheckpointOptions{Session: "P", Summary: fmt.Sprintf("add %d files", n)})
	write(2)
	c2 := checkpoint(t, r, snap.CheckpointOptions{Session: "P", Summary: fmt.Sprintf("change all %d files", n)})
	if len(c2.Files.Modified) != n {
		t.Fatalf("the second checkpoint changed %d files, want %d", len(c2.Files.Modified), n)
	}
	t.Logf("project of %d files, 2 checkpoints: %v", n, time.Since(start).Round(time.Millisecond))

	b, base, srv := startBrowser(t, r, "P", 10*time.Minute)
	// Before any page's script: watch for the content to appear.
	b.do("watch for the content", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: perfProbe})
		return err
	}))
	type measure struct {
		FCP, Content, RAF float64
		API               []string
	}
	pages := []struct{ name, hash, ready string }{
		{"timeline", "#/s/P", "#timeline tbody tr"},
		{fmt.Sprintf("checkpoint #2 (%d files modified)", n), "#/s/P/c/" + c2.ID.String(), "#files li"},
		{fmt.Sprintf("checkpoint #1 (%d files added)", n), "#/s/P/c/" + c1.ID.String(), "#files li"},
		{fmt.Sprintf("compare #1 with #2 (%d files)", n), "#/s/P/compare/" + c1.ID.String() + "/" + c2.ID.String(), "#main .filehead"},
	}
	for _, pg := range pages {
		if only := os.Getenv("SNAP_UI_PERF_PAGE"); only != "" && !strings.Contains(pg.name, only) {
			continue
		}
		var runs []measure
		began := time.Now()
		for i := range 5 {
			// (a URL of its own each time: the same one would only move to
			// its hash, not load the page again)
			b.do("open "+pg.name, chromedp.Navigate(fmt.Sprintf("%s/?token=%s&run=%d&probe=%s%s", base, srv.Token(), i, url.QueryEscape(pg.ready), pg.hash)))
			b.wait(pg.name+" painted", `window.__perf && window.__perf.content > 0 && window.__perf.raf > 0`, 2*time.Minute)
			runs = append(runs, eval[measure](b, `(() => {
				const p = performance.getEntriesByName('first-contentful-paint')[0];
				const api = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/') && !e.name.includes('/api/events'))
					.map((e) => e.name.replace(/^.*\/api\//, '').replace(/\?.*/, '') + ' ' + Math.round(e.duration) + ' ms ' + Math.round(e.encodedBodySize / 1024) + ' KiB');
				api.push('page request sent at ' + Math.round(performance.getEntriesByType('navigation')[0].requestStart) + ' ms');
				return {FCP: p ? p.startTime : -1, Content: window.__perf.content, RAF: window.__perf.raf, API: api};
			})()`))
		}
		contents := func(ms []measure) []int {
			var out []int
			for _, m := range ms {
				out = append(out, int(m.Content+0.5))
			}
			return out
		}
		for i, m := range runs {
			if m.Content > 5000 {
				t.Logf("%s: load %d took %.0f ms: API %v", pg.name, i+1, m.Content, m.API)
			}
		}
		median := func(f func(measure) float64) float64 {
			v := make([]float64, len(runs))
			for i, m := range runs {
				v[i] = f(m)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		t.Logf("%s: first-contentful-paint %.0f ms, content painted %.0f ms, two frames after it was inserted %.0f ms (median of %d; content painted of each load %v); API of the last load: %v; DOM elements %d; %v for the %d loads",
			pg.name, median(func(m measure) float64 { return m.FCP }), median(func(m measure) float64 { return m.Content }), median(func(m measure) float64 { return m.RAF }), len(runs),
			contents(runs), runs[len(runs)-1].API, eval[int](b, `document.getElementsByTagName('*').length`), time.Since(began).Round(time.Millisecond), len(runs))
	}
}

// perfProbe records when the view's content is first painted: as soon as
// the element the URL's probe parameter selects is in the page (a
// MutationObserver), the view's heading, inserted with it, is marked for
// the Element Timing API, whose entry gives the time of the frame that
// painted it (content); and the time two animation frames after it was
// inserted (raf), a cross-check.
const perfProbe = `(() => {
	const sel = new URLSearchParams(location.search).get('probe');
	if (!sel) return;
	window.__perf = {content: 0, raf: 0};
	new PerformanceObserver((l) => {
		for (const e of l.getEntries()) if (e.identifier === 'view' && !window.__perf.content) window.__perf.content = e.renderTime || e.loadTime;
	}).observe({type: 'element', buffered: true});
	const mo = new MutationObserver(() => {
		if (!document.querySelector(sel)) return;
		mo.disconnect();
		const h = document.querySelector('#main h1');
		if (h) h.setAttribute('elementtiming', 'view');
		requestAnimationFrame(() => requestAnimationFrame(() => { window.__perf.raf = performance.now(); }));
	});
	mo.observe(document, {childList: true, subtree: true});
})();`
