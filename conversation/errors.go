package conversation

import "errors"

// ErrRecordTooLarge is returned by ParsePage and CountReader for a document
// whose view needs a record longer than MaxRecord.
var ErrRecordTooLarge = errors.New("conversation: record too large to stream")

// ErrCannotCompact is returned by CompactRaw for a document whose format it
// cannot write back compacted (only JSONL and JSON arrays).
var ErrCannotCompact = errors.New("conversation: cannot write this format compacted")
