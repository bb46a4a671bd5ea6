// Package objects is snap's content-addressed object store: object ids,
// the canonical encodings of blobs, chunk lists, trees and checkpoints,
// zstd compression, content-defined chunking, and the pack files that hold
// it all.
//
// # Ids
//
// An id is blake3-256 over one type byte followed by the object's canonical,
// uncompressed encoding (Hash). Compression never changes an id. Every read
// decodes, re-hashes and compares: wrong bytes are reported as ErrCorrupt and
// never returned.
//
// # Objects (canonical encodings)
//
//	blob        raw bytes: a file of at most SmallBlobMax (64 KiB), a symlink
//	            target, a state document, or one chunk of a larger one
//	chunk list  level u8 | uvarint n | n × { id | uvarint size }
//	            content larger than 64 KiB, cut by FastCDC (min 4 KiB,
//	            normal 8 KiB, max 64 KiB) into blobs; level 0 lists blobs,
//	            level k lists level k-1 lists, cut where an entry id's last
//	            byte has its low 4 bits clear (~16 entries per list, at most
//	            1024), so an edit rewrites one small list per level
//	tree        uvarint n | n × { mode u8 | uvarint len | name | id | uvarint size }
//	            entries strictly sorted by name, names legal (ValidName),
//	            modes file 1, exec 2, symlink 3, dir 4
//	checkpoint  compact JSON of Checkpoint (fields in declaration order)
//
// Decoders accept only canonical encodings (re-encoding must reproduce the
// input), so every object has exactly one id.
//
// # Packs
//
// Objects live in immutable pack files, packs/<hex>.pack (layout in
// pack.go): a header, records { type | encoding | size | stored size |
// data } with data zstd-compressed when that is smaller, then an index of
// { id, type, encoding, offset, sizes } sorted by id, then a footer holding
// the index offset, its entry count and its blake3 checksum.
//
// # Delta records
//
// A record may instead hold a delta (encoding 2, see delta.go): the id of
// a base object of the same type, the chain depth (1 + the base's, at most
// MaxDeltaDepth), and a git-format delta (raw or zstd) from the base's
// canonical bytes to the object's. Writer.PutDelta writes one when given
// the previous version of a tree or small file and the delta is at most
// three quarters of the whole compressed record (or at most 1/16 of the raw
// bytes, taken without compressing the whole to compare), so a checkpoint that changes one entry
// of a directory or one line of a file stores tens of bytes. The base is
// resolved through the store (it may be in any pack), the delta's declared
// sizes are checked against the base and the index before patching, and
// the result is re-hashed like any record. A missing base, a base of
// another type, or a chain longer than MaxDeltaDepth (a cycle) is
// ErrCorrupt. The index entry records the decoded size and the stored size,
// so Info, Stats and StoredBytes need no read. Repack keeps every base a
// surviving delta needs (see Repack).
//
// # Growing documents
//
// A state document (a transcript) mostly grows. Writer.PutBytesAppend
// (content in memory) and Writer.PutFileAppend (content read from an
// io.ReadSeeker) store a new version on the id of the previous one, base:
// when base's content is a prefix of the new content, verified chunk by
// chunk against base's chunk ids as the content is read, base's chunks are
// kept as they are and only what follows is chunked, with base's last
// chunk (which ended where base ended, not necessarily where the chunker
// cuts the longer content), so an append costs its new bytes, one
// re-chunked chunk and a few rewritten chunk lists. New chunks and rewritten lists
// are stored as deltas on base's where that pays (see PutBytesAppend). When
// base is not a prefix (an edit, a shrink, a missing base), the content is
// stored whole, as PutBytes would, PutFileAppend seeking back to where it
// started. Both share one implementation: for the same content and base
// they return the same id and store the same records, and the id is always
// that of the content stored whole (TestPutBytesAppendIDIsContentID): an
// id is a function of the content alone, on any machine. PutFileAppend holds a 256 KiB read
// buffer, the chunker's buffer and 64 bytes per chunk of base (the bytes
// each starts and ends with, which pick delta bases), never the content:
// storing a 256 MiB document, or appending 16 MiB to it, grows the heap by
// about 15 MiB, 6 MiB of it live (TestPutFileAppendMemory). Content of at
// most SmallBlobMax is read whole.
//
// # Durability and concurrency
//
// A Writer streams new objects into tmp/pack-* and Commit writes the index,
// fsyncs the file, renames it into packs/ and fsyncs that directory: one
// fsync for all of a checkpoint's objects, and a pack becomes visible whole
// or not at all. Packs are never modified; a crash leaves at most a file in
// tmp/, which nothing reads. Any number of writers, in any number of
// processes, may commit concurrently; an object written twice is harmless
// (the first copy indexed wins, gc drops the rest). A Store learns of packs
// committed by other processes on Reload, which Read does by itself on a
// miss. Memory is bounded whatever the size of a file: blobs stream
// through the chunker one chunk at a time.
//
// Loading a pack checks the structure of every index entry (known type and
// encoding, sorted ids, records inside the pack) but not the index's
// checksum, which costs a third of opening a store of 200,000 objects: a
// damaged index can make an object look absent or its read fail, never
// return wrong bytes, since every read re-hashes. gc and fsck call
// CheckIndexes first, which checks each index in full and drops a damaged
// one as if it had failed to load.
//
// # I/O errors
//
// Packs are blobs of a storage.Blobs (package storage): OpenFS keeps them
// in the store directory through storage/fsstore, OpenBlobs in any other
// implementation (storage/memstore). With the file-system one, every file
// operation goes through the fsys.FS given to OpenFS (Open uses the real
// one). A Commit or Repack that fails before its rename leaves
// at most its temporary file in tmp/ (removed on the spot, or by gc after
// the grace period when that removal fails too) and changes nothing
// visible; a Commit that fails after the rename (fsyncing packs/) leaves an
// intact, unreferenced pack that gc collects. A Writer whose Put or Commit
// failed stays failed: start a new one. A Repack that fails after
// committing its new pack, while removing the old ones, leaves objects
// stored twice, which is harmless; the next gc finishes the job.
package objects
