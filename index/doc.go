// Package index is the stat cache of a working tree: for each path, the
// lstat fields seen when its content was last hashed and the id it hashed to.
// A file whose (size, mtime, ctime, inode, mode) is unchanged is not read
// again, which is what makes a checkpoint of an unchanged tree cost a walk
// and no reads.
//
// It also keeps each directory's entry names as last listed, with the
// directory's stat: creating, removing or renaming an entry moves a
// directory's mtime and ctime, so a directory whose stat is unchanged is not
// listed again (as git's untracked cache does). A walk of an unchanged tree
// then costs one lstat per entry and no getdents.
//
// # Racy entries
//
// A file modified within the timestamp granularity of the moment it was
// hashed could change again without its mtime changing. So every entry
// records when its hash was taken (the start of the scan that read it), and
// Lookup trusts an entry only if the file's mtime and ctime are older than
// that moment by a safety margin: 50 ms for filesystems with sub-second timestamps, 2 s
// for those whose mtimes are whole seconds. Racily clean files are re-hashed;
// after a re-hash they get a fresh recording time and become trustworthy
// once the margin has passed. Listings follow the same rule, with the
// directory's mtime.
//
// # Contract
//
// The cache is only an accelerator: an entry is written only with an id that
// was computed from the file's content at that stat, losing the file costs a
// re-hash and nothing else. A missing, truncated or corrupt file loads as an
// empty cache. Concurrent writers (two sessions checkpointing one tree)
// replace the file atomically by rename, or append batches to its journal;
// the last rename wins, batches apply in the order they were appended, and
// every version is truthful. LoadFS and SaveFS read and write through an fsys.FS
// (Load and Save use the real one); a Save that fails leaves the previous
// file in place and the cache dirty, so callers may ignore its error.
//
// # On-disk format
//
// One file (little-endian), a block per directory that has entries or a
// listing, then a table of the blocks, then a footer:
//
//	"SNAPSTC3"
//	blocks × { flags u8 | [stat | uvarint n | n × { uvarint len(name) | name }]
//	           | uvarint files | files × { uvarint len(name) | name | stat | id [32] } }
//	table: blocks × { uvarint len(dir) | dir | offset u32 | length u32 | crc32c u32 | files u32 }
//	table offset u64 | blocks u32 | blake3-256 of the table | "SNAPSTCE"
//
//	stat = size i64 | mtime i64 | ctime i64 | inode u64 | mode u32 | recorded i64
//
// flags bit 0: the directory's listing follows (its stat and names). A
// block holds the entries of the files directly in its directory. Loading
// reads the file and checks the footer and the table (its blake3, sorted
// directories, blocks one after the other); a directory's block is checked
// (its CRC-32C, its structure) and decoded when the directory is first
// looked up, so a capture of a few directories costs what they hold, not
// the whole cache (at 200,000 files, decoding everything was 93% of a
// monitored checkpoint of ten changed files). A damaged block loads as an
// empty directory (its files are read again) and the next save rewrites
// the file; a damaged table or footer loads as an empty cache. A save
// writes again the blocks of the directories used and copies the others
// as they were.
//
// A save of a few changes appends them to the file's journal instead
// (journal.go: "SNAPSTJ1", the blake3 of the file's table, batches with a
// CRC-32C), so it costs what changed; Load reads the file, then its
// journal. Once the journal passes a sixteenth of the file, the next save
// rewrites the file and removes the journal.
//
// Directories, and names within a directory, are strictly sorted; a
// directory is slash-separated, relative to the project root ("" is the
// root); a name holds no slash. Times are Unix nanoseconds; mode is the Go
// fs.FileMode bits. A file of another version (SNAPSTC1 had no listings,
// SNAPSTC2 no blocks) loads as corrupt: empty, costing one re-hash.
package index
