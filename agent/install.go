package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HookSpec is one hook an installer adds: the event, and the matcher of
// tool events ("" for none).
type HookSpec struct {
	Event   string
	Matcher string
}

// InstallResult says what an install or uninstall changed.
type InstallResult struct {
	Path    string   `json:"path"`
	Changed bool     `json:"changed"`
	Events  []string `json:"events"` // events added (install) or removed (uninstall)
	Backup  string   `json:"backup,omitempty"`
}

// IsOurs reports whether a hook command is snap's for adapter name:
// exactly "PROGRAM hook NAME" where PROGRAM (possibly single-quoted, as
// QuoteCommand writes it) is a file named snap. Another tool's
// "npx x hook NAME", or a snap command the user extended, is not.
func IsOurs(command, name string) bool {
	prog, rest, ok := cutProgram(strings.TrimSpace(command))
	return ok && filepath.Base(prog) == "snap" && rest == "hook "+name
}

// cutProgram splits a command into its first word (unquoted when it is
// single-quoted) and the rest.
func cutProgram(cmd string) (prog, rest string, ok bool) {
	if strings.HasPrefix(cmd, "'") {
		var b strings.Builder
		i := 1
		for i < len(cmd) {
			if cmd[i] != '\'' {
				b.WriteByte(cmd[i])
				i++
				continue
			}
			if strings.HasPrefix(cmd[i:], `'\''`) { // an escaped quote inside
				b.WriteByte('\'')
				i += 4
				continue
			}
			return b.String(), strings.TrimSpace(cmd[i+1:]), i+1 == len(cmd) || cmd[i+1] == ' '
		}
		return "", "", false
	}
	prog, rest, _ = strings.Cut(cmd, " ")
	return prog, strings.TrimSpace(rest), prog != ""
}

// QuoteCommand is the shell form of a program path: as it is when it
// holds only characters the shell leaves alone, else single-quoted.
func QuoteCommand(path string) string {
	safe := path != ""
	for _, c := range path {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:@%", c)) {
			safe = false
		}
	}
	if safe {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}

// InstallHooks merges hooks running command into the settings file at path
// (the {"hooks": {EVENT: [{"matcher", "hooks": [{"type": "command",
// "command"}]}]}} layout Claude Code and Gemini CLI share), or with
// uninstall removes exactly the hooks IsOurs(name) finds. Every other key
// and hook is kept. Installing twice changes nothing. The file is replaced
// atomically (temporary file, fsync, rename), after its previous content
// is copied to path + ".snap-backup". A file that is not a JSON object is
// refused, never overwritten.
func InstallHooks(path, name, command string, specs []HookSpec, uninstall bool) (*InstallResult, error) {
	res := &InstallResult{Path: path, Events: []string{}}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	settings := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		d := json.NewDecoder(bytes.NewReader(old))
		d.UseNumber()
		if err := d.Decode(&settings); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object (%v): fix or move it first; nothing was changed", path, err)
		}
		if _, err := d.Token(); err != io.EOF {
			return nil, fmt.Errorf("%s holds more than one JSON value: fix or move it first (everything after the first would be lost); nothing was changed", path)
		}
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && hooks == nil {
		return nil, fmt.Errorf("%s: \"hooks\" is not an object: nothing was changed", path)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, s := range specs {
		if v, ok := hooks[s.Event]; ok && v != nil {
			if _, isList := v.([]any); !isList {
				return nil, fmt.Errorf("%s: \"hooks\".%q is not a list: nothing was changed", path, s.Event)
			}
		}
	}
	for _, s := range specs {
		entries, _ := hooks[s.Event].([]any)
		if uninstall {
			kept, removed := removeOurs(entries, name)
			if removed {
				res.Events = append(res.Events, s.Event)
				if len(kept) == 0 {
					delete(hooks, s.Event)
				} else {
					hooks[s.Event] = kept
				}
			}
			continue
		}
		if hasOurs(entries, name) {
			// Ours already; a stale program path (snap moved) is updated.
			if updateOurs(entries, name, command) {
				res.Events = append(res.Events, s.Event)
			}
			continue
		}
		entry := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}}
		if s.Matcher != "" {
			entry["matcher"] = s.Matcher
		}
		hooks[s.Event] = append(entries, entry)
		res.Events = append(res.Events, s.Event)
	}
	if len(res.Events) == 0 {
		return res, nil
	}
	if len(hooks) == 0 {
		delete(settings, "hooks")
	} else {
		settings["hooks"] = hooks
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // other hooks' "a && b" stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	// A settings file that is a symlink (kept in a dotfiles repository)
	// is written where it points, so the link stays.
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if old != nil {
		res.Backup = path + ".snap-backup"
		if err := writeAtomic(res.Backup, old); err != nil {
			return nil, err
		}
	}
	if err := writeAtomic(path, data); err != nil {
		return nil, err
	}
	res.Changed = true
	return res, nil
}

// Installed lists the events of specs whose hooks in the settings file at
// path include snap's (none when the file does not exist).
func Installed(path, name string, specs []HookSpec) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var settings map[string]any
	if err := json.Unmarshal(data, &settings); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %v", path, err)
	}
	hooks, _ := settings["hooks"].(map[string]any)
	out := []string{}
	for _, s := range specs {
		if entries, _ := hooks[s.Event].([]any); hasOurs(entries, name) {
			out = append(out, s.Event)
		}
	}
	return out, nil
}

func hasOurs(entries []any, name string) bool {
	for _, e := range entries {
		m, _ := e.(map[string]any)
		hs, _ := m["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); IsOurs(c, name) {
				return true
			}
		}
	}
	return false
}

// updateOurs sets the command of snap's hooks in entries to command when
// it differs (snap's path changed), reporting whether it did.
func updateOurs(entries []any, name, command string) bool {
	changed := false
	for _, e := range entries {
		m, _ := e.(map[string]any)
		hs, _ := m["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); IsOurs(c, name) && c != command {
				hm["command"] = command
				changed = true
			}
		}
	}
	return changed
}

// removeOurs drops snap's hooks from entries, and entries left with none.
func removeOurs(entries []any, name string) ([]any, bool) {
	var out []any
	removed := false
	for _, e := range entries {
		m, ok := e.(map[string]any)
		hs, _ := m["hooks"].([]any)
		if !ok || hs == nil {
			out = append(out, e)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(hs), func(h any) bool {
			hm, _ := h.(map[string]any)
			c, _ := hm["command"].(string)
			return IsOurs(c, name)
		})
		if len(kept) == len(hs) {
			out = append(out, e)
			continue
		}
		removed = true
		if len(kept) > 0 {
			m["hooks"] = kept
			out = append(out, m)
		}
	}
	return out, removed
}

// writeAtomic replaces path with data: a temporary file in its directory,
// fsync'd, renamed over it.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if fi, err := os.Stat(path); err == nil {
		f.Chmod(fi.Mode().Perm())
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
