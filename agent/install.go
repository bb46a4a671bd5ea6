package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// IsOurs reports whether a hook command is snap's for adapter name: it
// ends with "hook <name>".
func IsOurs(command, name string) bool {
	return strings.HasSuffix(strings.TrimSpace(command), " hook "+name)
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
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && hooks == nil {
		return nil, fmt.Errorf("%s: \"hooks\" is not an object: nothing was changed", path)
	}
	if hooks == nil {
		hooks = map[string]any{}
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
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
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
