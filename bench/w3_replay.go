package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// W3 real agent session: the Edit/Write tool results of the Claude Code
// transcripts in -realdata are replayed inside a W1-sized tree. Each transcript
// is one snap session; each step applies one tool result to its file and
// checkpoints, with the transcript up to that record as the conversation.

// replayStep is one Edit, MultiEdit or Write tool result.
type replayStep struct {
	session string // transcript file name, also the snap session
	uuid    string
	path    string // project-relative
	before  []byte // the file before the tool ran (originalFile); nil: absent
	after   []byte
	prefix  []byte // the transcript up to and including this record
}

type toolUseResult struct {
	FilePath     string  `json:"filePath"`
	OldString    *string `json:"oldString"`
	NewString    *string `json:"newString"`
	OriginalFile *string `json:"originalFile"`
	ReplaceAll   bool    `json:"replaceAll"`
	Type         string  `json:"type"`
	Content      *string `json:"content"`
	Edits        []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
}

// loadReplay reads the *.jsonl transcripts of dir, in name order.
func loadReplay(dir string) (steps []replayStep, skipped int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, 0, err
	}
	sort.Strings(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		s, sk, err := parseReplay(filepath.Base(f), raw)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", f, err)
		}
		steps, skipped = append(steps, s...), skipped+sk
	}
	return steps, skipped, nil
}

// parseReplay decodes the records of one transcript (several JSON values may
// share a line) and returns its file-changing tool results.
func parseReplay(session string, raw []byte) (steps []replayStep, skipped int, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var rec struct {
			UUID          string          `json:"uuid"`
			Cwd           string          `json:"cwd"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if err := dec.Decode(&rec); err == io.EOF {
			return steps, skipped, nil
		} else if err != nil {
			return nil, 0, err
		}
		end := int(dec.InputOffset())
		if end < len(raw) && raw[end] == '\n' {
			end++
		}
		var t toolUseResult
		if len(rec.ToolUseResult) == 0 || json.Unmarshal(rec.ToolUseResult, &t) != nil || t.FilePath == "" {
			continue // not a file tool result (or a plain-text error result)
		}
		st := replayStep{session: session, uuid: rec.UUID, prefix: raw[:end]}
		if rec.Cwd == "" || !strings.HasPrefix(t.FilePath, rec.Cwd+"/") {
			skipped++
			continue
		}
		st.path = strings.TrimPrefix(t.FilePath, rec.Cwd+"/")
		if t.OriginalFile != nil {
			st.before = []byte(*t.OriginalFile)
		}
		switch {
		case t.OldString != nil && t.NewString != nil && t.OriginalFile != nil: // Edit
			after, ok := replace(*t.OriginalFile, *t.OldString, *t.NewString, t.ReplaceAll)
			if !ok {
				skipped++
				continue
			}
			st.after = []byte(after)
		case len(t.Edits) > 0 && t.OriginalFile != nil: // MultiEdit
			after, ok := *t.OriginalFile, true
			for _, e := range t.Edits {
				if after, ok = replace(after, e.OldString, e.NewString, e.ReplaceAll); !ok {
					break
				}
			}
			if !ok {
				skipped++
				continue
			}
			st.after = []byte(after)
		case (t.Type == "create" || t.Type == "update") && t.Content != nil: // Write
			st.after = []byte(*t.Content)
		default:
			continue // Read and other tools that name a file
		}
		steps = append(steps, st)
	}
}

func replace(s, old, new string, all bool) (string, bool) {
	if old == "" || !strings.Contains(s, old) {
		return s, false
	}
	if all {
		return strings.ReplaceAll(s, old, new), true
	}
	return strings.Replace(s, old, new, 1), true
}

// replayState is what a step left: every replayed file (nil: absent) and the
// session's transcript.
type replayState struct {
	files      map[string][]byte
	session    string
	transcript []byte
}

func runW3(b *bench) error {
	const W = "W3"
	rows := []string{"per-step checkpoint p50", "per-step checkpoint max", "store growth over the replay", "rewind to a random step"}
	steps, skipped, err := loadReplay(b.cfg.Realdata)
	if err == nil && len(steps) == 0 {
		err = errors.New("no Claude Code *.jsonl transcripts with Edit/Write results")
	}
	if err != nil {
		why := fmt.Sprintf("real transcripts unavailable in %s (%v)", b.cfg.Realdata, err)
		for _, r := range rows {
			b.rep.skip(W, r, "", why)
		}
		b.rep.note("W3 skipped: %s. It replays the Claude Code transcripts of ../shared/realdata (or -realdata DIR).", why)
		return nil
	}
	if b.cfg.W3Steps > 0 && len(steps) > b.cfg.W3Steps {
		steps = steps[:b.cfg.W3Steps]
	}
	if !b.hasGit {
		for _, r := range rows {
			b.rep.skip(W, r, "shadow git", "git not installed (apt-get install git)")
		}
		return nil
	}
	src, err := b.sources()
	if err != nil {
		return err
	}
	t := newTree(src, b.cfg.W1Files, b.cfg.Seed)
	root, err := b.dir("w3")
	if err != nil {
		return err
	}
	defer b.cleanup(root)
	snapDir := filepath.Join(root, "snap")
	gitWork, gitDir := filepath.Join(root, "git-work"), filepath.Join(root, "git-shadow.git")
	convDir := filepath.Join(root, "claude") // snap's transcripts, outside the project
	b.logf("W3: %d steps over a %d-file tree", len(steps), t.n)

	// The project before the session: the tree plus each replayed file as the
	// agent first saw it.
	files := map[string][]byte{}
	for _, st := range steps {
		if _, seen := files[st.path]; !seen {
			files[st.path] = st.before
		}
	}
	for _, d := range []string{snapDir, gitWork} {
		if err := t.write(d); err != nil {
			return err
		}
		if err := writeState(d, files); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(convDir, 0o755); err != nil {
		return err
	}
	s := &snapPeer{bin: b.cfg.Snap, dir: snapDir}
	if err := s.init(); err != nil {
		return err
	}
	if _, _, err := s.checkpoint("-m", "start"); err != nil {
		return err
	}
	g, err := newGitPeer(gitDir, gitWork, false)
	if err != nil {
		return err
	}
	if err := g.checkpoint("start"); err != nil {
		return err
	}
	snapStart, gitStart := s.storeBytes(), g.objectBytes()

	var snapLat, gitLat []time.Duration
	snapIDs, gitIDs := make([]string, len(steps)), make([]string, len(steps))
	states := make([]replayState, len(steps))
	drift := 0
	settle()
	for k, st := range steps {
		conv := filepath.Join(convDir, st.session)
		gitConv := filepath.Join(gitWork, ".agent", st.session)
		if cur := files[st.path]; st.before != nil && !bytes.Equal(cur, st.before) {
			drift++ // the file changed between tool calls (another session, the user)
		}
		files[st.path] = st.after
		for _, d := range []string{snapDir, gitWork} {
			if err := writeFile(filepath.Join(d, filepath.FromSlash(st.path)), st.after); err != nil {
				return err
			}
		}
		for _, f := range []string{conv, gitConv} {
			if err := writeFile(f, st.prefix); err != nil {
				return err
			}
		}
		states[k] = replayState{files: maps.Clone(files), session: st.session, transcript: st.prefix}
		err := alternate(k,
			func() error {
				res, d, err := s.checkpoint("-s", st.session, "-m", st.uuid, "--kind", "post-tool", "--conversation", conv)
				snapIDs[k] = res.ID
				snapLat = append(snapLat, d)
				return err
			},
			func() error {
				d, err := measure(func() error { return g.checkpoint(st.uuid) })
				if err != nil {
					return err
				}
				gitLat = append(gitLat, d)
				gitIDs[k], err = g.head()
				return err
			})
		if err != nil {
			return fmt.Errorf("step %d (%s %s): %w", k+1, st.session, st.path, err)
		}
	}
	snapGrowth, gitGrowth := s.storeBytes()-snapStart, g.objectBytes()-gitStart

	// Rewind to random steps, verified byte for byte on both sides.
	r := rng(b.cfg.Seed, streamW3)
	var snapRw, gitRw []time.Duration
	for run := 0; run < b.cfg.Runs; run++ {
		k := r.IntN(len(steps))
		want := states[k]
		err := alternate(run,
			func() error {
				settle()
				// --all: the whole tree as at step k, as git's reset --hard
				// (the default would keep what the other sessions wrote since).
				_, d, err := s.rewind(snapIDs[k], "-s", want.session, "--all")
				if err != nil {
					return err
				}
				snapRw = append(snapRw, d)
				return verifyReplay(snapDir, filepath.Join(convDir, want.session), want)
			},
			func() error {
				settle()
				d, err := measure(func() error { return g.reset(gitIDs[k]) })
				if err != nil {
					return err
				}
				gitRw = append(gitRw, d)
				return verifyReplay(gitWork, filepath.Join(gitWork, ".agent", want.session), want)
			})
		if err != nil {
			return fmt.Errorf("rewind to step %d: %w", k+1, err)
		}
	}

	peer := "shadow git `add -A` + `commit`"
	b.rep.timeRow(W, "per-step checkpoint p50", median(snapLat), peer, median(gitLat), 0, "")
	b.rep.timeRow(W, "per-step checkpoint max", percentile(snapLat, 100), peer, percentile(gitLat, 100), 0, "")
	b.rep.bytesRow(W, "store growth over the replay", snapGrowth, "shadow git objects, loose", gitGrowth, 0, "")
	b.rep.timeRow(W, "rewind to a random step", median(snapRw), "shadow git `reset --hard`", median(gitRw), 0, "byte-exact")
	sessions := map[string]bool{}
	for _, st := range steps {
		sessions[st.session] = true
	}
	b.rep.note("W3: replayed %d Edit/Write results from %d Claude Code transcript(s) in a %d-file tree; %d result(s) unusable, %d step(s) found their file changed since the previous tool call; %d rewind(s) to random steps verified byte-exact (files and transcript).",
		len(steps), len(sessions), t.n, skipped, drift, b.cfg.Runs)
	return nil
}

// writeState writes files (nil: absent) under dir.
func writeState(dir string, files map[string][]byte) error {
	for p, b := range files {
		if b == nil {
			continue
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(p)), b); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes b (nil: removes the file), creating directories.
func writeFile(name string, b []byte) error {
	if b == nil {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return replaceFile(name, b)
}

// verifyReplay checks that dir holds exactly the replayed files of want and
// that transcript holds want's transcript.
func verifyReplay(dir, transcript string, want replayState) error {
	for p, w := range want.files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case w == nil && err == nil:
			return fmt.Errorf("%s: %s exists after rewind, want absent", dir, p)
		case w == nil && os.IsNotExist(err):
		case err != nil:
			return err
		case !bytes.Equal(got, w):
			return fmt.Errorf("%s: %s differs after rewind (%d bytes, want %d)", dir, p, len(got), len(w))
		}
	}
	got, err := os.ReadFile(transcript)
	if err != nil {
		return fmt.Errorf("transcript after rewind: %w", err)
	}
	if !bytes.Equal(got, want.transcript) {
		return fmt.Errorf("%s differs after rewind (%d bytes, want %d)", transcript, len(got), len(want.transcript))
	}
	return nil
}
