// Package conversation reads agent conversation documents (transcripts,
// session files, API request bodies) into a structured, read-only view, and
// compares two conversations message by message.
//
// # Bytes are never rewritten
//
// snap stores and restores state documents byte for byte. This package only
// reads them: Parse, Count and Diff never modify their input, and nothing here
// writes a document back. The view is for people and tools (snap
// conversation, snap diff, snap log's message counts); the stored bytes stay
// the truth.
//
// # Formats
//
// The format is detected from the content, never from a file name
// (a leading UTF-8 byte order mark and surrounding white space are ignored):
//
//   - "json-array": a JSON array of messages. OpenAI chat messages ({role,
//     content, tool_calls: [{id, function: {name, arguments}}],
//     tool_call_id}), Anthropic messages ({role, content: [{type: text},
//     {type: tool_use, id, name, input}, {type: tool_result, tool_use_id,
//     content}]}), Gemini API contents ({role: model, parts: [{text},
//     {functionCall}, {functionResponse}]}). content may be a string, an
//     array of blocks or strings, or one block.
//   - "json-messages": a JSON object holding the message array under
//     "messages" (Gemini CLI sessions with messages {type: user|gemini|info,
//     content, toolCalls: [{id, name, args, result, status}]}; API request
//     bodies, whose top-level "system" becomes a leading system message), else
//     "history" (SWE-agent .traj files: OpenAI-style messages), else
//     "trajectory" (SWE-agent steps {response, thought, action, observation},
//     each shown as one assistant message with an "action" tool call and its
//     observation as tool result).
//   - "jsonl": one JSON record per line (Claude Code transcripts, or bare
//     {role, content} messages per line). A document is JSONL when its first
//     line is a complete JSON object and more follows, or when it is not one
//     valid JSON value but some line starting at column 0 holds a complete
//     JSON object. A single JSON object with no message array but a "type" or
//     "role" (one record, possibly pretty-printed) is read as a one-record
//     JSONL document; any other single object or array (a pretty-printed
//     session saved as ".jsonl") is read as "json-messages" or "json-array".
//   - "unknown": anything else. The view has no messages and one Problem
//     saying why. An empty document is "unknown" with the Problem "empty
//     document".
//
// Roles are lower-cased and normalised: Gemini "gemini" and "model" become
// "assistant", "human" becomes "user", OpenAI "function" becomes "tool";
// other roles (system, developer, Gemini's "info") are kept. A message with no
// role at all gets "unknown".
//
// Message.Text concatenates the text blocks of a message, separated by "\n";
// thinking/reasoning blocks are left out, images and documents show as
// "[image]" and "[document]". Tool calls keep their input as JSON (OpenAI's
// JSON-encoded argument strings are unwrapped). Tool results are flattened to
// text (block arrays joined, Gemini {output}/{error} responses unwrapped).
//
// Tool results get the role "tool" in every format: an OpenAI "tool" message
// carries its content as a ToolResult (Text is empty), and a "user" message
// whose content is only tool_result blocks (Claude Code, Anthropic API) is
// shown with Role "tool". A user message that also holds text stays "user".
//
// # Claude Code JSONL
//
// Claude Code writes one record per line and splits one API message over
// several lines, one content block each (thinking, text, tool_use), all
// carrying the same message.id. Parse merges every "assistant" record with a
// given message.id into one Message, even when other records come between
// them: Text and ToolCalls accumulate in line order, ID is the message.id,
// Timestamp is the first record's, and Lines lists every source line (1-based)
// merged in. A tool_use or tool_result block written again by a later record
// (same id) is kept once. Each "user" record is one Message with ID = the
// record's uuid: a prompt (string content) has Role "user"; a record of
// tool_result blocks has Role "tool" and ToolResults. Edit, Write, MultiEdit
// and Bash calls appear as ToolCalls with their input (file_path, old_string,
// new_string, ...). Only the message's content is read; its other members
// (model, usage) and the record's others (toolUseResult, cwd) are skipped.
//
// A JSONL record without a type (or of type "message") but with a role is a
// bare message and reads like an element of a JSON array; so does a "user" or
// "assistant" record that has a content member instead of a message object.
//
// Records of the bookkeeping types progress, file-history-snapshot, summary,
// system, queue-operation, custom-title and result are skipped silently.
// Records of any other type (or with neither type nor role) are skipped and
// reported by one Problem per type, on the line of the first such record, so
// a new record type never floods the view.
//
// # Problems
//
// Parsing never fails. What cannot be read becomes a Problem, with the 1-based
// Line for JSONL documents, and parsing goes on:
//
//   - a line that is not valid JSON (including a truncated last line) is
//     skipped;
//   - a line holding several JSON values run together is reported, and each
//     value is read as its own record;
//   - a line or array element that is valid JSON but not an object is skipped;
//   - a user or assistant record without a message object is skipped;
//   - a broken JSON array or object document shows the messages decoded before
//     the error.
//
// Fields of an unexpected JSON type are left blank without a Problem. Member
// names are matched exactly (case-sensitively); when a name repeats, the last
// member wins.
//
// # Reading
//
// Documents are read with a small validating JSON scanner (jsonscan.go) that
// accepts exactly what encoding/json accepts and decodes strings identically
// (FuzzScanner checks both), but is several times faster than encoding/json's
// scanner and decodes only the members a view uses. Claude Code records carry large members no view needs
// (toolUseResult repeats whole files); skipping them this way keeps Parse of a
// 4 MB transcript in the tens of milliseconds, and Count, which decodes no
// message at all, several times cheaper. The view never aliases the input:
// it can be kept after the input buffer is reused. Parse, Count and Diff keep
// no state and are safe for concurrent use.
//
// # Large documents
//
// Parse and Count take the document in memory. ParsePage and CountReader
// read it from an io.Reader, once, front to back, and hold only a page of
// the view: ParsePage(r, offset, limit) returns messages [offset,
// offset+limit) of Parse's view (limit <= 0: all from offset), with the
// Index they have in the whole view, the view's Format and Problems, and
// the number of messages of the whole view; CountReader returns Count. For
// every document the two give what Parse and Count give (the tests compare
// them on every document of this package's tests, broken versions of them
// and FuzzParsePage's inputs, read in chunks of every size), except:
//
//   - a record longer than MaxRecord (64 MiB) that the view needs fails
//     with ErrRecordTooLarge: a JSONL line, an element of the message
//     array, or another member of an object document (a blank line of any
//     length is fine). So does the first line of an object document that
//     holds a message array, past 1 MiB, when the document turns out to be
//     JSONL (the array is followed by more JSON on its line, or the
//     document is broken and a later line holds a record); and, past 1 MiB,
//     a document that is one record whose message array a later member
//     replaces;
//   - ParsePage returns at most 1,000 Problems: past that, the first 1,000
//     and one more saying that the others are not shown;
//   - assistant message ids, which merge the records of one API message
//     into one Message wherever they are, are remembered as 128-bit hashes
//     (a collision would merge two messages: about 10^-27 for a million);
//   - reading r may fail: the error is returned.
//
// Memory is bounded by the page, about two records (the value being read,
// and the line being read as JSONL when the document may turn out to be
// JSONL) and about 20 bytes (a 128-bit hash) per distinct assistant
// message id, whatever the document's size: a page of a 200 MB Claude Code
// transcript takes about 5 MiB of heap and a second, as fast as Count of
// the same bytes in memory and twice as fast as Parse (TestParsePageMemory
// and the benchmarks). Parse's format detection looks at a document in
// several ways (its first line, where the JSON value ends, whether a later
// line starts with a record); ParsePage keeps every answer it may need as
// it reads: an object document is read both as JSON and, line by line, as
// JSONL (which makes it about twice as slow as Parse; a JSONL document is
// recognised by its first line and read once), and an array document as
// JSONL only until its first element is read. Like Parse, they keep no
// state between calls and are safe for concurrent use.
//
// # Counting and diffing
//
// Count returns len(Parse(data).Messages) without building messages; it
// shares format detection and record classification with Parse, so the two
// always agree (FuzzParse checks it). Diff finds the longest common prefix of
// two views, comparing role, text, tool calls (id, name, input as JSON
// regardless of formatting) and tool results but not ids, timestamps or
// lines, and returns what each side has after it. DiffResult.Format prints it
// for people: a "@@ message N @@" header per differing position (N is the
// 0-based Index), the old message as "- role: text" lines, the new one as
// "+ role: text" lines, tool calls as "  tool_call Name {input}" and results
// as "  tool_result id: text", both cut to about 200 characters.
//
// DiffShared gives Diff of two documents read at offsets that share their
// first bytes (two versions of a growing transcript, which share their
// leading chunks in the store) without parsing what they share: the
// messages that start in the shared bytes are counted as CountReader
// counts them, and only what follows the last line that starts in them is
// parsed, in each document; a record there that merges into an earlier
// message (an assistant message split over records) makes it parse again
// from that message's first line. It applies to JSONL documents whose
// shared bytes show them to be JSONL (their first line that is not blank
// is a record and more follows it); for other formats it says so and the
// caller compares whole views. TestDiffSharedMatchesDiff checks it gives
// what Diff gives on thousands of pairs.
package conversation
