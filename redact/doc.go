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
// Detection. The rules are gitleaks' maintained default rule set
// (github.com/zricethezav/gitleaks/v8, its embedded gitleaks.toml, through
// its detect package), with two narrow complements of snap's own:
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
