package redact

// The rule set and the detector against the real gitleaks (a test-only
// import: nothing of gitleaks is linked into snap).

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// The embedded rule set is gitleaks.toml of the gitleaks module go.mod
// pins, byte for byte (go generate ./redact refreshes it), and the
// licence beside it is that module's.
func TestEmbeddedRulesArePinned(t *testing.T) {
	if gitleaksTOML != config.DefaultConfig {
		t.Fatalf("redact/gitleaks.toml differs from the pinned gitleaks module's config/gitleaks.toml: run go generate ./redact")
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		t.Skipf("go mod download: %v (the licence is not checked)", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(m.Dir, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("LICENSE.gitleaks")
	if err != nil || string(got) != string(want) {
		t.Errorf("redact/LICENSE.gitleaks differs from the pinned gitleaks module's LICENSE: run go generate ./redact")
	}
}

// Every regexp of the rule set compiles (they compile lazily, one by one,
// when a scan first needs them), and every secretGroup is a group.
func TestRulesCompile(t *testing.T) {
	rs, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	var c tomlConfig
	if err := decodeTOML(gitleaksTOML, &c); err != nil {
		t.Fatal(err)
	}
	for _, tr := range c.Rules {
		if tr.Regex == "" {
			continue
		}
		re, err := regexp.Compile(tr.Regex)
		if err != nil {
			t.Errorf("rule %s: %v", tr.ID, err)
		} else if tr.SecretGroup > re.NumSubexp() {
			t.Errorf("rule %s: secretGroup %d of %d", tr.ID, tr.SecretGroup, re.NumSubexp())
		}
	}
	for _, r := range rs.rules {
		for _, a := range append(slices.Clone(rs.global), r.allow...) {
			if a.re != nil {
				a.re()
			}
		}
	}
	if len(rs.rules) != len(c.Rules) || len(rs.rules) < 200 {
		t.Errorf("%d rules of %d", len(rs.rules), len(c.Rules))
	}
}

// generic-api-key runs on windows (genericWindows), which were made for
// its present regexp: a rule set that changes it runs it on whole
// fragments until genericWindows is checked against the new one.
func TestGenericWindowsApply(t *testing.T) {
	rs, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.rules {
		if r.id == generic && !r.windowed {
			t.Errorf("generic-api-key's regexp is not the one genericWindows was made for (genericRegex)")
		}
	}
}

// gitleaksFindings is what gitleaks' DetectString finds in text, in the
// form conformance compares: rule, offset of the match, match, secret.
func gitleaksFindings(d *detect.Detector, text string) []string {
	nl := newlines(text)
	var out []string
	for _, f := range d.DetectString(text) {
		off := f.StartColumn - 1
		if f.StartLine > 0 {
			off += nl[f.StartLine-1]
		}
		out = append(out, fmt.Sprintf("%s@%d match=%q secret=%q", f.RuleID, off, f.Match, f.Secret))
	}
	sort.Strings(out)
	return out
}

func ourFindings(rs *ruleSet, text string) []string {
	var out []string
	for _, m := range rs.detect(text, strings.ToLower(text)) {
		out = append(out, fmt.Sprintf("%s@%d match=%q secret=%q", m.rule.id, m.start, m.match, m.secret))
	}
	sort.Strings(out)
	return out
}

// sample writes a random string the syntax tree accepts (assertions are
// left out, so it may not match where it lands: all the better).
func sample(r *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && c < utf8.RuneSelf && r.Intn(2) == 0 {
				c = []rune(strings.ToUpper(string(c)))[0]
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		var ascii []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := max(re.Rune[i], ' '); c <= min(re.Rune[i+1], '~'); c++ {
				ascii = append(ascii, c)
			}
		}
		if len(ascii) > 0 {
			b.WriteRune(ascii[r.Intn(len(ascii))])
		} else if len(re.Rune) > 0 {
			b.WriteRune(re.Rune[0])
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte("abcXYZ019 _-=:\"'"[r.Intn(16)])
	case syntax.OpCapture:
		sample(r, re.Sub[0], b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo, hi = 1, 4
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 4 + r.Intn(8)*r.Intn(30)
			}
		}
		for range lo + r.Intn(hi-lo+1) {
			sample(r, re.Sub[0], b)
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			sample(r, s, b)
		}
	case syntax.OpAlternate:
		sample(r, re.Sub[r.Intn(len(re.Sub))], b)
	}
}

// nearMisses are s and variants of it that a rule may or may not accept.
func nearMisses(r *rand.Rand, s string) []string {
	out := []string{s}
	if len(s) > 2 {
		i := r.Intn(len(s))
		out = append(out, s[:len(s)-1], s+"x9", s[1:], s[:i]+"-"+s[i+1:], s[:i]+"\n"+s[i:], strings.ToLower(s), strings.ToUpper(s),
			strings.Repeat(s[i:i+1], len(s)))
	}
	return out
}

// conformanceCorpus is the generated text: for every rule, samples of its
// regexp and near misses of them, in the contexts a transcript has them;
// then hand-made lines for generic-api-key's windows and gitleaks' quirks.
func conformanceCorpus(t *testing.T) []string {
	r := rand.New(rand.NewSource(11))
	var c tomlConfig
	if err := decodeTOML(gitleaksTOML, &c); err != nil {
		t.Fatal(err)
	}
	contexts := []func(s string) string{
		func(s string) string { return "found " + s + " in the environment\n" },
		func(s string) string { return "export API_KEY=" + s + "\n" },
		func(s string) string { return `{"token": "` + s + `", "n": 1}` + "\n" },
		func(s string) string { return line(0, "cat .env\nSECRET="+s+"\n") },
		func(s string) string { return "  password: '" + s + "'\n" },
		func(s string) string { return s + "\n" },
		func(s string) string { return "prefix" + s + "suffix\n" },
	}
	var lines []string
	for _, tr := range c.Rules {
		if tr.Regex == "" {
			continue
		}
		re, err := syntax.Parse(tr.Regex, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		re = re.Simplify()
		for range 4 {
			var b strings.Builder
			sample(r, re, &b)
			for _, s := range nearMisses(r, b.String()) {
				lines = append(lines, contexts[r.Intn(len(contexts))](s))
			}
		}
		for _, k := range tr.Keywords {
			lines = append(lines, k+" = "+randToken(r, 8+r.Intn(40))+"\n")
		}
	}
	// generic-api-key: operators, quoting, values around its limits, a
	// low-entropy match before another, JSON-escaped newlines, stop words.
	ops := []string{"=", ">", ":", "::=", ":::=", "||", "=>", "?=", ",", " = ", ": ", "\t=\t", "'='", `":"`, `", "`, "==", "=\\\""}
	names := []string{"api_key", "API_KEY", "apiKey", "aPiKey", "access_token", "auth", "x-auth-token", "credentials", "creds",
		"password", "passwd", "db.password", "secret", "client-secret", "my.very.long.prefix.of.fifty.characters.or.more_token",
		"token and a few words", "key", "monkey", "keystone", "Key", "TOKEN"}
	for range 1500 {
		name, op := names[r.Intn(len(names))], ops[r.Intn(len(ops))]
		var v string
		switch r.Intn(6) {
		case 0:
			v = randToken(r, 5+r.Intn(20))
		case 1:
			v = strings.Repeat("a", 8+r.Intn(20))
		case 2:
			v = randToken(r, 140+r.Intn(100))
		case 3:
			v = strings.Repeat("=", r.Intn(8)) + randToken(r, 8+r.Intn(10))
		case 4:
			v = randToken(r, 10) + "_token" + ops[r.Intn(len(ops))] + randToken(r, 20)
		default:
			v = randToken(r, 10+r.Intn(60))
		}
		tail := []string{"", "\n", `\n`, `\r`, " ", ";", "\"", "'", "`", "}", ".", "x", `\"`}[r.Intn(13)]
		l := name + op + v + tail
		switch r.Intn(4) {
		case 0:
			l = line(0, l)
		case 1:
			l = "KEY=" + strings.Repeat("b", 16) + `\n` + l + "\n"
		case 2:
			l = "notes: " + l + " and more text\n"
		default:
			l += "\n"
		}
		lines = append(lines, l)
	}
	lines = append(lines,
		"api_key = "+randToken(r, 32)+" # gitleaks:allow\n",
		"first line gitleaks:allow\nsecond line password="+randToken(r, 30),
		"token=abcdefghijklmnopqrstuvwxyz0123\n",
		"token=014df517-39d1-4453-b7b3-9930c563627c\n",
		"API_KEY=${API_KEY}\nsecret: {{ .Values.secret }}\npassword=/usr/local/bin/thing\n",
		"token=\u212a"+randToken(r, 20)+"\n", // KELVIN SIGN: lower case changes length
		"tokenſ="+randToken(r, 20)+"\n",
		"token=\xff"+randToken(r, 20)+"\n",
		"password=aaaaaaaaaaaaaaaaaaaaaaaa\\ntoken="+randToken(r, 24)+"\n",
		"password=aaaaaaaaaaaa_token:"+randToken(r, 24)+"\n",
		`curl -s -H "Authorization: Bearer `+randToken(r, 40)+`" https://api.example.com/v1`+"\n",
		"curl https://example.com \\\n  --header 'X-Api-Key: "+randToken(r, 32)+"'\n",
	)
	return lines
}

func randToken(r *rand.Rand, n int) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.Intn(len(set))]
	}
	return string(b)
}

// chunks groups lines into texts of about size bytes, as Scan's
// fragments group them.
func chunks(lines []string, size int) []string {
	var out []string
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		if b.Len() >= size {
			out = append(out, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

func splitLines(s string) []string {
	return strings.SplitAfter(s, "\n")
}

// Conformance: on every text of the corpus, line by line and in
// fragments of lines, the detector finds what gitleaks' DetectString
// finds: the same rules, matches at the same offsets, the same secrets.
func TestConformance(t *testing.T) {
	logging.Logger = zerolog.Nop()
	gl, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	corpus := map[string][]string{}
	// The test transcripts and the nine kinds.
	s := fakeSecrets()
	tok, api := s["github-pat"], s["generic-api-key"]
	corpus["test transcripts"] = splitLines(string(transcript(s)) + line(1, `{"service": {"api_key": "Zx81kQ0pLmN3vB7tY2wR", "retries": 3}}`) +
		`{"a": "-----BEGIN ` + `PRIVATE KEY-----\n` + strings.Repeat("QUJD", 30) + `", "b": "x\u00e9 END PRIVATE KEY-----"}` + "\n" +
		line(2, strings.Repeat("lorem ipsum dolor ", 100)+tok) + line(3, "API_KEY="+api) + "notes\nthe key:\n" + s["private-key"] + "\nend\n")
	var kinds []string
	for _, k := range sortedKinds(s) {
		kinds = append(kinds, "found "+s[k]+" here\n", line(0, "export X="+s[k]))
	}
	corpus["the nine kinds"] = kinds
	corpus["generated"] = conformanceCorpus(t)
	// The real transcripts (../shared/realdata from the project root).
	names, _ := filepath.Glob("../../shared/realdata/*")
	if len(names) == 0 {
		t.Logf("no real transcripts in ../shared/realdata: left out")
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		corpus[filepath.Base(n)] = splitLines(string(b))
	}
	total, found, rules := 0, 0, map[string]bool{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range corpus {
			if !yield(k) {
				return
			}
		}
	}) {
		lines := corpus[name]
		texts := append(slices.Clone(lines), chunks(lines, fragSize)...)
		for _, text := range texts {
			if text == "" {
				continue
			}
			total++
			// The one deliberate difference: "gitleaks:allow" hides
			// nothing here (rules.go, finding).
			want, got := gitleaksFindings(gl, strings.ReplaceAll(text, "gitleaks:allow", "gitleaks-allow")), ourFindings(rs, text)
			found += len(want)
			for _, f := range want {
				rules[f[:strings.IndexByte(f, '@')]] = true
			}
			if !slices.Equal(want, got) {
				t.Errorf("%s: %.120q:\n gitleaks %q\n snap     %q", name, text, want, got)
			}
		}
	}
	var none []string
	for _, r := range rs.rules {
		if r.re != nil && !rules[r.id] {
			none = append(none, r.id)
		}
	}
	t.Logf("%d texts, %d gitleaks findings of %d rules (none of %q)", total, found, len(rules), none)
	if found < 500 {
		t.Errorf("only %d findings: the corpus misses its point", found)
	}
}

func TestRequiredLiterals(t *testing.T) {
	for expr, want := range map[string]string{
		`\b(ey[a-zA-Z0-9]{17,}\.ey[a-z]{17,})(?:['"]|$)`: `[[{ey false}] [{.ey false}]]`,
		`(?i)\b(?:hvs\.[\w-]{9}|s\.x)`:                   `[[{hvs. true} {s.x true}]]`,
		`a?b*(?:c|d*)`:                                   `[]`,
		`(?i)ſx`:                                         `[[{sx true}]]`,
	} {
		re, _ := syntax.Parse(expr, syntax.Perl)
		if got := fmt.Sprint(requiredLiterals(re)); got != want {
			t.Errorf("%s: %s, want %s", expr, got, want)
		}
	}
	if holds("a.ey", "a.ey", [][]literal{{{"ey", false}}, {{"x", false}, {".e", false}}}) != true ||
		holds("EY", "ey", [][]literal{{{"ey", false}}}) != false || holds("EY", "ey", [][]literal{{{"ey", true}}}) != true {
		t.Errorf("holds")
	}
}
