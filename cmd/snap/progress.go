package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progress draws a one-line progress display on a terminal for long
// operations: nothing for the first half second, then at most ten updates
// a second, erased when done. It draws nothing when w is not a terminal.
type progress struct {
	w     io.Writer
	start time.Time
	last  time.Time
	drawn bool
}

// newProgress returns a progress display on w, or nil when w is not a
// terminal.
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return &progress{w: w, start: time.Now()}
}

func (p *progress) update(phase string, done, total int) {
	now := time.Now()
	if now.Sub(p.start) < 500*time.Millisecond || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.drawn = now, true
	if total > 0 {
		fmt.Fprintf(p.w, "\r\x1b[Kgc: %s %d/%d (%d%%)", phase, done, total, 100*done/total)
	} else {
		fmt.Fprintf(p.w, "\r\x1b[Kgc: %s %d objects", phase, done)
	}
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
