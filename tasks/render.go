package tasks

import (
	"fmt"
	"strings"
	"unicode"
)

// Mark is the symbol of a task's state in Tree: ✅ committed, ❌ reverted,
// 📝 the current task, ⏳ open (on the stack, below the current one).
func (s *State) Mark(t *Task) string {
	switch {
	case t.Status == Committed:
		return "✅"
	case t.Status == Reverted:
		return "❌"
	case s.Current() != nil && s.Current().ID == t.ID:
		return "📝"
	}
	return "⏳"
}

// Tree renders the task tree for people: one line per task, children
// indented under their parent, in id order.
func (s *State) Tree() string {
	if len(s.Tasks) == 0 {
		return "no tasks yet\n"
	}
	var b strings.Builder
	var walk func(parent, depth int)
	walk = func(parent, depth int) {
		for i := range s.Tasks {
			t := &s.Tasks[i]
			if t.Parent != parent {
				continue
			}
			fmt.Fprintf(&b, "%s%s %d %s", strings.Repeat("   ", depth), s.Mark(t), t.ID, oneLine(t.Goal))
			switch {
			case t.Status == Reverted:
				fmt.Fprintf(&b, " — reverted: %s", oneLine(t.Reason))
			case t.Summary != "":
				fmt.Fprintf(&b, " — %s", oneLine(t.Summary))
			}
			if s.Current() == t {
				b.WriteString("  (current)")
			}
			b.WriteByte('\n')
			walk(t.ID, depth+1)
		}
	}
	walk(0, 0)
	return b.String()
}

// Prompt renders the stack and the finished tasks as compact plain text
// for an agent's next prompt: where it is, then what is done and what was
// abandoned and why.
func (s *State) Prompt() string {
	var b strings.Builder
	if cur := s.Current(); cur != nil {
		fmt.Fprintf(&b, "Current task: #%d %s\n", cur.ID, oneLine(cur.Goal))
		// Its ancestors (a task begun with --parent 0 has none, whatever
		// else is open below it on the stack).
		for p := cur.Parent; p != 0; {
			t := s.Get(p)
			if t == nil {
				break
			}
			fmt.Fprintf(&b, "  within #%d %s\n", t.ID, oneLine(t.Goal))
			p = t.Parent
		}
		if below := len(s.Stack) - 1; below > 0 && cur.Parent == 0 {
			fmt.Fprintf(&b, "  (a top-level task; %d more open below it on the stack)\n", below)
		}
		if cur.Summary != "" {
			fmt.Fprintf(&b, "  progress so far: %s\n", oneLine(cur.Summary))
		}
	} else {
		b.WriteString("No open task.\n")
	}
	for _, t := range s.Tasks {
		switch t.Status {
		case Committed:
			fmt.Fprintf(&b, "Done #%d %s: %s\n", t.ID, oneLine(t.Goal), oneLine(t.Summary))
		case Reverted:
			fmt.Fprintf(&b, "Abandoned #%d %s: %s\n", t.ID, oneLine(t.Goal), oneLine(t.Reason))
		}
	}
	return b.String()
}

// oneLine folds white space (newlines included) to single spaces and shows
// other control characters (a terminal escape) as U+FFFD.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
