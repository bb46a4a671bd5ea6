package conversation

import (
	"bytes"
	"hash/maphash"
	"io"
)

// DiffShared is Diff(Parse(a), Parse(b)) for two documents known to share
// their first shared bytes (two versions of a transcript that share their
// leading chunks), computed without parsing what they share: the messages
// that start in it are only counted, as CountReader counts them, and only
// what follows the last line that starts in it is parsed, in each
// document. a and b hold aSize and bSize bytes.
//
// It applies to JSONL documents, when the shared bytes show it: their
// first line that is not blank holds a record, and a byte that is not
// white space follows it (Parse reads such a document as JSONL whatever
// follows), that line is at most 4 MiB, and no line in the shared bytes
// is longer than MaxRecord. Otherwise, or when a record after them is
// longer than MaxRecord, ok is false and nothing is compared: the caller
// compares whole views. The result is then exactly Diff's, messages,
// indexes and lines included (TestDiffSharedMatchesDiff).
//
// A record after the shared bytes may merge into a message that starts in
// them (an assistant message split over several records, cut by a
// checkpoint): then that message is parsed again, from the line where it
// starts, in both documents. Memory is what the differing messages take,
// one record (MaxRecord at most) and about 60 bytes per distinct assistant
// message id of the shared bytes; they are read once, from a.
func DiffShared(a io.ReaderAt, aSize int64, b io.ReaderAt, bSize int64, shared int64) (d DiffResult, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, isAbort := p.(abort); isAbort {
				d, ok, err = DiffResult{}, false, e.err
				return
			}
			d, ok, err = DiffResult{}, false, nil // as Parse would: the caller's whole views say what went wrong
		}
	}()
	shared = min(shared, aSize, bSize)
	bom := int64(0)
	if shared >= int64(len(utf8BOM)) {
		head := make([]byte, len(utf8BOM))
		if _, err := a.ReadAt(head, 0); err != nil {
			return DiffResult{}, false, err
		}
		if bytes.Equal(head, utf8BOM) {
			bom = int64(len(utf8BOM))
		}
	}
	pre, ok, err := scanShared(io.NewSectionReader(a, bom, shared-bom))
	if !ok || err != nil {
		return DiffResult{}, false, err
	}
	at := sharedAt{at: pre.at, lines: pre.lines, before: pre.n}
	for restarts := 0; ; restarts++ {
		as, aInto, ok, err := parseAfter(io.NewSectionReader(a, bom+at.at, aSize-bom-at.at), pre, at)
		if !ok || err != nil {
			return DiffResult{}, false, err
		}
		bs, bInto, ok, err := parseAfter(io.NewSectionReader(b, bom+at.at, bSize-bom-at.at), pre, at)
		if !ok || err != nil {
			return DiffResult{}, false, err
		}
		into := aInto
		if into < 0 || bInto >= 0 && bInto < into {
			into = bInto
		}
		if into < 0 {
			i := 0
			for i < len(as) && i < len(bs) && EqualMessages(&as[i], &bs[i]) {
				i++
			}
			return DiffResult{
				Common:  at.before + i,
				Removed: append([]Message{}, as[i:]...),
				Added:   append([]Message{}, bs[i:]...),
			}, true, nil
		}
		// Read again from the line where message into starts; after a few
		// tries (records of old messages scattered all over), from the
		// start.
		at = sharedAt{}
		if restarts < 4 {
			for _, m := range pre.ids {
				if m.index == into {
					at = sharedAt{at: m.at, lines: m.line - 1, before: m.before}
					break
				}
			}
		}
	}
}

// sharedPrefix is what DiffShared reads of the shared bytes: where the
// message of each assistant message id starts (its ids hashed as the
// jsonlPager hashes them, with seeds), and where the last line that starts
// in them starts: after lines lines and n messages, at offset at.
type sharedPrefix struct {
	ids   map[[2]uint64]sharedMsg
	seeds [2]maphash.Seed
	at    int64
	lines int
	n     int
}

// sharedMsg is where a message of the shared bytes starts: its index, its
// first line, that line's offset and the messages that start before it.
type sharedMsg struct {
	index, line int
	at          int64
	before      int
}

// sharedAt is where DiffShared parses from: offset at, after lines lines
// and before messages.
type sharedAt struct {
	at            int64
	lines, before int
}

// maxSharedFirstLine bounds the first line DiffShared reads to decide
// that the documents are JSONL: a longer one is most likely a whole JSON
// document on one line, which is not.
const maxSharedFirstLine = 4 << 20

// scanShared counts the messages of the lines r holds, as CountReader
// would, but for its last line when no newline ends it (which belongs to
// what follows), keeping where every assistant message starts. ok is
// false when the lines do not show a JSONL document (see DiffShared).
func scanShared(r io.Reader) (*sharedPrefix, bool, error) {
	t := newJSONLTap(window{0, -1}, true)
	t.firstMax = maxSharedFirstLine
	pre := &sharedPrefix{ids: map[[2]uint64]sharedMsg{}, seeds: t.pager.seeds}
	t.pager.scan = pre
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.feed(buf[:n])
			if t.overflow || t.seenLine && !t.firstRec {
				return nil, false, nil
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	// The line being read (pending) starts where the shared bytes stop
	// being whole lines: it is read again with what follows.
	if !t.firstRec || !t.docHasNewline() {
		return nil, false, nil
	}
	pre.at, pre.lines, pre.n = t.lineAt, t.lineNo, t.pager.n
	return pre, true, nil
}

// parseAfter parses the records r holds, which follow at.lines lines and
// at.before messages of the shared bytes of pre: their messages, and the
// lowest message of pre before at that one of them merges into (-1:
// none). ok is false when a line is longer than MaxRecord.
func parseAfter(r io.Reader, pre *sharedPrefix, at sharedAt) ([]Message, int, bool, error) {
	t := newJSONLTap(window{at.before, -1}, false)
	t.lineNo = at.lines
	p := t.pager
	p.n, p.shared, p.seeds, p.into = at.before, pre, pre.seeds, -1
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.feed(buf[:n])
			if t.overflow {
				return nil, 0, false, nil
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, false, err
		}
	}
	t.finish()
	if t.overflow {
		return nil, 0, false, nil
	}
	c, _, _ := p.view(nil, false)
	return c.Messages, p.into, true, nil
}
