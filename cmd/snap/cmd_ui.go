package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/snapcore-dev/snap/ui"
)

func uiCommand(inv *invocation) *cli.Command {
	return &cli.Command{
		Name:      "ui",
		Usage:     "open snap's web app: timeline, checkpoints with their conversation, compare, search, rewind with a preview, undo",
		ArgsUsage: " ",
		Description: `Serves a local web app over the project's store and prints its URL; open it
in a browser. Sessions; the timeline of a session (checkpoints newest first
with their kind, actor, tool call, summary and files; branches a rewind left;
the operations beside it, the last one undoable); a checkpoint with its
changed files, each a click from its diff, and the conversation at that
point, message by message; compare any two checkpoints, or one with the
working tree, unified or side by side, conversation included; search across
sessions by prompt, tool call, file path or summary; the task tree and staged
edits. A rewind opens a dialog that shows its dry run, exactly what would be
restored, deleted and kept, before anything moves; afterwards the page offers
Undo. Keys: h history, c compare with the head, r rewind (the selected
checkpoint, else the one before the head), u undo, / search. Pages follow
what hooks and other sessions record, live.

   --addr HOST:PORT   where to listen (default 127.0.0.1:0, a free port on
                      loopback); another address lets other machines reach
                      it (0.0.0.0:PORT: all of this machine's; then open it
                      by an IP address, as a name is refused): anyone with
                      the URL can then rewind the project
   --open             also open the URL in the default browser ($BROWSER,
                      else xdg-open)
   --url-file FILE    also write the URL to FILE (mode 0600): for a script
                      that starts snap ui in the background

The URL carries a random token that every request for data needs (the page
keeps it for its tab, never in a cookie); requests naming another Host, and
changes that do not come from the page itself (same origin), are refused. It runs until interrupted.
With --json the URL is printed as {"url": "..."}.

Examples:
   snap ui
   snap ui --open
   snap ui --url-file ui-url &`,
		Flags: withGlobals(
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "listen on `HOST:PORT`"},
			&cli.BoolFlag{Name: "open", Usage: "open the URL in the default browser"},
			&cli.StringFlag{Name: "url-file", Usage: "also write the URL to `FILE`"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("ui takes no arguments")
			}
			g := globals(c)
			addr := c.String("addr")
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return usageErrorf("--addr %q: want HOST:PORT, e.g. 127.0.0.1:8766", addr)
			}
			g.longRunning = true
			repo, err := g.open(c.Context)
			if err != nil {
				return err
			}
			defer repo.Close()
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErrorf("--addr %q: %v", addr, err)
			}
			srv := ui.New(repo, ui.Options{Session: g.Session, Token: ui.NewToken(), Version: version()})
			bound := l.Addr().String()
			shown := bound // (a URL names one address: loopback when listening on all)
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				_, port, _ := net.SplitHostPort(bound)
				shown = net.JoinHostPort("127.0.0.1", port)
			}
			url := "http://" + shown + "/?token=" + srv.Token()
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				fmt.Fprintf(inv.stderr, "snap: serving on %s, which is not loopback: anyone who can reach it with this URL can rewind this project\n", bound)
			}
			err = emit(inv.stdout, g.JSON, map[string]string{"url": url}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "snap ui: open %s\n(interrupt to stop)\n", url)
				return err
			})
			if err != nil {
				l.Close()
				return err
			}
			if f := c.String("url-file"); f != "" {
				if err := writePrivate(f, url+"\n"); err != nil {
					l.Close()
					return err
				}
			}
			if c.Bool("open") {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(inv.stderr, "snap: could not open a browser (%v): open the URL above yourself\n", err)
				}
			}
			return ui.Serve(c.Context, l, srv.Handler(bound))
		},
	}
}

// openBrowser opens url with $BROWSER, else xdg-open, without waiting.
func openBrowser(url string) error {
	name := os.Getenv("BROWSER")
	if name == "" {
		name = "xdg-open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

// writePrivate writes data to a new file of mode 0600 beside path, then
// renames it over path: whatever path was (a file of another mode or
// owner, a symlink), the token is only ever in a file of the user's own
// that no one else can read (adversarial U3).
func writePrivate(path, data string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".snap-ui-url-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}
