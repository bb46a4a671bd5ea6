package mcp

import (
	"os"
	"path/filepath"
	"strings"
)

// homeList names dirs for a message, a directory under the home directory
// as ~/REL: "~/.claude/projects, ~/.gemini"; "none" for no directory.
func homeList(dirs []string) string {
	if len(dirs) == 0 {
		return "none"
	}
	home, _ := os.UserHomeDir()
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = d
		if rel, err := filepath.Rel(home, d); home != "" && err == nil && filepath.IsLocal(rel) {
			out[i] = "~/" + filepath.ToSlash(rel)
		}
	}
	return strings.Join(out, ", ")
}
