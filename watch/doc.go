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
// everything beneath it; the walk is repeated while it finds directories it
// had not watched yet, since one made after its parent was listed and
// before the parent's watch was added has no event. A removed or
// moved-away directory loses its watches; every removal is followed by a
// look at what is on disk there now (the events lag behind the disk), so
// the watches converge on the tree whatever the order. A change of an ignore
// file re-walks its directory, watching what became un-ignored and dropping
// what became ignored.
//
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
// its context ends, on Stop, when the root or the store is removed or
// replaced (their watches tell, and a check every checkEvery), or after
// Config.Idle without a query; it then removes its socket and releases the
// lock.
//
// # Limits
//
// inotify does not see a change made through a shared writable mmap, nor
// one made on another machine to a network file system (Run refuses NFS,
// SMB, FUSE, 9P and the like), nor a write to a hard-linked file through a
// link in another directory (the directory of the link written to is
// reported, not the others'). A file system mounted or unmounted inside
// the tree is not noticed. A capture that must be exact about these still
// has its stat cache to fall back on.
package watch
