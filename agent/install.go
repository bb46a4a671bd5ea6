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

	"golang.org/x/sys/unix"

	"github.com/snapcore-dev/snap"
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
	// Kept are the events where a hook of the user's own runs snap (one
	// snap did not add: see the package doc), left as it is: install adds
	// no second hook there, uninstall does not remove it.
	Kept   []string `json:"kept"`
	Backup string   `json:"backup,omitempty"`
}

// InstallOptions say what InstallHooks does.
type InstallOptions struct {
	Uninstall bool // remove snap's hooks instead of adding them
	// Force writes a settings file that is read-only to the user (no
	// write permission for its owner, or none for this process); its
	// mode is kept. A symlink is refused all the same.
	Force bool
}

// RunsSnapHook reports whether a hook command runs snap's hook for adapter
// name: exactly "PROGRAM hook NAME" where PROGRAM (possibly single-quoted,
// as QuoteCommand writes it) is a file named snap. Another tool's
// "npx x hook NAME", or a snap command the user extended, does not. Such
// a hook makes its event installed; whether snap added it (and may remove
// it) is ownEntry's question (see the package doc).
func RunsSnapHook(command, name string) bool {
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
// o.Uninstall removes them again. Snap owns only the entries it adds (see
// the package doc): a hook of the user's own that runs snap is never
// rewritten or removed, and its event counts as installed (InstallResult.
// Kept). The file's text is edited in place (settings.go): only the hooks
// snap owns change, and every other byte (key order, layout, escapes)
// stays as it was. An uninstall after an install that nothing else
// touched gives the original bytes back: when the file is exactly what an
// install made of its backup, the backup's bytes are written back (an
// empty file, "hooks": null); one that leaves a file snap made empty
// removes it. Installing twice changes nothing.
//
// The file is replaced atomically (temporary file, fsync, rename); before
// the first change to an existing file its content is copied to path +
// ".snap-backup", which is never overwritten afterwards. Refused, and
// never written: a file that is not one JSON object; a symlink (it would
// edit a file elsewhere and leave the backup there: the error says where
// it points), dangling or not; anything else that is not a regular file;
// and, unless o.Force, a file that is read-only to the user (no write
// permission for its owner, or none for this process). The last three
// wrap snap.ErrUsage.
func InstallHooks(path, name, command string, specs []HookSpec, o InstallOptions) (*InstallResult, error) {
	res := &InstallResult{Path: path, Events: []string{}, Kept: []string{}}
	old, fi, err := readSettings(path)
	if err != nil {
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
	if o.Uninstall {
		data, res.Events, res.Kept, err = removeHooks(text, name, command, specs)
	} else {
		data, res.Events, res.Kept, err = addHooks(text, name, command, specs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v: nothing was changed", path, err)
	}
	if len(res.Events) == 0 {
		return res, nil
	}
	if fi != nil && !o.Force {
		if err := checkWritable(path, fi); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	backup := path + ".snap-backup"
	before, hasBackup := readBackup(backup)
	if o.Uninstall && hasBackup && installedOver(before, old, name, command, specs) {
		// Exactly what the install made of the original: give back its
		// bytes (removing snap's entries from the text cannot tell an
		// empty file, "hooks": null or "hooks": {} from no hooks at all).
		data = before
	}
	if _, err := os.Lstat(backup); o.Uninstall && errors.Is(err, os.ErrNotExist) && emptyObject(data) {
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

// readSettings reads the settings file at path (nil and no info when there
// is none). A symlink, dangling or not, is refused, naming where it
// points; so is anything else that is not a regular file. The file is
// opened without following a symlink, so one swapped in after the check
// is not read through either.
func readSettings(path string) ([]byte, os.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, nil, symlinkError(path)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is not a regular file (%s): nothing was changed", snap.ErrUsage, path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, nil, symlinkError(path)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is not a regular file (%s): nothing was changed", snap.ErrUsage, path, fi.Mode().Type())
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, fi, nil
}

// symlinkError refuses the settings file at path, a symlink: it names
// where the link points (and whether that exists) and says what to do.
func symlinkError(path string) error {
	to, err := os.Readlink(path)
	if err != nil {
		return fmt.Errorf("%w: %s is a symbolic link: snap does not write through a link; nothing was changed", snap.ErrUsage, path)
	}
	where := to
	abs := to
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(path), to)
		where = fmt.Sprintf("%s (%s)", to, abs)
	}
	if _, err := os.Stat(path); err != nil {
		where += ", which does not exist"
	}
	return fmt.Errorf("%w: %s is a symbolic link to %s: snap does not write through a link (that would change a file outside %s and put its backup there); "+
		"edit %s yourself, or replace the link with a file and run this again; nothing was changed",
		snap.ErrUsage, path, where, filepath.Dir(path), abs)
}

// checkWritable refuses a settings file that is read-only to the user: no
// write permission for its owner (the mode a user sets with chmod a-w;
// even root is refused), or none for this process (access(2)). Snap
// replaces the file by a rename in its directory, which the file's mode
// alone would not stop.
func checkWritable(path string, fi os.FileInfo) error {
	if fi.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%w: %s is read-only (mode %04o): make it writable first (chmod u+w), or run again with --force (the mode is kept); nothing was changed",
			snap.ErrUsage, path, fi.Mode().Perm())
	}
	if err := unix.Access(path, unix.W_OK); err != nil {
		return fmt.Errorf("%w: %s is not writable for you (%v): run as its owner, or again with --force; nothing was changed", snap.ErrUsage, path, err)
	}
	return nil
}

// readBackup is the content of the backup file at path when it is a
// regular file (a symlink planted there is not read).
func readBackup(path string) ([]byte, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxBackup {
		return nil, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	if data == nil {
		data = []byte{}
	}
	return data, true
}

// maxBackup bounds the backup read to compare with the settings file.
const maxBackup = 16 << 20

// installedOver reports whether text is exactly what an install running
// command makes of before (and that install changed something).
func installedOver(before, text []byte, name, command string, specs []HookSpec) bool {
	if checkSettings("", before, specs) != nil {
		return false
	}
	b := before
	if len(bytes.TrimSpace(b)) == 0 {
		b = nil
	}
	made, added, _, err := addHooks(b, name, command, specs)
	return err == nil && len(added) > 0 && bytes.Equal(made, text)
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
// path include one that runs snap (RunsSnapHook: snap's own entry or a
// hook of the user's; none when the file does not exist).
func Installed(path, name string, specs []HookSpec) ([]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
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
			if c, _ := hm["command"].(string); RunsSnapHook(c, name) {
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
