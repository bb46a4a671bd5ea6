//go:build ignore

// drive.go: a tiny headless-Chromium driver for the ui-findings scripts.
// It reads commands from stdin, one per line:
//
//	tab NAME      open a new tab called NAME (and use it)
//	use NAME      switch to tab NAME
//	nav URL       navigate the current tab
//	eval JS       print the value of JS (JSON.stringify'd)
//	wait JS       wait until JS is truthy (10 s at most)
//	key K         blur, then press key K in the current tab
//	click CSS     click the first element CSS matches
//	sleep MS      sleep
//	sh CMD        run CMD with sh -c, print its output
//
// Run: go run ./torture/ui-findings/drive.go < commands (from /work/main).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	exe := os.Getenv("CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	profile, _ := os.MkdirTemp("", "drive-profile")
	defer os.RemoveAll(profile)
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	defer cancel()
	root, cancelRoot := chromedp.NewContext(actx)
	defer cancelRoot()
	tabs := map[string]context.Context{}
	var cur context.Context
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, arg, _ := strings.Cut(line, " ")
		var err error
		switch cmd {
		case "tab":
			if len(tabs) == 0 {
				cur = root
			} else {
				cur, _ = chromedp.NewContext(root)
			}
			_, err = chromedp.Run(cur, chromedp.Evaluate[chromedp.Void](`1`))
			tabs[arg] = cur
		case "use":
			cur = tabs[arg]
		case "nav":
			err = chromedp.Do(cur, chromedp.Navigate(arg))
		case "eval":
			var v string
			v, err = chromedp.Run(cur, chromedp.Evaluate[string](`(async () => JSON.stringify(await (`+arg+`)))()`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
			if err == nil {
				fmt.Println(v)
			}
		case "wait":
			_, err = chromedp.Run(cur, chromedp.Poll[chromedp.Void](arg, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
		case "key":
			_, err = chromedp.Run(cur, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`))
			if err == nil {
				err = chromedp.Do(cur, chromedp.KeyEvent(arg))
			}
		case "click":
			err = chromedp.Do(cur, chromedp.Click(chromedp.CSS(arg)))
		case "sh":
			var out []byte
			out, err = exec.Command("sh", "-c", arg).CombinedOutput()
			os.Stdout.Write(out)
		case "sleep":
			n, _ := strconv.Atoi(arg)
			time.Sleep(time.Duration(n) * time.Millisecond)
		default:
			err = fmt.Errorf("unknown command")
		}
		if err != nil {
			fmt.Printf("ERROR %s: %v\n", line, err)
		}
	}
}
