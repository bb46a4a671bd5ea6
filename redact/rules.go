package redact

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// gitleaksTOML is gitleaks' default rule set: config/gitleaks.toml of the
// gitleaks module go.mod pins, byte for byte (TestEmbeddedRulesArePinned),
// under gitleaks' MIT licence (LICENSE.gitleaks). go generate refreshes
// both from the module go.mod pins.
//
//go:generate go run gen_gitleaks.go
//go:embed gitleaks.toml
var gitleaksTOML string

// The rule set as gitleaks.toml writes it (what gitleaks reads through
// viper into config.ViperConfig). A key this does not know is an error:
// a newer rule set using a feature this detector lacks fails the tests
// rather than being half understood.
type (
	tomlConfig struct {
		Title       string          `toml:"title"`
		Description string          `toml:"description"`
		MinVersion  string          `toml:"minVersion"`
		Allowlist   *tomlAllowlist  `toml:"allowlist"` // the deprecated single form
		Allowlists  []tomlAllowlist `toml:"allowlists"`
		Rules       []tomlRule      `toml:"rules"`
	}
	tomlRule struct {
		ID          string          `toml:"id"`
		Description string          `toml:"description"`
		Path        string          `toml:"path"`
		Regex       string          `toml:"regex"`
		SecretGroup int             `toml:"secretGroup"`
		Entropy     float64         `toml:"entropy"`
		Keywords    []string        `toml:"keywords"`
		Tags        []string        `toml:"tags"` // report metadata only: no effect on detection
		Allowlist   *tomlAllowlist  `toml:"allowlist"`
		Allowlists  []tomlAllowlist `toml:"allowlists"`
	}
	tomlAllowlist struct {
		Description string   `toml:"description"`
		Condition   string   `toml:"condition"`
		Commits     []string `toml:"commits"`
		Paths       []string `toml:"paths"`
		RegexTarget string   `toml:"regexTarget"`
		Regexes     []string `toml:"regexes"`
		StopWords   []string `toml:"stopwords"`
		TargetRules []string `toml:"targetRules"` // global allowlists only
	}
)

// ruleSet is the parsed rule set. Regexps are compiled on first use, each
// on its own: a small document compiles only the rules its keywords call.
type ruleSet struct {
	rules    []*rule
	global   []*allowlist
	keywords keywordIndex
}

type rule struct {
	id          string
	re          func() *regexp.Regexp
	required    func() [][]literal // what any match holds (requiredLiterals)
	secretGroup int
	entropy     float64
	keywords    []int // into ruleSet.keywords.words; none: the rule always runs
	allow       []*allowlist
	// generic: gitleaks drops a finding of a rule whose id says "generic"
	// where another rule found a secret containing it on the same line.
	generic bool
	// windowed: generic-api-key as genericSites knows it, run on windows
	// around its keywords only (see generic).
	windowed bool
}

type allowlist struct {
	and    bool   // condition AND: every check must hold
	target string // what regexes test: "" (the secret), "match" or "line"
	re     func() *regexp.Regexp
	stop   []string // lower case
	// Paths and commits never match here (a document has neither): with
	// AND they make the allowlist fail, with OR they add nothing.
	pathsOrCommits bool
}

// genericRegex is the generic-api-key regexp genericSites was written for:
// another one (a newer rule set) runs on whole fragments, slower but exact
// (TestGenericWindowsApply says so).
const genericRegex = `(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)`

var loadRules = sync.OnceValues(func() (*ruleSet, error) { return parseRules(gitleaksTOML) })

// lazyRegexp compiles expr on first use.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// decodeTOML reads a rule set, refusing keys tomlConfig does not know.
func decodeTOML(text string, c *tomlConfig) error {
	dec := toml.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	return dec.Decode(c)
}

// parseRules reads a rule set as gitleaks' config.ViperConfig.Translate
// does, for what a document without a path needs. It compiles no regexp
// but the few path patterns.
func parseRules(text string) (*ruleSet, error) {
	var c tomlConfig
	if err := decodeTOML(text, &c); err != nil {
		return nil, fmt.Errorf("redact: gitleaks rule set: %w", err)
	}
	rs := &ruleSet{}
	byID := map[string]*rule{}
	kw := map[string]int{}
	for _, tr := range c.Rules {
		if strings.TrimSpace(tr.ID) == "" {
			return nil, errors.New("redact: gitleaks rule set: a rule without id")
		}
		r := &rule{id: tr.ID, secretGroup: tr.SecretGroup, entropy: tr.Entropy,
			generic: strings.Contains(strings.ToLower(tr.ID), "generic")}
		if tr.Regex == "" && tr.Path == "" {
			return nil, fmt.Errorf("redact: gitleaks rule %s: neither regex nor path", tr.ID)
		}
		// A rule with a path finds nothing in a document without one
		// (gitleaks' detectRule) unless its path pattern accepts "".
		// (TestRulesCompile checks that every regexp compiles, and that
		// a rule's secretGroup is one of its groups.)
		if tr.Regex != "" && (tr.Path == "" || regexp.MustCompile(tr.Path).MatchString("")) {
			r.re, r.required = lazyRegexp(tr.Regex), lazyRequired(tr.Regex)
			r.windowed = tr.ID == generic && tr.Regex == genericRegex
		}
		for _, k := range tr.Keywords {
			k = strings.ToLower(k)
			i, ok := kw[k]
			if !ok {
				i = len(rs.keywords.words)
				kw[k] = i
				rs.keywords.words = append(rs.keywords.words, k)
			}
			r.keywords = append(r.keywords, i)
		}
		if tr.Allowlist != nil {
			if len(tr.Allowlists) > 0 {
				return nil, fmt.Errorf("redact: gitleaks rule %s: [rules.allowlist] alongside [[rules.allowlists]]", tr.ID)
			}
			tr.Allowlists = []tomlAllowlist{*tr.Allowlist}
		}
		for _, ta := range tr.Allowlists {
			if len(ta.TargetRules) > 0 {
				return nil, fmt.Errorf("redact: gitleaks rule %s: targetRules in a rule's allowlist", tr.ID)
			}
			a, err := parseAllowlist(ta)
			if err != nil {
				return nil, fmt.Errorf("redact: gitleaks rule %s: %w", tr.ID, err)
			}
			r.allow = append(r.allow, a)
		}
		if byID[r.id] != nil {
			return nil, fmt.Errorf("redact: gitleaks rule %s twice", r.id)
		}
		byID[r.id] = r
		rs.rules = append(rs.rules, r)
	}
	if c.Allowlist != nil {
		if len(c.Allowlists) > 0 {
			return nil, errors.New("redact: gitleaks rule set: [allowlist] alongside [[allowlists]]")
		}
		c.Allowlists = []tomlAllowlist{*c.Allowlist}
	}
	for _, ta := range c.Allowlists {
		a, err := parseAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("redact: gitleaks global allowlist: %w", err)
		}
		if len(ta.TargetRules) == 0 {
			rs.global = append(rs.global, a)
		}
		for _, id := range ta.TargetRules {
			r := byID[id]
			if r == nil {
				return nil, fmt.Errorf("redact: gitleaks global allowlist: target rule %s does not exist", id)
			}
			r.allow = append(r.allow, a)
		}
	}
	rs.keywords.build()
	return rs, nil
}

// parseAllowlist is gitleaks' parseAllowlist and Allowlist.Validate: the
// regexes joined into one alternation (as gitleaks joins them, flags and
// all), the stop words lower case.
func parseAllowlist(ta tomlAllowlist) (*allowlist, error) {
	a := &allowlist{pathsOrCommits: len(ta.Paths) > 0 || len(ta.Commits) > 0}
	switch strings.ToUpper(ta.Condition) {
	case "AND", "&&":
		a.and = true
	case "", "OR", "||":
	default:
		return nil, fmt.Errorf("unknown allowlist condition %q", ta.Condition)
	}
	switch ta.RegexTarget {
	case "", "secret":
	case "match", "line":
		a.target = ta.RegexTarget
	default:
		return nil, fmt.Errorf("unknown allowlist regexTarget %q", ta.RegexTarget)
	}
	if len(ta.Commits) == 0 && len(ta.Paths) == 0 && len(ta.Regexes) == 0 && len(ta.StopWords) == 0 {
		return nil, errors.New("an empty allowlist")
	}
	if len(ta.Regexes) > 0 {
		a.re = lazyRegexp("(?:" + strings.Join(ta.Regexes, "|") + ")")
	}
	for _, w := range ta.StopWords {
		w = strings.ToLower(w)
		if !slices.Contains(a.stop, w) {
			a.stop = append(a.stop, w)
		}
	}
	return a, nil
}

// allows is gitleaks' checkFindingAllowed for one allowlist.
func (a *allowlist) allows(f *match, line string) bool {
	target := f.secret
	switch a.target {
	case "match":
		target = f.match
	case "line":
		target = line
	}
	regexOK := a.re != nil && target != "" && a.re().MatchString(target)
	stopOK := false
	if len(a.stop) > 0 && f.secret != "" {
		s := strings.ToLower(f.secret)
		for _, w := range a.stop {
			if strings.Contains(s, w) {
				stopOK = true
				break
			}
		}
	}
	if !a.and {
		return regexOK || stopOK
	}
	return !a.pathsOrCommits && (a.re == nil || regexOK) && (len(a.stop) == 0 || stopOK)
}

// literal is a string a regexp's matches hold: as it is, or (fold) in
// any case, lower case here.
type literal struct {
	s    string
	fold bool
}

// lazyRequired is requiredLiterals of expr, on first use.
func lazyRequired(expr string) func() [][]literal {
	return sync.OnceValue(func() [][]literal {
		re, err := syntax.Parse(expr, syntax.Perl) // as regexp.Compile parses
		if err != nil {
			return nil
		}
		return requiredLiterals(re)
	})
}

// requiredLiterals returns clauses such that every match of re holds,
// for each clause, one of its literals. A rule runs only on a text that
// does (holds): a cheap test that skips many a regexp gitleaks' keywords
// let run (jwt's keyword "ey" is in "key" and "they"; its regexp needs
// ".ey", case sensitive).
func requiredLiterals(re *syntax.Regexp) [][]literal {
	switch re.Op {
	case syntax.OpLiteral:
		l := literal{string(re.Rune), re.Flags&syntax.FoldCase != 0}
		if l.fold {
			// Lower case in the text is lower case in the match only
			// for ASCII (U+017F, which (?i)s accepts, is the exception
			// holds allows for).
			for _, c := range re.Rune {
				if c >= utf8.RuneSelf {
					return nil
				}
			}
			l.s = strings.ToLower(l.s)
		}
		return [][]literal{{l}}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		var out [][]literal
		for _, sub := range re.Sub {
			out = append(out, requiredLiterals(sub)...)
		}
		return out
	case syntax.OpAlternate:
		var clause []literal
		for _, sub := range re.Sub {
			cs := requiredLiterals(sub)
			if len(cs) == 0 {
				return nil
			}
			// The clause whose shortest literal is longest.
			clause = append(clause, slices.MaxFunc(cs, func(a, b []literal) int { return shortest(a) - shortest(b) })...)
		}
		return [][]literal{clause}
	}
	return nil
}

func shortest(c []literal) int {
	n := math.MaxInt
	for _, l := range c {
		n = min(n, len(l.s))
	}
	return n
}

// holds reports whether a text (raw, and lower, its lower case) holds one
// literal of each clause.
func holds(raw, lower string, clauses [][]literal) bool {
	fold := !strings.Contains(lower, "\u017f")
	for _, c := range clauses {
		if !slices.ContainsFunc(c, func(l literal) bool {
			if l.fold {
				return !fold || strings.Contains(lower, l.s)
			}
			return strings.Contains(raw, l.s)
		}) {
			return false
		}
	}
	return true
}

// keywordIndex finds which keywords occur in a text in one pass: every
// keyword is at least two bytes long, and a table indexed by two bytes
// lists the keywords starting with them.
type keywordIndex struct {
	words []string
	first []uint16  // 1<<16 entries: two bytes → index in lists, 0 if none
	lists [][]int32 // lists[0] is empty
	short []int32   // keywords of one byte (none in gitleaks' rules)
}

func (k *keywordIndex) build() {
	k.first = make([]uint16, 1<<16)
	k.lists = [][]int32{nil}
	for i, w := range k.words {
		if len(w) < 2 {
			k.short = append(k.short, int32(i))
			continue
		}
		h := uint16(w[0])<<8 | uint16(w[1])
		if k.first[h] == 0 {
			k.first[h] = uint16(len(k.lists))
			k.lists = append(k.lists, nil)
		}
		k.lists[k.first[h]] = append(k.lists[k.first[h]], int32(i))
	}
}

// find says which keywords occur in lower.
func (k *keywordIndex) find(lower string) []bool {
	found := make([]bool, len(k.words))
	for _, i := range k.short {
		found[i] = strings.Contains(lower, k.words[i])
	}
	for i := 0; i+1 < len(lower); i++ {
		l := k.first[uint16(lower[i])<<8|uint16(lower[i+1])]
		if l == 0 {
			continue
		}
		for _, w := range k.lists[l] {
			if !found[w] && strings.HasPrefix(lower[i:], k.words[w]) {
				found[w] = true
			}
		}
	}
	return found
}

// present says whether a keyword is among those find found.
func (k *keywordIndex) present(found []bool) func(w string) bool {
	return func(w string) bool {
		i := slices.Index(k.words, w)
		return i < 0 || found[i]
	}
}

// match is one finding of a gitleaks rule in a text, as gitleaks'
// DetectString reports it.
type match struct {
	rule   *rule
	start  int    // where the match starts (gitleaks' StartLine and StartColumn)
	match  string // the match without leading and trailing newlines (Finding.Match)
	secret string // Finding.Secret
	line   int    // 0-based line of start (Finding.StartLine)
}

// detect is gitleaks' Detector.DetectString(raw) with the default
// configuration (no decoding, no path, no commit), lower being
// strings.ToLower(raw).
func (rs *ruleSet) detect(raw, lower string) []match {
	present := rs.keywords.find(lower)
	var (
		out []match
		nl  []int // newline offsets, once a rule matches
	)
	for _, r := range rs.rules {
		if r.re == nil {
			continue
		}
		if len(r.keywords) > 0 && !slices.ContainsFunc(r.keywords, func(i int) bool { return present[i] }) {
			continue
		}
		if !holds(raw, lower, r.required()) {
			continue
		}
		var locs [][]int
		if ws, ok := genericSites(raw, lower, r, rs.keywords.present(present)); ok {
			for _, w := range ws {
				for _, m := range r.re().FindAllStringIndex(raw[w[0]:w[1]], -1) {
					locs = append(locs, []int{w[0] + m[0], w[0] + m[1]})
				}
			}
		} else {
			locs = r.re().FindAllStringIndex(raw, -1)
		}
		if len(locs) > 0 && nl == nil {
			nl = newlines(raw)
		}
		for _, loc := range locs {
			if f, ok := rs.finding(raw, nl, r, loc[0], loc[1]); ok {
				out = append(out, f)
			}
		}
	}
	return dropGeneric(out)
}

func newlines(s string) []int {
	nl := []int{}
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return nl
		}
		nl = append(nl, i+j)
		i += j + 1
	}
}

// finding is gitleaks' detectRule for one match of r at [start, end).
func (rs *ruleSet) finding(raw string, nl []int, r *rule, start, end int) (match, bool) {
	m := strings.Trim(raw[start:end], "\n")
	end = start + len(m) // as gitleaks does (its issue 1352), even if the match began with a newline
	f := match{rule: r, start: start, match: m, secret: m}
	var line string
	f.line, line = location(raw, nl, start, end)
	// (gitleaks skips a line holding "gitleaks:allow", a marker for
	// source code a reviewer vetted. Not here: a transcript is text an
	// agent, a tool or anyone it quotes wrote, and the marker there would
	// hide a live secret from redaction. line stays for the allowlists.)
	// The secret group is taken from the regexp run again on the match
	// alone, as gitleaks does.
	if groups := r.re().FindStringSubmatch(m); len(groups) >= 2 {
		if r.secretGroup > 0 {
			f.secret = groups[r.secretGroup]
		} else {
			for _, g := range groups[1:] {
				if g != "" {
					f.secret = g
					break
				}
			}
		}
	}
	if r.entropy != 0 && shannon(f.secret) <= r.entropy {
		return f, false
	}
	for _, a := range rs.global {
		if a.allows(&f, line) {
			return f, false
		}
	}
	for _, a := range r.allow {
		if a.allows(&f, line) {
			return f, false
		}
	}
	return f, true
}

// location is gitleaks' location for a match at [start, end): the match's
// 0-based line and the Finding.Line gitleaks checks for "gitleaks:allow"
// and allowlists with regexTarget "line". That line begins with the
// newline before the match's line; on the last line of a text that has a
// newline before it, it begins at the start of the text.
func location(raw string, nl []int, start, end int) (int, string) {
	i := sort.SearchInts(nl, start+1) // newlines at or before start
	var from, to int
	if len(nl) == 0 || i < len(nl) {
		if len(nl) == 0 {
			to = len(raw)
		} else {
			to = nl[i]
		}
		if i > 0 {
			from = nl[i-1]
		}
		if j := sort.SearchInts(nl, end); j < len(nl) && j >= i {
			to = nl[j] // the first newline at or after end
		}
	} else {
		to = end
		for to < len(raw) && raw[to] != '\n' && raw[to] != '\r' {
			to++
		}
	}
	return i, raw[from:max(to, end)]
}

// shannon is gitleaks' shannonEntropy: by runes, divided by the length in
// bytes. The terms are summed in rune order (gitleaks sums in map order).
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	runes := make([]rune, 0, len(counts))
	for c := range counts {
		runes = append(runes, c)
	}
	slices.Sort(runes)
	inv := 1 / float64(len(s))
	var h float64
	for _, c := range runes {
		f := float64(counts[c]) * inv
		h -= f * math.Log2(f)
	}
	return h
}

// dropGeneric is gitleaks' filter: a finding of a "generic" rule goes
// where another, non-generic rule found a secret containing it on the
// same line.
func dropGeneric(fs []match) []match {
	var out []match
	for _, f := range fs {
		keep := true
		if f.rule.generic {
			for _, g := range fs {
				if f.line == g.line && f.rule != g.rule && !g.rule.generic && strings.Contains(g.secret, f.secret) {
					keep = false
					break
				}
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

// genericSites returns the windows of raw to run generic-api-key on, and
// false when it must run on the whole text: where the rule is not the one
// the windows were made for, or where lower does not line up byte for byte
// with raw (strings.ToLower changed a length: invalid UTF-8, U+212A KELVIN
// SIGN, ...) or raw holds U+017F (ſ, which (?i)s and \w accept).
func genericSites(raw, lower string, r *rule, present func(k string) bool) ([][2]int, bool) {
	if !r.windowed || !aligned(raw) || strings.Contains(raw, "\u017f") {
		return nil, false
	}
	return genericWindows(lower, present), true
}

// genericKeywords start every name generic-api-key's regexp accepts
// (api in three cases).
var genericKeywords = []string{"access", "auth", "api", "credential", "creds", "key", "passwd", "password", "secret", "token"}

// aligned reports whether strings.ToLower(s) has each rune where s has it.
func aligned(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || utf8.RuneLen(unicode.ToLower(r)) != n {
			return false
		}
		i += n
	}
	return true
}
