package tasks

import (
	"errors"
	"strings"
	"testing"
)

func TestStackOperations(t *testing.T) {
	s, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Current() != nil {
		t.Fatal("an empty state has a current task")
	}
	if _, err := s.Commit("x", false, 0); !errors.Is(err, ErrNoOpenTask) {
		t.Fatalf("commit with nothing open: %v", err)
	}
	if _, err := s.Revert("x", 0); !errors.Is(err, ErrNoOpenTask) {
		t.Fatalf("revert with nothing open: %v", err)
	}
	a, _ := s.Begin("add module Y", 0, 0, 0, 3)
	b, _ := s.Begin("check dependency versions", 0, 0, 0, 5)
	if a.ID != 1 || b.ID != 2 || b.Parent != 1 || s.Current().ID != 2 {
		t.Fatalf("begin: %+v %+v", a, b)
	}
	if _, err := s.Begin("too deep?", 0, 0, 0, 0); err != nil {
		t.Fatalf("depth 3 is allowed: %v", err)
	}
	if _, err := s.Begin("deeper", 0, 0, 0, 0); !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "split the work") {
		t.Fatalf("depth 4: %v", err)
	}
	if _, err := s.Revert("wrong approach", 9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("all pinned", false, 11); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin("write tests", 1, 0, 0, 12); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin("elsewhere", 7, 0, 0, 0); !errors.Is(err, ErrBadParent) {
		t.Fatalf("a parent that is not open: %v", err)
	}
	if _, err := s.Commit("progress", true, 0); err != nil || s.Current().ID != 4 || s.Current().Status != Open {
		t.Fatalf("keep-open: %v %+v", err, s.Current())
	}
	// Round trip, byte for byte.
	data := s.Marshal()
	s2, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if string(s2.Marshal()) != string(data) {
		t.Fatalf("round trip changed the document:\n%s\n%s", data, s2.Marshal())
	}
	tree := s.Tree()
	for _, want := range []string{"⏳ 1 add module Y", "   ✅ 2 check dependency versions — all pinned",
		"      ❌ 3 too deep? — reverted: wrong approach", "   📝 4 write tests — progress  (current)"} {
		if !strings.Contains(tree, want+"\n") {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}
	prompt := s.Prompt()
	for _, want := range []string{"Current task: #4 write tests\n  within #1 add module Y\n", "Done #2 check dependency versions: all pinned\n",
		"Abandoned #3 too deep?: wrong approach\n"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	// Ids never go back: the engine's floor wins over the document's.
	if c, _ := s.Begin("later", -1, 0, 9, 0); c.ID != 9 || c.Parent != 0 {
		t.Fatalf("begin with a floor of 9 at top level: %+v", c)
	}
	if d, _ := s.Begin("next", 0, 0, 0, 0); d.ID != 10 {
		t.Fatalf("the id after 9: %d", d.ID)
	}
}

func TestParseRefusesDamage(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":         "{",
		"future version":   `{"version": 2}`,
		"ids out of order": `{"version":1,"next_id":3,"stack":[],"tasks":[{"id":2},{"id":1}]}`,
		"stack not open":   `{"version":1,"next_id":2,"stack":[1],"tasks":[{"id":1,"status":"committed"}]}`,
	} {
		if _, err := Parse([]byte(doc)); !errors.Is(err, ErrDocument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, text := range []string{"", " \n\t"} {
		if _, err := (&State{}).Begin(text, 0, 0, 0, 0); !errors.Is(err, ErrEmpty) {
			t.Errorf("begin %q: %v", text, err)
		}
	}
}

func TestRenderingShowsNoControlCharacters(t *testing.T) {
	s, _ := Parse(nil)
	s.Begin("evil \x1b[2J goal\r", 0, 0, 0, 0)
	for _, out := range []string{s.Tree(), s.Prompt()} {
		if strings.ContainsAny(out, "\x1b\r") {
			t.Fatalf("control characters reach the rendering: %q", out)
		}
	}
}

// A task begun at the top level (--parent 0) over open tasks is not
// "within" them in the prompt text (adversarial pass 2, A13).
func TestPromptTopLevelOverOpenTasks(t *testing.T) {
	s := &State{Version: Version}
	if _, err := s.Begin("outer", 0, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin("inner", 0, 0, 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin("separate", -1, 0, 3, 0); err != nil {
		t.Fatal(err)
	}
	got := s.Prompt()
	if strings.Contains(got, "within") || !strings.Contains(got, "Current task: #3 separate\n  (a top-level task; 2 more open below it on the stack)\n") {
		t.Fatalf("prompt:\n%s", got)
	}
	s.Stack = s.Stack[:2] // #2 current again: within #1
	if got := s.Prompt(); !strings.Contains(got, "Current task: #2 inner\n  within #1 outer\n") {
		t.Fatalf("prompt:\n%s", got)
	}
}

// ParentArg is the one reading of a front-end's parent argument.
func TestParentArg(t *testing.T) {
	for n, want := range map[int]int{0: TopLevel, 1: 1, 7: 7} {
		if got, err := ParentArg(n); err != nil || got != want {
			t.Errorf("ParentArg(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	for _, n := range []int{-1, -3} {
		if _, err := ParentArg(n); !errors.Is(err, ErrBadParent) {
			t.Errorf("ParentArg(%d): %v, want ErrBadParent", n, err)
		}
	}
	var s State
	if _, err := s.Begin("g", -5, 3, 1, 0); !errors.Is(err, ErrBadParent) {
		t.Errorf("Begin with parent -5: %v", err)
	}
}
