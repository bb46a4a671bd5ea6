// Command bench measures snap against the tools agents use today, in one run
// on one machine, and prints a markdown table (or -json) of medians and
// snap/peer ratios next to the targets of design.md §7.
//
//	go run ./bench            # the full run (make bench)
//	go run ./bench -quick     # small sizes, about two minutes (make bench-quick, CI)
//	go run ./bench -only W1,W4 -runs 5 -scale 10 -json
//
// Peers, each working on its own copy of the generated data:
//   - snap, run through its CLI binary (process start is part of what an agent
//     pays), with its store in the project (.snap/);
//   - shadow git, the git CLI driven as Cline and Gemini CLI drive it: a git dir
//     outside the work tree (--git-dir S --work-tree P), `add -A` + `commit` per
//     checkpoint, `reset --hard` to restore, gc.auto=0 unless a row says "git
//     defaults";
//   - go-git v5, the library Go agent tools embed, in a worker process that
//     times each call itself (so an operation that does not finish within
//     -gogit-timeout can be stopped and its rows skipped).
//
// Workloads are generated deterministically from -seed and the Go toolchain's
// own source tree ($(go env GOROOT)/src, test, misc): W1 big tree, W2 long
// session, W3 replay of real Claude Code transcripts (../shared/realdata), W4
// big file, W5 edit-set checkpoint, W6 staged edits, W7 agent hooks, W8 big
// transcript diff, W9 blame, W10 process start (snap --version and a no-op
// hook against git --version and git rev-parse). Repeated measurements
// alternate the peers' order so machine noise hits each alike. The targets are printed, never
// enforced: the exit code is non-zero only for real errors (a failed command,
// a rewind that did not restore the exact bytes).
//
// The files: main.go (flags, the run), gen.go (generators), peers.go (snap, git,
// go-git, timing and peak RSS), report.go (rows, table, JSON) and one file per
// workload; abtime/ is a small command that times two builds of snap (or any
// commands) against each other in alternating rounds. README.md has the
// latest full table.
package main
