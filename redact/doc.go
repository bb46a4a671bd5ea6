// Package redact finds secrets in a document (an agent's transcript, a
// context or tasks document) and writes the document with each secret
// replaced by a placeholder naming its kind, "[REDACTED:<kind>]". It is what
// the git bridge runs on every state document before it leaves the machine
// (design §9); the snap store itself always keeps the exact bytes.
//
// Contract. Input bytes → output bytes + findings. A Finding says what was
// found and where: Kind (the placeholder's name), Rule (which rule found
// it: "gitleaks:<rule id>" or "snap:<rule>"), Offset and Line (1-based) of
// the secret in the input, Length, a Fingerprint (the first 12 hex digits
// of the SHA-256 of the secret: the same secret gives the same fingerprint,
// so a report can say "this key again" without showing it) and Masked (at
// most a 4-character prefix followed by "…"). A Finding never holds the
// secret itself. The output is a function of the input alone (and of the
// rule set compiled in): the same document always redacts to the same
// bytes, so exporting a checkpoint twice writes the same git objects.
//
// Detection. The rules are gitleaks' maintained default rule set, taken as
// data: gitleaks.toml is config/gitleaks.toml of the gitleaks module go.mod
// pins (v8.30.1), byte for byte, embedded, under gitleaks' MIT licence
// (LICENSE.gitleaks); go generate ./redact refreshes both from the pin and
// TestEmbeddedRulesArePinned fails when they differ. rules.go reads it with
// go-toml/v2 and matches it as gitleaks' detect package does with its
// default configuration: keywords as a case-insensitive prefilter, the
// rule's regexp, secretGroup (else the first non-empty group, from the
// regexp run again on the match alone), the Shannon entropy threshold
// (gitleaks' formula; its "gitleaks:allow" line marker is NOT honoured: a transcript quotes anyone), global and
// per-rule allowlists (regexes, joined as gitleaks joins them, on the
// secret, the match or the line; stopwords; condition OR/AND; paths and
// commits never match, a document has neither), rules with a path never
// firing, and the generic-rule filter (a generic finding goes where
// another rule found a secret holding it on the same line). Tags are
// report metadata: no effect. Two speed-ups keep the result exact: a rule
// runs only on text holding the literals its regexp requires
// (requiredLiterals), and generic-api-key only on windows around its
// keywords that hold every match it can make (genericWindows).
// TestConformance compares the findings (rule, match offset, match,
// secret) with gitleaks' own DetectString, line by line and in fragments,
// on the test transcripts, the real ones in ../shared/realdata and
// generated samples and near misses of every rule: no difference, no
// exception. gitleaks itself is a test-only import: no gitleaks, viper
// or sprig package is linked into snap.
//
// Cost. Nothing is parsed or compiled at package init: the rule set is
// read on the first scan (about 20 ms) and each regexp compiled when a
// text first needs it. Measured on 2 shared cores, before (777f5d4,
// gitleaks linked) and after, 15 interleaved runs each of
//
//	GODEBUG=inittrace=1 bin/snap --version 2>&1 | awk '/^init/ {s+=$5} END {print s}'
//
// init total median 22.8 ms before, 17.4 ms after (239 → 180 packages with
// an init, 585 → 436 dependencies; redact itself 0.001 ms, go-toml/v2
// 0.07 ms, against 0.5-5 ms and 2 packages for BurntSushi/toml); binary
// (ls -l) 35 259 717 → 27 566 147 bytes (-7.7 MB). Scan speed, the real
// transcripts repeated to 10 MB and 100 MB
// (SNAP_REDACT_SPEED_FILE=FILE go test ./redact -run ScanSpeedFile -v):
// 5.6 → 11.3 MB/s and 5.7 → 12.2 MB/s; the generated 64 MB transcript of
// TestScanMemoryBounded about the same (2.0-2.4 s before, 2.4-2.5 s
// after: its heap is 6 MB instead of 38, so the collector runs more
// often; with GOGC=400 2.05 s before, 1.94 s after).
// Beside gitleaks' rules, two narrow complements of snap's own:
//   - snap:assigned-secret: a value of at least 8 characters assigned (= or
//     :) to a name containing KEY, TOKEN, SECRET or PASSWORD (PASSWD, PWD),
//     whose Shannon entropy is at least 3 bits a character and which has a
//     digit or both cases. gitleaks' generic-api-key covers the plain forms,
//     but not JSON nested in a JSON string (\"api_key\": \"...\"), which is
//     how a transcript records a tool's JSON output.
//   - snap:known-secret: every later occurrence of a secret already found in
//     the document, whatever surrounds it (a key found in API_KEY=... and
//     then pasted alone).
//
// Every occurrence of a found secret in the text the rule saw is redacted,
// not only the one the rule matched.
//
// JSON. A transcript is JSON lines, so a secret in it is JSON-escaped (a
// PEM key's newlines are the two characters \n; gitleaks' private-key rule
// matches that form too). On a line that is valid JSON, a redaction covers
// only the content of string literals and never splits an escape sequence,
// so every valid JSON line stays valid JSON (a match that runs across
// strings redacts its part in each of them). Other lines are redacted as
// text.
//
// Memory. Scan reads the input once, line by line: lines are scanned in
// fragments of about 32 KiB of whole lines (gitleaks' prefilter works per
// fragment, and its regexps slow down on long inputs), a line longer than
// that in overlapping windows, a PEM block that spans lines as one
// fragment. It holds one fragment (or one line) at a time and, per finding,
// a few words. Apply then streams the input again with the replacements.
// ScanAfter scans a grown document (a transcript, checkpoint after
// checkpoint) from where the scan of its previous version can go on,
// having checked by hash that it begins with the same bytes; its report is
// the one Scan would give.
//
// Files. SecretFileName says whether a file's name marks it as holding
// secrets (.env*, *.pem, id_rsa*, credentials*.json, ...): the git bridge
// holds such files back unless git tracks them or the user asks.
package redact
