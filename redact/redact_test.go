package redact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeSecrets returns one made-up secret of each kind the rules must find,
// built at run time so that no secret-shaped literal is in the source.
func fakeSecrets() map[string]string {
	r := rand.New(rand.NewSource(7))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rnd := func(set string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = set[r.Intn(len(set))]
		}
		return string(b)
	}
	var pem strings.Builder
	pem.WriteString("-----BEGIN RSA " + "PRIVATE KEY-----\n")
	for range 6 {
		pem.WriteString(rnd(alnum+"+/", 64) + "\n")
	}
	pem.WriteString("-----END RSA " + "PRIVATE KEY-----")
	return map[string]string{
		"aws-access-token":  "AKIA" + rnd("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
		"github-pat":        "ghp_" + rnd(alnum, 36),
		"gitlab-pat":        "glpat-" + rnd(alnum, 20),
		"slack-bot-token":   "xoxb-" + rnd("0123456789", 12) + "-" + rnd("0123456789", 12) + "-" + rnd(alnum, 24),
		"openai-api-key":    "sk-proj-" + rnd(alnum, 74) + "T3Blbk" + "FJ" + rnd(alnum, 74),
		"anthropic-api-key": "sk-ant-" + "api03-" + rnd(alnum, 93) + "AA",
		"private-key":       pem.String(),
		"jwt":               "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + rnd(alnum, 40) + "." + rnd(alnum+"_-", 43),
		"generic-api-key":   rnd(alnum, 32),
	}
}

// line is one JSONL transcript line whose message content is text.
func line(i int, text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "uuid": fmt.Sprint(i), "message": map[string]any{"role": "user", "content": text}})
	return string(b) + "\n"
}

func transcript(secrets map[string]string) []byte {
	var b strings.Builder
	i := 0
	for _, kind := range sortedKinds(secrets) {
		b.WriteString(line(i, "the agent reads main.go and runs the tests"))
		i++
		if kind == "generic-api-key" {
			b.WriteString(line(i, "cat .env\nexport API_KEY="+secrets[kind]+"\n"))
		} else {
			b.WriteString(line(i, "found "+secrets[kind]+" in the environment"))
		}
		i++
	}
	return []byte(b.String())
}

func sortedKinds(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// jsonForms are the ways a secret appears in a JSONL transcript.
func jsonForms(secret string) []string {
	b, _ := json.Marshal(secret)
	return []string{secret, string(b[1 : len(b)-1])}
}

func assertNoSecret(t *testing.T, what string, out []byte, secrets map[string]string) {
	t.Helper()
	for kind, s := range secrets {
		for _, form := range jsonForms(s) {
			if bytes.Contains(out, []byte(form)) {
				t.Errorf("%s still holds the %s secret", what, kind)
			}
		}
		if bytes.Contains(out, []byte(s[:len(s)/2])) && kind != "private-key" {
			t.Errorf("%s still holds half of the %s secret", what, kind)
		}
	}
}

func TestTranscriptEveryKind(t *testing.T) {
	secrets := fakeSecrets()
	in := transcript(secrets)
	out, rep, err := Bytes(in)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "the redacted transcript", out, secrets)
	for kind := range secrets {
		if !bytes.Contains(out, []byte(Placeholder(kind))) {
			t.Errorf("no %s placeholder in the output", Placeholder(kind))
		}
		found := false
		for _, f := range rep.Findings {
			found = found || f.Kind == kind
		}
		if !found {
			t.Errorf("no finding of kind %s", kind)
		}
	}
	// Every line is still valid JSON, and there are as many.
	if bytes.Count(out, []byte("\n")) != bytes.Count(in, []byte("\n")) {
		t.Errorf("line count changed")
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("invalid JSON line after redaction: %.80s", sc.Text())
		}
	}
	if int64(len(out)) != rep.OutSize || int64(len(in)) != rep.Size {
		t.Errorf("sizes: in %d out %d, report says %d, %d", len(in), len(out), rep.Size, rep.OutSize)
	}
	// Deterministic, and redacting again finds nothing.
	again, _, _ := Bytes(in)
	if !bytes.Equal(out, again) {
		t.Errorf("two redactions of the same input differ")
	}
	_, rep2, _ := Bytes(out)
	if !rep2.Clean() {
		t.Errorf("the redacted output has findings: %+v", rep2.Findings)
	}
	// Findings never hold a secret.
	js, _ := json.Marshal(rep.Findings)
	assertNoSecret(t, "the findings", js, secrets)
	for _, f := range rep.Findings {
		if f.Line < 1 || f.Offset < 0 || f.Fingerprint == "" || !strings.HasSuffix(f.Masked, "…") || len(f.Masked) > 4+len("…") {
			t.Errorf("finding %+v", f)
		}
		if want := string(in[f.Offset : f.Offset+int64(f.Length)]); fingerprint(want) != f.Fingerprint {
			t.Errorf("finding %s: offset and fingerprint disagree", f.Kind)
		}
		if got := bytes.Count(in[:f.Offset], []byte("\n")) + 1; got != f.Line {
			t.Errorf("finding %s: line %d, want %d", f.Kind, f.Line, got)
		}
	}
}

func TestPlainTextPEMKeepsLines(t *testing.T) {
	key := fakeSecrets()["private-key"]
	in := []byte("notes\nthe key:\n" + key + "\nend\n")
	out, _, err := Bytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(strings.Split(key, "\n")[2])) {
		t.Errorf("a line of the key survived:\n%s", out)
	}
	if bytes.Count(out, []byte("\n")) != bytes.Count(in, []byte("\n")) || !bytes.HasPrefix(out, []byte("notes\nthe key:\n")) || !bytes.HasSuffix(out, []byte("\nend\n")) {
		t.Errorf("lines around the key changed:\n%s", out)
	}
}

// JSON printed by a tool and recorded in a JSON string: gitleaks' generic
// rule does not see through \" ; snap:assigned-secret does.
func TestNestedJSONAssignment(t *testing.T) {
	v := "Zx81kQ0pLmN3vB7tY2wR"
	in := []byte(line(0, `{"service": {"api_key": "`+v+`", "retries": 3}}`))
	out, rep, err := Bytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(v)) || len(rep.Findings) == 0 {
		t.Fatalf("nested JSON value kept: %s", out)
	}
	if !json.Valid(bytes.TrimSpace(out)) {
		t.Errorf("invalid JSON: %s", out)
	}
	// Words and numbers assigned to such names are not secrets.
	for _, s := range []string{`{"input_tokens": 123456789}`, `max_tokens = "unlimited-value"`, `KEY=some_identifier_name`} {
		if _, rep, _ := Bytes([]byte(s)); !rep.Clean() {
			t.Errorf("%s: redacted %+v", s, rep.Findings)
		}
	}
}

// A match running across JSON strings (a PEM header in one string, its end
// in another) redacts only string contents: the line stays valid JSON.
func TestMatchAcrossStringsStaysJSON(t *testing.T) {
	body := strings.Repeat("QUJD", 30)
	in := []byte(`{"a": "-----BEGIN ` + `PRIVATE KEY-----\n` + body + `", "b": "x\u00e9` + body + ` END PRIVATE KEY-----"}` + "\n")
	out, rep, err := Bytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() {
		t.Fatalf("nothing found in %s", in)
	}
	if !json.Valid(bytes.TrimSpace(out)) {
		t.Errorf("invalid JSON after redaction: %s", out)
	}
	if bytes.Contains(out, []byte(body)) {
		t.Errorf("key body kept: %s", out)
	}
}

// An escape sequence is never cut: \n before a secret, \u in the middle.
func TestEscapesNotCut(t *testing.T) {
	jl := parseJSONLine(`{"k": "a\nb\u00e9c"}`)
	// "a\nb\u00e9c" contents start at 7; \n at 8..10, \u00e9 at 11..17.
	got := jl.pieces(9, 13)
	if len(got) != 1 || got[0] != [2]int{8, 17} {
		t.Errorf("pieces(9, 13) = %v, want [[8 17]]", got)
	}
	if got := jl.pieces(0, 2); len(got) != 0 {
		t.Errorf("structure redacted: %v", got)
	}
}

// A secret in a line longer than a window, at a window's edge, and again
// later in another fragment without its context.
func TestLongLineAndKnownSecret(t *testing.T) {
	s := fakeSecrets()
	tok := s["github-pat"]
	pad := strings.Repeat("lorem ipsum dolor ", (window-overlap-10)/18)
	api := s["generic-api-key"]
	in := []byte(line(0, pad+tok+strings.Repeat(" x", window)) + line(1, "API_KEY="+api) + line(2, strings.Repeat("y ", fragSize)) + line(3, "again: "+api+" and "+tok))
	out, rep, err := Bytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(tok)) || bytes.Contains(out, []byte(api)) {
		t.Errorf("secret kept")
	}
	known := 0
	for _, f := range rep.Findings {
		if f.Rule == "snap:known-secret" {
			known++
		}
	}
	if known == 0 {
		t.Errorf("no known-secret finding: %+v", rep.Findings)
	}
}

func TestApplyRefusesOtherInput(t *testing.T) {
	in := transcript(fakeSecrets())
	_, rep, _ := Bytes(in)
	if _, err := rep.Apply(bytes.NewReader(in[:len(in)-1]), io.Discard); err == nil {
		t.Errorf("Apply on a shorter input succeeded")
	}
}

func TestSecretFileName(t *testing.T) {
	for name, want := range map[string]bool{
		".env": true, "app/.env.local": true, "prod.env": true, "certs/server.pem": true, "id_rsa": true,
		".ssh/id_ed25519": true, "id_rsa.pub": false, "credentials.json": true, "gcp/credentials-prod.json": true,
		"main.go": false, "environment.go": false, "README.md": false, "keys.go": false,
		// Adversarial A6: any case; cloud CLIs' credential files; more kinds.
		".ENV": true, "server.PEM": true, "ID_RSA": true, ".aws/credentials": true, "home/.aws/credentials": true,
		".pgpass": true, "terraform.tfstate": true, "secrets.yaml": true, "ID_RSA.PUB": false, "aws/credentials.go": false,
	} {
		if _, got := SecretFileName(name); got != want {
			t.Errorf("SecretFileName(%q) = %v, want %v", name, got, want)
		}
	}
}

// genReader produces a transcript of size bytes without holding it.
type genReader struct {
	left int64
	buf  []byte
	i    int
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if len(g.buf) == 0 {
		g.buf = []byte(line(g.i, strings.Repeat("the agent edits the parser and the token count ", 8)))
		g.i++
	}
	n := copy(p, g.buf)
	n = int(min(int64(n), g.left))
	g.buf = g.buf[n:]
	g.left -= int64(n)
	return n, nil
}

// Scanning a large transcript holds a fragment at a time: the heap stays
// far below the document's size.
func TestScanMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("scans 64 MB")
	}
	const size = 64 << 20
	// Measured above what the package's other tests left (the
	// conformance test holds gitleaks' detector and a corpus).
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse-min(ms.HeapInuse, base.HeapInuse))
			}
		}
	}()
	start := time.Now()
	rep, err := Scan(&genReader{left: size})
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != size {
		t.Fatalf("scanned %d bytes", rep.Size)
	}
	t.Logf("64 MB in %v, peak heap in use %d MB above the %d MB before", time.Since(start), peak>>20, base.HeapInuse>>20)
	if peak > 48<<20 {
		t.Errorf("peak heap %d MB scanning a 64 MB stream", peak>>20)
	}
}

// ScanAfter on a grown document gives what Scan gives, having scanned only
// the new part; on a document that does not begin with the old one too.
func TestScanAfterIsScan(t *testing.T) {
	s := fakeSecrets()
	var doc strings.Builder
	var prev *Report
	open := func(b []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	r := rand.New(rand.NewSource(3))
	kinds := sortedKinds(s)
	resumed := 0
	for step := 0; step < 12; step++ {
		for range 40 + r.Intn(200) {
			switch r.Intn(40) {
			case 0:
				doc.WriteString(line(step, "found "+s[kinds[r.Intn(len(kinds))]]))
			case 1:
				doc.WriteString(line(step, strings.Repeat("long output ", 4000)+s["github-pat"]))
			case 2:
				doc.WriteString("plain text, then a key\n" + s["private-key"] + "\n")
			default:
				doc.WriteString(line(step, strings.Repeat("the agent edits the parser ", 1+r.Intn(40))))
			}
		}
		b := []byte(doc.String())
		if step == 6 {
			b = append([]byte("changed"), b[7:]...) // not the old document's beginning
		}
		if step%4 == 3 {
			b = b[:len(b)-5] // ends inside a line
		}
		want, err := Scan(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ScanAfter(prev, open(b))
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && prev.resume != nil && bytes.HasPrefix(b, []byte(doc.String()[:prev.resume.pos])) {
			resumed++
		}
		if fmt.Sprint(got.Findings) != fmt.Sprint(want.Findings) || got.OutSize != want.OutSize {
			t.Fatalf("step %d: ScanAfter found %d (out %d), Scan %d (out %d)", step, len(got.Findings), got.OutSize, len(want.Findings), want.OutSize)
		}
		var g, w bytes.Buffer
		got.Apply(bytes.NewReader(b), &g)
		want.Apply(bytes.NewReader(b), &w)
		if !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Fatalf("step %d: outputs differ", step)
		}
		prev = got
	}
	if resumed < 6 {
		t.Errorf("resumed %d times", resumed)
	}
}

// A transcript that grows by less than a fragment at each step is
// resumed at every step, not every other one: a scan resumed from a point
// that found no new whole fragment keeps that point (an export scanned the
// whole transcript again at every second checkpoint).
func TestScanAfterSmallAppendsKeepResuming(t *testing.T) {
	var doc strings.Builder
	for i := range 400 {
		doc.WriteString(line(0, fmt.Sprintf("the agent edits the parser, step %d of the beginning", i)))
	}
	prev, err := Scan(strings.NewReader(doc.String()))
	if err != nil || prev.resume == nil {
		t.Fatalf("first scan: %v, resume point %v", err, prev.resume)
	}
	for step := 1; step <= 20; step++ {
		doc.WriteString(line(step, "a short message"))
		b := []byte(doc.String())
		got, err := ScanAfter(prev, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if got.resume == nil || got.resume.pos < prev.resume.pos {
			t.Fatalf("step %d: no resume point after a resumed scan (had %d)", step, prev.resume.pos)
		}
		want, _ := Scan(bytes.NewReader(b))
		if got.OutSize != want.OutSize || len(got.Findings) != len(want.Findings) || got.Size != want.Size {
			t.Fatalf("step %d: ScanAfter %+v, Scan %+v", step, got, want)
		}
		prev = got
	}
}

// A "gitleaks:allow" marker on a transcript's line hides nothing: anyone
// an agent quotes can write it (gitleaks honours it in vetted source).
func TestAllowMarkerIgnored(t *testing.T) {
	s := fakeSecrets()
	for _, k := range []string{"github-pat", "aws-access-token"} {
		doc := []byte(`{"role":"user","content":"token ` + s[k] + ` # gitleaks:allow"}` + "\n")
		out, rep, err := Bytes(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) == 0 || bytes.Contains(out, []byte(s[k])) {
			t.Errorf("%s next to gitleaks:allow: %d findings, redacted %q", k, len(rep.Findings), out)
		}
	}
}

// Adversarial A3: a private key caught half written (its BEGIN line and
// part of its body, no END line yet), in plain text and JSON-escaped.
func TestPartialPrivateKey(t *testing.T) {
	body := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", 3)
	for _, doc := range []string{
		"the deploy key:\n-----BEGIN RSA " + "PRIVATE KEY-----\n" + body + "\n" + body + "\n",
		`{"role":"user","content":"-----BEGIN ` + `PRIVATE KEY-----\n` + body + `\n` + body + `"}` + "\n",
	} {
		out, rep, err := Bytes([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) == 0 || strings.Contains(string(out), body[:40]) {
			t.Errorf("a half-written key: %d findings, out %q", len(rep.Findings), out)
		}
		if strings.HasPrefix(doc, "{") && !json.Valid(bytes.TrimSpace(out)) {
			t.Errorf("the JSON line is no longer valid: %q", out)
		}
	}
}

// Adversarial A5: a secret written with JSON \u escapes is what a JSON
// reader shows: it is redacted where it stands, escapes and all, and the
// line stays valid JSON.
func TestUnicodeEscapedSecret(t *testing.T) {
	s := fakeSecrets()
	aws, gh := s["aws-access-token"], s["github-pat"]
	doc := `{"role":"user","content":"id \u0041` + aws[1:] + ` and ghp\u005f` + gh[4:] + ` \\u0041 stays"}` + "\n"
	out, rep, err := Bytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Content string }
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil {
		t.Fatalf("not JSON any more: %v: %q", err, out)
	}
	if strings.Contains(v.Content, aws) || strings.Contains(v.Content, gh) || len(rep.Findings) < 2 {
		t.Fatalf("escaped secrets left: %q (%d findings)", v.Content, len(rep.Findings))
	}
	if !strings.Contains(v.Content, `\u0041 stays`) {
		t.Fatalf("an escaped backslash was taken for an escape: %q", v.Content)
	}
}

// Name reads '_' as a space: gitleaks' rules want a word boundary before a
// key, which an identifier's '_' is not (adversarial A4).
func TestName(t *testing.T) {
	key := "AKIA" + "QYLPMN5HFIQR7XYZ"
	for in, want := range map[string]string{
		"msg_" + key:           "msg_[REDACTED:aws-access-token]",
		"lbl-" + key + "_x":    "lbl-[REDACTED:aws-access-token]_x",
		"/home/u/tok-" + key:   "/home/u/tok-[REDACTED:aws-access-token]",
		"plain_name-of.a/file": "plain_name-of.a/file",
	} {
		got, rep, err := Name(in)
		if err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", in, got, err, want)
		}
		if (got != in) == rep.Clean() {
			t.Errorf("Name(%q): report clean=%v though the text changed=%v", in, rep.Clean(), got != in)
		}
	}
}
