// Package watch is snap's file-system monitor: a daemon (Run) that watches
// a project's working tree with inotify (github.com/fsnotify/fsnotify) and
// answers, over a unix socket, which directories may have changed since a
// token it handed out (Query), so that a capture can look only there.
// Correctness never depends on it: any doubt is an answer of All, and any
// failure to answer is an error after which the caller scans everything.
//
// # Tokens and answers
//
// A token is "<epoch>:<seq>". The epoch is random per start of the daemon
// and per restart of its watches (after an overflow of the kernel's event
// queue, or an error of the watcher it cannot attribute): a token of
// another epoch, a malformed one, one from the future and "" are answered
// All, with a Reason. seq grows with every event handled. The daemon keeps,
// per directory, the seq of its last change: Answer.Dirs are the
// directories whose own entries changed (an entry created, written,
// removed, renamed or chmodded), Answer.Trees those beneath which anything
// may have changed (a directory created or moved in, whose watches were
// added after things may have been made in it; a directory whose
// .gitignore or .snapignore changed; the root, when git's excludes file or
// .git/info/exclude changed). Answer.Unwatched, whatever the token, lists
// the top-most directories not watched: ignored by the rules on disk, a
// snap store, unreadable, or refused a watch (past
// fs.inotify.max_user_watches, say). Nothing beneath them is vouched for.
//
// # Syncing
//
// An event of a write that finished before a query may not have been read
// from inotify yet. Each query therefore creates a cookie file
// (<store>/watch-cookie-<pid>-<n>) in the store, which is watched on its
// own; inotify orders the events of one instance, so once the cookie's
// creation is handled, every earlier change is too, and the answer is
// computed then (Watchman's cookies). A cookie that does not come back
// within the client's time (it sends it) gets an All. Before it answers,
// the daemon also re-reads the exclude rules outside the tree (git's
// excludes file, .git/info/exclude: worktree.Excludes) and, when they
// changed, re-walks everything. The client sends the variables that locate
// git's configuration (HOME, XDG_CONFIG_HOME, GIT_CONFIG_*): a daemon whose
// own differ answers All.
//
// # What is watched
//
// Every directory a capture enters, as worktree.Dirs lists them with the
// capture's own ignore machinery: not .git, not the store, not a directory
// holding a snap store, not what the rules on disk ignore; symlinks are
// not followed. A created or moved-in directory is walked and watched with
// everything beneath it. A directory made beneath one after the walk
// listed it and before its watch was added has no event: so every
// directory newly watched whose ctime is not older than the walk's start
// (less 50 ms for the coarse clock of file times) is walked again, until a
// round finds nothing new. A removed or moved-away directory loses its
// watches; every removal is followed by a look at what is on disk there
// now (the events lag behind the disk), so the watches converge on the
// tree whatever the order. A change of an ignore file re-walks its
// directory, watching what became un-ignored and dropping what became
// ignored. A chmod of a directory the daemon could not watch or walk
// walks it again; the others are retried every 30 seconds.
//
// fsnotify keys its watches by path, the kernel by inode: the daemon keeps
// one watch per directory (inode), removing a moved directory's watch
// under its old path before adding it under the new one (fsnotify named
// its events after the old path, and its registry broke, otherwise), and
// reports the second path of one directory (a bind mount) unwatched. A
// mount or an unmount inside the tree changes a directory without an
// event: when the mount table changes (read every 2 seconds), every
// watched directory's inode is checked, and one that changed is walked
// again and reported. fsnotify sends some errors while it holds the lock
// its Add and Remove take, so watches are added and removed in a helper
// goroutine while the loop goes on receiving errors; only the loop
// receives them, so an overflow (sent before the events after it) is
// always handled before the query of a later cookie is answered.

// # The daemon
//
// One per store: Run holds an flock on <store>/watch.lock for its life and
// a second Run fails with ErrRunning. It listens on <store>/watch.sock
// (mode 0600); when that path is longer than 100 bytes, on
// <tmp>/snap-watch-<uid>/<sha256 of the store's path>.sock in a 0700
// directory whose owner is checked by both sides. A socket left by a
// killed daemon makes Query fail at once (connection refused) and is
// removed by the next Run. The protocol is one JSON request line and one
// JSON reply line per connection: {"op":"query","since":T,"wait_ms":N,
// "env":[...]} → {"answer":{...}}, {"op":"status"} → {"state":{...}},
// {"op":"stop"} → {"stopping":true}, or {"error":"..."}. Each side checks
// with SO_PEERCRED that the other is the same user. The daemon exits when
// its context ends, on Stop, when the root, the store or its socket is
// removed or replaced (their watches tell, and a check every 2 seconds),
// or after Config.Idle without a query; it then removes its socket and
// releases the lock. A killed daemon's cookies are removed by the next Run
// too.
//
// # Limits
//
// inotify does not see a change made through a shared writable mmap (or
// native AIO), nor one made on another machine to a network file system
// (Run refuses NFS, SMB, FUSE, 9P and the like), nor a write to a
// hard-linked file through a link in another directory (the directory of
// the link written to is reported, not the others'). A mount or an
// unmount inside the tree is noticed within 2 seconds, not at once. A
// capture that must be exact about these reads such directories itself.
//
// # Cost
//
// Measured with
//
//	go test -run '^$' -bench 'Query|Answer|Idle' -benchtime=3000x -count=3 ./watch/
//	go test -run '^$' -bench Audit -benchtime=20x -count=3 ./watch/
//
// on a 2-vCPU virtual machine (ext4, kernel inotify limits at their
// defaults) shared with other work (load average 8 to 10), for a tree of
// 10,000 directories each holding a file, unchanged:
//
//   - a Query (dial, sync through the cookie, answer, reply):
//     0.25-0.87 ms (BenchmarkQuery);
//   - the daemon's own part of it (BenchmarkAnswer): the answer 0.7-3 µs,
//     re-reading the exclude rules 16-71 µs, creating and removing the
//     cookie 42-156 µs; the rest is the round trip through inotify and the
//     socket, and the goroutines' wake-ups;
//   - starting (the tree walked and watched, until the first answer):
//     0.45-1.0 s;
//   - memory: 4.5-5 MiB of Go heap for the daemon's state; a daemon
//     process's resident memory 16 MiB (BenchmarkIdleProcess); the
//     kernel's inotify watches besides (about 1 KiB each);
//   - idle: 0.5-0.6 ms of CPU per second (a check every 2 s of the root,
//     the store, the socket and the mount table; the Go runtime), from
//     /proc/<pid>/task/*/schedstat;
//   - an audit after a change of the mount table: 55-102 ms
//     (BenchmarkAudit).
package watch
