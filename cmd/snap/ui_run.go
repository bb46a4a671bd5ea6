//go:build !snapcore

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

// runUI is 'snap ui' (uiCommand). A snap built with the tag snapcore does
// not link the web app: it runs snap-full instead (core.go).
func runUI(c *cli.Context, inv *invocation) error {
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
