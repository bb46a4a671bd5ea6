package conversation

import "errors"

// ErrRecordTooLarge is returned by ParsePage and CountReader for a document
// whose view needs a record longer than MaxRecord.
var ErrRecordTooLarge = errors.New("conversation: record too large to stream")
