package conversation

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `null`, ` {"a" : [1, 2, {"b": null}] } `,
		`"\u00e9\ud83d\ude00\n\t\"\\\/"`, `"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", "\"a\x01\"",
		`01`, `-`, `1.`, `1e`, `1e+`, `.5`, `+1`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{1:2}`,
		`nul`, `tru`, `nulll`, `"\x"`, `"\u12"`, `"abc`, `[`, `{`, `{"a":`, `{}{}`, `[] x`, ``, `   `,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, c := range cases {
		end, err := skipValue([]byte(c), 0, 0)
		mine := err == nil && skipSpace([]byte(c), end) == len(c)
		if std := json.Valid([]byte(c)); mine != std {
			t.Errorf("%.40q: scanner valid=%v (%v), json.Valid=%v", c, mine, err, std)
		}
		if mine && strings.TrimSpace(c)[0] == '"' {
			var want string
			_ = json.Unmarshal([]byte(c), &want)
			if got := unquote([]byte(strings.TrimSpace(c))); got != want {
				t.Errorf("unquote(%q) = %q, want %q", c, got, want)
			}
		}
	}
}

func TestScanErrorMessages(t *testing.T) {
	_, err := skipValue([]byte(`{"a":`), 0, 0)
	if err == nil || !strings.Contains(err.Error(), "unexpected end of input") {
		t.Errorf("truncated: %v", err)
	}
	_, err = skipValue([]byte(`{"a" x}`), 0, 0)
	if err == nil || err.Error() != "invalid character 'x' after object key at byte 6" {
		t.Errorf("bad key: %v", err)
	}
}

// Hostile shapes must stay fast: no quadratic merging, no deep recursion.
func TestParsePathologicalInputs(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 20000; i++ {
		sb.WriteString(`{"type":"assistant","message":{"id":"same","content":[{"type":"text","text":"0123456789012345678901234567890123456789"},{"type":"tool_use","id":"t`)
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(`","name":"Bash","input":{}}]}}` + "\n")
	}
	manyMerges := sb.String()
	manyBlocks := `[{"role":"assistant","content":[` + strings.Repeat(`{"type":"text","text":"abcdefghij"},{"type":"tool_use","id":"x","name":"n","input":{}},`, 20000) + `"end"]}]`
	deep := `{"type":"user","message":{"content":[{"type":"tool_result","content":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}]}}`
	deepFn := `[{"role":"assistant","function_call":` + strings.Repeat(`{"function":`, 5000) + "{}" + strings.Repeat("}", 5000) + `}]`
	for name, doc := range map[string]string{
		"20000 records of one message": manyMerges, "40000 blocks in one message": manyBlocks,
		"deeply nested result": deep, "deeply nested function": deepFn,
		"many run-together records": strings.Repeat(`{"type":"user","message":{"content":"a"}}`, 20000),
		"many broken lines":         strings.Repeat("{\"type\":\n", 20000),
	} {
		t.Run(name, func(t *testing.T) {
			c := Parse([]byte(doc))
			checkInvariants(t, []byte(doc), c)
		})
	}
	c := Parse([]byte(manyMerges))
	if len(c.Messages) != 1 || len(c.Messages[0].ToolCalls) != 7 || len(c.Messages[0].Lines) != 20000 {
		t.Errorf("merged: %d messages, %d tool calls (want 7 distinct ids)", len(c.Messages), len(c.Messages[0].ToolCalls))
	}
}
