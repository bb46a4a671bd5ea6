package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// W8 big transcript: a Claude Code-shaped transcript of W8Size bytes,
// checkpointed, grown by one message and checkpointed again, then grown by
// one more message in the live file. snap diff of the two checkpoints and
// of the head against the live file cost what differs (design §3: the
// versions share their leading chunks; only the tail is parsed), measured
// against `snap conversation --limit 2`, which streams the whole document
// once: time (median of -runs, alternating) and peak RSS (the largest of
// the runs, read as W4 reads it). `conversation --compact`, which returns
// every message, is measured too, without a target.

const (
	rowConvDiff       = "`diff '#1' '#2'`, transcript grown by one message"
	rowConvDiffLive   = "`diff` (head vs the live transcript, one more message)"
	rowConvDiffRSS    = "peak RSS, `diff '#1' '#2'`"
	rowConvLiveRSS    = "peak RSS, `diff` (live transcript)"
	rowConvCompact    = "`conversation --compact`"
	rowConvCompactRSS = "peak RSS, `conversation --compact`"
	convPageName      = "`conversation --limit 2` on the same document"
)

func runW8(b *bench) error {
	const W = "W8"
	root, err := b.dir("w8")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	dir := filepath.Join(root, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		return err
	}
	conv := filepath.Join(root, "claude", "session.jsonl")
	b.logf("W8: writing a %s transcript", formatBytes(float64(b.cfg.W8Size)))
	if err := writeTranscript(conv, b.cfg.W8Size); err != nil {
		return err
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: dir}
	if err := s.init(); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("--conversation", conv, "-m", "m1"); err != nil {
		return err
	}
	grow := func(text string) error {
		f, err := os.OpenFile(conv, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, `{"type":"user","uuid":"%s","message":{"role":"user","content":"%s"}}`+"\n", text, text)
		return f.Close()
	}
	if err := grow("one more"); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("-m", "m2"); err != nil {
		return err
	}
	if err := grow("and another"); err != nil {
		return err
	}
	type sample struct {
		d   []time.Duration
		rss int64
	}
	measureRSS := func(x *sample, args ...string) error {
		settle()
		out, d, rss, err := runRSS(dir, b.cfg.Snap, args...)
		if err != nil {
			return fmt.Errorf("snap %s: %w: %s", strings.Join(args, " "), err, out)
		}
		x.d, x.rss = append(x.d, d), max(x.rss, rss)
		return nil
	}
	var diff, live, page, compact sample
	for i := 0; i < b.cfg.Runs; i++ {
		if err := alternate(i,
			func() error { return measureRSS(&diff, "diff", "#1", "#2") },
			func() error { return measureRSS(&live, "diff") },
			func() error { return measureRSS(&page, "conversation", "--limit", "2") },
			func() error { return measureRSS(&compact, "conversation", "--compact") }); err != nil {
			return err
		}
	}
	rep := b.rep
	rep.timeRow(W, rowConvDiff, median(diff.d), convPageName, median(page.d), 2, "")
	rep.timeRow(W, rowConvDiffLive, median(live.d), convPageName, median(page.d), 2, "")
	rep.add(row{Workload: W, Name: rowConvDiffRSS, Unit: unitBytes, Snap: float64(diff.rss), TargetAbs: 64 << 20})
	rep.add(row{Workload: W, Name: rowConvLiveRSS, Unit: unitBytes, Snap: float64(live.rss), TargetAbs: 64 << 20})
	rep.bytesRow(W, rowConvDiffRSS, diff.rss, convPageName, page.rss, 0, "")
	rep.timeRow(W, rowConvCompact, median(compact.d), convPageName, median(page.d), 0, "")
	rep.bytesRow(W, rowConvCompactRSS, compact.rss, convPageName, page.rss, 0, "")
	rep.note("W8: a %s Claude Code-shaped transcript (assistant messages over two records, tool results with a large toolUseResult) outside the project, checkpointed, grown by one message and checkpointed, then grown by one more in the live file; median of %d run(s), peak RSS the largest.",
		formatBytes(float64(b.cfg.W8Size)), b.cfg.Runs)
	return nil
}

// writeTranscript writes a Claude Code-shaped transcript of about size
// bytes to path: a prompt, then steps of an assistant message over two
// records (text, tool_use), a tool result whose toolUseResult repeats the
// file read, and an assistant reply.
func writeTranscript(path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	cw := &countWriter{w: w}
	fmt.Fprintf(cw, `{"type":"user","uuid":"u0","message":{"role":"user","content":"Refactor the parser."}}`+"\n")
	body := strings.Repeat(`package main\nfunc f() { return }\n`, 60)
	for i := 1; cw.n < size; i++ {
		id := fmt.Sprintf("msg_%08d", i)
		fmt.Fprintf(cw, `{"type":"assistant","uuid":"a%d","parentUuid":"u%d","message":{"id":"%s","role":"assistant","content":[{"type":"text","text":"Step %d: reading src/f%d.go to see what the parser does there."}]}}`+"\n", i, i-1, id, i, i)
		fmt.Fprintf(cw, `{"type":"assistant","uuid":"b%d","parentUuid":"a%d","message":{"id":"%s","role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/src/f%d.go"}}]}}`+"\n", i, i, id, i, i)
		fmt.Fprintf(cw, `{"type":"user","uuid":"r%d","parentUuid":"b%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]},"toolUseResult":{"file":{"filePath":"/src/f%d.go","content":"%s"}}}`+"\n", i, i, i, body, i, body)
		fmt.Fprintf(cw, `{"type":"assistant","uuid":"u%d","parentUuid":"r%d","message":{"id":"msg_r%08d","role":"assistant","content":[{"type":"text","text":"f%d.go is fine as it is."}]}}`+"\n", i, i, i, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
