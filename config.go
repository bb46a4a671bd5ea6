package snap

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/snapcore-dev/snap/fsys"
	"github.com/snapcore-dev/snap/gc"
	"github.com/snapcore-dev/snap/tasks"
)

// setting is one key of `snap config`.
type setting struct {
	doc   string
	get   func(c *Config) string
	set   func(c *Config, v string) error
	reset func(c *Config)
}

// settings are the store settings `snap config KEY [VALUE]` reads and
// writes. An empty value means the default.
var settings = map[string]setting{
	"capture.max-file-size": {
		doc: "files larger than this are skipped and reported (bytes; K, M, G, T suffixes; default 1G)",
		get: func(c *Config) string {
			if c.MaxFileSize == 0 {
				return ""
			}
			return strconv.FormatInt(c.MaxFileSize, 10)
		},
		set: func(c *Config, v string) error {
			n, err := ParseSize(v)
			if err == nil && n == 0 {
				err = fmt.Errorf("must be positive")
			}
			c.MaxFileSize = n
			return err
		},
		reset: func(c *Config) { c.MaxFileSize = 0 },
	},
}

func durationSetting(doc string, field func(c *Config) *string) setting {
	return setting{
		doc: doc,
		get: func(c *Config) string { return *field(c) },
		set: func(c *Config, v string) error {
			_, err := ParseDuration(v)
			*field(c) = v
			return err
		},
		reset: func(c *Config) { *field(c) = "" },
	}
}

func init() {
	settings["retention.keep-last"] = setting{
		doc: "gc keeps at least the last N checkpoints of every session (default 50)",
		get: func(c *Config) string {
			if c.KeepLast == nil {
				return ""
			}
			return strconv.Itoa(*c.KeepLast)
		},
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("want a count >= 0, got %q", v)
			}
			c.KeepLast = &n
			return nil
		},
		reset: func(c *Config) { c.KeepLast = nil },
	}
	settings["retention.keep-within"] = durationSetting("gc keeps every checkpoint younger than this (default 7d)",
		func(c *Config) *string { return &c.KeepWithin })
	settings["retention.archived-expire"] = durationSetting("gc removes sessions archived longer ago than this (default 7d)",
		func(c *Config) *string { return &c.ArchivedExpire })
	settings["tasks.max-depth"] = setting{
		doc: fmt.Sprintf("how deep tasks nest; a deeper 'task begin' is refused (default %d)", tasks.DefaultMaxDepth),
		get: func(c *Config) string {
			if c.TasksMaxDepth == 0 {
				return ""
			}
			return strconv.Itoa(c.TasksMaxDepth)
		},
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				return fmt.Errorf("want a depth from 1 to 100, got %q", v)
			}
			c.TasksMaxDepth = n
			return nil
		},
		reset: func(c *Config) { c.TasksMaxDepth = 0 },
	}
	settings["git.author"] = setting{
		doc: "author and committer of the commits the git bridge writes, as \"Name <email>\" (default \"snap <snap@localhost>\")",
		get: func(c *Config) string { return c.GitAuthor },
		set: func(c *Config, v string) error {
			if _, _, err := ParseAuthor(v); err != nil {
				return err
			}
			c.GitAuthor = v
			return nil
		},
		reset: func(c *Config) { c.GitAuthor = "" },
	}
	settings["git.commit-on"] = setting{
		doc: "make a commit on the current git branch at every task-commit or edit-commit, as a task or edit commit's git-commit option does, or never (default never)",
		get: func(c *Config) string { return c.GitCommitOn },
		set: func(c *Config, v string) error {
			switch v {
			case "task-commit", "edit-commit", "never":
				c.GitCommitOn = v
				return nil
			}
			return fmt.Errorf("want task-commit, edit-commit or never, got %q", v)
		},
		reset: func(c *Config) { c.GitCommitOn = "" },
	}
	settings["watch.auto"] = setting{
		doc: "start the project's file-system monitor (snap watch) when a checkpoint or hook finds none running (true or false; default false)",
		get: func(c *Config) string {
			if !c.WatchAuto {
				return ""
			}
			return "true"
		},
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false, got %q", v)
			}
			c.WatchAuto = b
			return nil
		},
		reset: func(c *Config) { c.WatchAuto = false },
	}
	settings["gc.grace"] = durationSetting("gc never removes unreferenced data younger than this (default 1h)",
		func(c *Config) *string { return &c.GCGrace })
}

// RetentionPolicy is the store's retention policy: the configured values,
// else gc.DefaultPolicy's.
func (r *Repo) RetentionPolicy() gc.Policy {
	p := gc.DefaultPolicy
	if r.config.KeepLast != nil {
		p.KeepLast = *r.config.KeepLast
	}
	if d, err := ParseDuration(r.config.KeepWithin); err == nil && r.config.KeepWithin != "" {
		p.KeepWithin = d
	}
	if d, err := ParseDuration(r.config.ArchivedExpire); err == nil && r.config.ArchivedExpire != "" {
		p.ArchivedExpire = d
	}
	return p
}

// ConfigKeys lists the settings with their descriptions.
func ConfigKeys() map[string]string {
	out := map[string]string{}
	for k, s := range settings {
		out[k] = s.doc
	}
	return out
}

func lookupSetting(key string) (setting, error) {
	s, ok := settings[key]
	if !ok {
		keys := make([]string, 0, len(settings))
		for k := range settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return s, fmt.Errorf("%w: unknown setting %q (known: %s)", ErrUsage, key, strings.Join(keys, ", "))
	}
	return s, nil
}

// ConfigGet returns a setting's value ("" when it has its default).
func (r *Repo) ConfigGet(key string) (string, error) {
	s, err := lookupSetting(key)
	if err != nil {
		return "", err
	}
	return s.get(&r.config), nil
}

// ConfigSet validates and stores a setting (an empty value restores the
// default). The config file is replaced atomically and durably.
func (r *Repo) ConfigSet(ctx context.Context, key, value string) error {
	s, err := lookupSetting(key)
	if err != nil {
		return err
	}
	c := r.config
	if value == "" {
		s.reset(&c)
	} else if err := s.set(&c, value); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUsage, key, err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.WriteFileAtomic(r.fs, filepath.Join(r.StoreDir, "config"), append(data, '\n')); err != nil {
		return err
	}
	r.config = c
	return nil
}

// GCGrace is the configured gc grace period, or def.
func (r *Repo) GCGrace(def time.Duration) time.Duration {
	if d, err := ParseDuration(r.config.GCGrace); err == nil && r.config.GCGrace != "" {
		return d
	}
	return def
}

// ParseSize parses a byte count with an optional binary suffix: 1048576,
// 512K, 10M, 1G, 2T (also KiB/KB/MiB/MB...; all are powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q (want bytes, optionally with K, M, G or T)", s)
	}
	return n * mult, nil
}

// ParseDuration is time.ParseDuration plus a "d" (24h) unit: 7d, 1d12h.
func ParseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.Index(s, "d"); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		if s = s[i+1:]; s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 30m, 2h, 7d)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return days + d, nil
}

// DefaultGitAuthor is the author of git bridge commits unless git.author
// is set.
const DefaultGitAuthor = "snap <snap@localhost>"

// ParseAuthor splits "Name <email>" (git.author) into its parts.
func ParseAuthor(s string) (name, email string, err error) {
	lt, gt := strings.LastIndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if lt < 0 || gt != len(s)-1 || gt < lt {
		return "", "", fmt.Errorf("want \"Name <email>\", got %q", s)
	}
	name, email = strings.TrimSpace(s[:lt]), s[lt+1:gt]
	if name == "" || email == "" || strings.ContainsAny(s, "\n\x00") || strings.ContainsAny(name+email, "<>") {
		return "", "", fmt.Errorf("want \"Name <email>\", got %q", s)
	}
	return name, email, nil
}
