// Command abtime times short commands against each other, as W10's A/B of
// two snap binaries was measured (bench/README.md): N rounds, each running
// every command once, the order rotated by one each round; per command the
// median and p10/p90 of the wall time (os/exec start to wait: process start
// and exit included), the median of its paired ratio to the first command
// in the same round, the median CPU time (user + system, from wait4) and
// the median number of minor page faults.
//
//	go run ./bench/abtime -n 300 -- BIN-A --version ::: BIN-B --version ::: git --version
//	go run ./bench/abtime -n 300 -dir PROJECT -stdin payload.json -- BIN-A hook claude-code ::: BIN-B hook claude-code
//
// A command that fails stops the run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 200, "rounds")
	dir := flag.String("dir", "", "working directory of the commands (default: the current one)")
	stdin := flag.String("stdin", "", "a file given on stdin to every run")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: abtime [-n N] [-dir DIR] [-stdin FILE] -- CMD ARGS... ::: CMD ARGS... [::: ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var cmds [][]string
	var cur []string
	for _, a := range flag.Args() {
		if a == ":::" {
			cmds = append(cmds, cur)
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	cmds = append(cmds, cur)
	if *n < 1 || slices.ContainsFunc(cmds, func(c []string) bool { return len(c) == 0 }) {
		flag.Usage()
		os.Exit(2)
	}
	var in []byte
	if *stdin != "" {
		var err error
		if in, err = os.ReadFile(*stdin); err != nil {
			fmt.Fprintln(os.Stderr, "abtime:", err)
			os.Exit(1)
		}
	}
	wall := make([][]float64, len(cmds))
	cpu := make([][]float64, len(cmds))
	faults := make([][]float64, len(cmds))
	for i := range *n {
		for k := range cmds {
			j := (k + i) % len(cmds)
			c := exec.Command(cmds[j][0], cmds[j][1:]...)
			c.Dir, c.Stdin = *dir, bytes.NewReader(in)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			start := time.Now()
			err := c.Run()
			d := time.Since(start)
			if err != nil {
				fmt.Fprintf(os.Stderr, "abtime: %s: %v\n%s", strings.Join(cmds[j], " "), err, out.String())
				os.Exit(1)
			}
			wall[j] = append(wall[j], ms(d))
			cpu[j] = append(cpu[j], ms(c.ProcessState.UserTime()+c.ProcessState.SystemTime()))
			if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
				faults[j] = append(faults[j], float64(ru.Minflt))
			}
		}
	}
	for j, c := range cmds {
		ratios := make([]float64, len(wall[j]))
		for i := range wall[j] {
			ratios[i] = wall[j][i] / wall[0][i]
		}
		fmt.Printf("%-45s wall median %6.2f ms (p10 %6.2f, p90 %6.2f), paired ratio to the first %.2f; cpu median %6.2f ms; minor faults %4.0f\n",
			strings.Join(c, " "), quantile(wall[j], .5), quantile(wall[j], .1), quantile(wall[j], .9), quantile(ratios, .5),
			quantile(cpu[j], .5), quantile(faults[j], .5))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the nearest-rank quantile q (0–1) of xs; 0 when xs is empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
