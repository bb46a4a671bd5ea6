//go:build !snapcore

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	snap "github.com/snapcore-dev/snap"
	"github.com/snapcore-dev/snap/agent"
	"github.com/snapcore-dev/snap/mcp"
)

// runMCP is 'snap mcp' (mcpCommand). A snap built with the tag snapcore
// does not link the MCP server: it runs snap-full instead (core.go).
func runMCP(c *cli.Context, inv *invocation) error {
	g := globals(c)
	g.longRunning = true
	repo, err := g.open(c.Context)
	if errors.Is(err, snap.ErrNoStore) && g.Store == "" {
		// Started by an agent in a project with no store: make
		// one, as the first hook event does.
		dir := g.Dir
		if dir == "" {
			dir = "."
		}
		// It is then opened as a server, as any (g.longRunning): not
		// as a one-shot command keeping what it read of the op log
		// (torture/index2-findings/01).
		if abs, aerr := filepath.Abs(dir); aerr == nil {
			var root string
			if root, err = agent.InitProject(abs); err == nil {
				g.Dir = root
				repo, err = g.open(c.Context)
			}
		}
	}
	if err != nil {
		return err
	}
	defer repo.Close()
	srv := mcp.New(repo, mcp.Options{Session: g.Session, Version: version(), ConversationDirs: absAll(c.StringSlice("conversation-dir")), TranscriptDirs: transcriptDirs(), Maintain: func(ctx context.Context) { maintain(ctx, repo) }})
	addr := c.String("http")
	if addr == "" {
		return srv.Run(c.Context, &sdk.IOTransport{Reader: io.NopCloser(inv.stdin), Writer: nopWriteCloser{inv.stdout}})
	}
	l, err := mcp.ListenLoopback(addr)
	if err != nil {
		return usageErrorf("%v", err)
	}
	token, tokenFile, err := mcpToken(repo.StoreDir)
	if err != nil {
		l.Close()
		return err
	}
	url := "http://" + l.Addr().String() + mcp.Path
	err = emit(inv.stdout, g.JSON, map[string]string{"url": url, "token_file": tokenFile}, func(w io.Writer) error {
		where := "$SNAP_MCP_TOKEN"
		if tokenFile != "" {
			where = tokenFile
		}
		_, err := fmt.Fprintf(w, "serving MCP at %s (bearer token: %s); interrupt to stop\n", url, where)
		return err
	})
	if err != nil {
		l.Close()
		return err
	}
	return mcp.ServeHTTP(c.Context, l, mcp.HTTPHandler(srv, token))
}

// transcriptDirs are the registered agents' transcript directories in
// the user's home (none without a home directory).
func transcriptDirs() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return agent.TranscriptDirs(home)
}

// mcpToken returns the bearer token of 'snap mcp --http': $SNAP_MCP_TOKEN
// (tokenFile empty), else the token in the store's mcp-token file, made
// with 32 random bytes and mode 0600 when there is none.
func mcpToken(storeDir string) (token, tokenFile string, err error) {
	if t := os.Getenv("SNAP_MCP_TOKEN"); t != "" {
		return t, "", nil
	}
	tokenFile = filepath.Join(storeDir, "mcp-token")
	read := func() (string, string, error) {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", "", err
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, tokenFile, nil
		}
		return "", "", fmt.Errorf("%s is empty: delete it to have a new token made", tokenFile)
	}
	if t, f, err := read(); !errors.Is(err, fs.ErrNotExist) {
		return t, f, err
	}
	// Made whole under a temporary name, then linked into place: a server
	// starting at the same time reads either no file or the whole token.
	raw := make([]byte, 32)
	rand.Read(raw)
	tmp, err := os.CreateTemp(storeDir, "mcp-token-*")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), tokenFile) // CreateTemp's mode is 0600
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", "", err
	}
	return read()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// absAll makes each path absolute (from the current directory).
func absAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}
