package conversation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func addFixtureSeeds(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name())); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
}

// fuzzParseSeeds are the seeds FuzzParse and FuzzParsePage add to their
// corpus in testdata.
var fuzzParseSeeds = []string{
	"",
	"[]",
	`{"messages":[{"type":"user","content":"hi"},{"type":"gemini","content":"yo","toolCalls":[{"id":"1","name":"w","args":{}}]}]}`,
	"{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}\n{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":\"b\"}}\n",
	`{"type":"user","message":{"content":"a"}}{"type":"user","message":{"content":"b"}}`,
	`[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}]`,
}

// FuzzParse checks that Parse never panics, always returns a well-formed view
// that Count agrees with, and never changes its input.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzParseSeeds {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := string(data)
		c := Parse(data)
		if string(data) != orig {
			t.Fatal("Parse modified its input")
		}
		checkInvariants(t, data, c)
		if string(data) != orig {
			t.Fatal("Count modified its input")
		}
		d := Diff(c, c)
		if d.Common != len(c.Messages) || len(d.Removed) != 0 || len(d.Added) != 0 {
			t.Fatalf("Diff of a view with itself: %+v", d)
		}
	})
}

// FuzzScanner checks the JSON scanner against encoding/json: it accepts
// exactly what json.Valid accepts, and decodes strings identically.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00\n"]}`,
		`"\ud800"`, `"\ud800\u0041"`, "\"\xff\xfe\"", `01`, `-`, `1.`, `1e`, `[1,]`, `{"a" 1}`, `{"a":1,}`,
		`nul`, `"\x"`, "\"a\tb\"", `[[[[]]]]`, ` {} `, `{}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end, err := skipValue(data, 0, 0)
		mine := err == nil && skipSpace(data, end) == len(data)
		if std := json.Valid(data); mine != std {
			t.Fatalf("scanner says valid=%v (err %v), json.Valid says %v", mine, err, std)
		}
		if !mine {
			return
		}
		v := trimWS(data)
		if v[0] == '"' {
			var want string
			if err := json.Unmarshal(v, &want); err != nil {
				t.Fatalf("json.Unmarshal of a valid string: %v", err)
			}
			if got := unquote(v); got != want {
				t.Fatalf("unquote(%q) = %q, want %q", v, got, want)
			}
		}
		// flattenText never panics on valid JSON.
		_ = flattenText(v, 0)
		if in := argsToInput(v); in != nil && !json.Valid(in) {
			t.Fatalf("argsToInput(%q) = %q, not valid JSON", v, in)
		}
	})
}
