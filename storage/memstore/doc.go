// Package memstore is the in-memory implementation of package storage:
// blobs, refs, small files and locks held in maps of one process. It
// passes the same conformance suite (storage/storagetest) as the
// file-system store. It is for tests and for a store that lives as long
// as a process; nothing survives the process, so "durable" means
// "visible", and a crash is not a state it can be in. Every operation is
// atomic under one mutex per store; readers get copies (or, for blobs,
// bytes that are never modified), so what a reader holds never changes
// under it.
package memstore
