package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
// "command"}]}]}} layout Claude Code, Gemini CLI and Codex share), or with
// uninstall removes exactly the hooks IsOurs(name) finds. The file's text
// is edited in place (settings.go): only the hooks snap owns change, and
// every other byte (key order, layout, escapes) stays as it was, so an
// uninstall after an install that nothing else touched gives the original
// bytes back, and one that leaves a file snap made empty removes it.
// Installing twice changes nothing. The file is replaced atomically
// (temporary file, fsync, rename); before the first change to an existing
// file its content is copied to path + ".snap-backup", which is never
// overwritten afterwards. A file that is not one JSON object is refused,
// never overwritten.
func InstallHooks(path, name, command string, specs []HookSpec, uninstall bool) (*InstallResult, error) {
	res := &InstallResult{Path: path, Events: []string{}}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := checkSettings(path, old, specs); err != nil {
		return nil, err
	}
	text := old
	if len(bytes.TrimSpace(old)) == 0 {
		text = nil
	}
	var data []byte
	if uninstall {
		data, res.Events, err = removeHooks(text, name, specs)
	} else {
		data, res.Events, err = addHooks(text, name, command, specs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v: nothing was changed", path, err)
	}
	if len(res.Events) == 0 {
		return res, nil
	}
	// A settings file that is a symlink (kept in a dotfiles repository)
	// is written where it points, so the link stays.
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	backup := path + ".snap-backup"
	_, berr := os.Lstat(backup)
	if uninstall && errors.Is(berr, os.ErrNotExist) && emptyObject(data) {
		// No backup: snap made the file, and it holds nothing else now.
		if err := os.Remove(path); err != nil {
			return nil, err
		}
		res.Changed = true
		return res, nil
	}
	if old != nil {
		if err := writeOnce(backup, old); err != nil {
			return nil, err
		}
		res.Backup = backup
	}
	if err := writeAtomic(path, data); err != nil {
		return nil, err
	}
	res.Changed = true
	return res, nil
}

// checkSettings refuses a settings text snap cannot edit without losing
// something: not one JSON object, "hooks" not an object, an event of specs
// that is not a list. Empty (or no) text is fine.
func checkSettings(path string, text []byte, specs []HookSpec) error {
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) == 0 {
		return nil
	}
	var settings map[string]any
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&settings); err != nil {
		return fmt.Errorf("%s is not a JSON object (%v): fix or move it first; nothing was changed", path, err)
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("%s is not a JSON object: fix or move it first; nothing was changed", path)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%s holds more than one JSON value: fix or move it first (everything after the first would be lost); nothing was changed", path)
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && hooks == nil {
		return fmt.Errorf("%s: \"hooks\" is not an object: nothing was changed", path)
	}
	for _, s := range specs {
		if v, ok := hooks[s.Event]; ok && v != nil {
			if _, isList := v.([]any); !isList {
				return fmt.Errorf("%s: \"hooks\".%q is not a list: nothing was changed", path, s.Event)
			}
		}
	}
	return nil
}

// emptyObject reports whether text is a JSON object with no members.
func emptyObject(text []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(text, &m) == nil && m != nil && len(m) == 0
}

// writeOnce makes path hold data unless it exists already (a backup is
// made once and never overwritten): a temporary file, fsync'd, linked into
// place.
func writeOnce(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
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
