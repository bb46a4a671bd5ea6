// Package tasks is the task stack and task tree of one session, as the
// state document "tasks" of every checkpoint records it. It is a pure model:
// it reads and writes that document and applies the three operations (begin,
// commit, revert) to it; the engine (package snap) records the checkpoints,
// finds the checkpoints where each task began and ended, and undoes.
//
// # The document
//
// A JSON object, written by Marshal with sorted, stable formatting so that
// an unchanged stack is byte-identical (and so stored once):
//
//	{"version": 1, "next_id": 4, "stack": [1, 3],
//	 "tasks": [{"id": 1, "goal": "add module Y", "status": "open", "parent": 0,
//	            "children": [2, 3], "begin_messages": 12}, ...]}
//
// stack lists the open tasks, outermost first; the last is the current task.
// tasks lists every task of the session's line of history, by increasing
// id. Ids start at 1 and are never reused in a session: NextID only grows,
// and the engine raises it past every id its history has seen, so a rewind
// to before a task began does not give that id out again (the ids of tasks
// on a branch a rewind left are then missing from the list).
package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Version is the document version Marshal writes.
const Version = 1

// DefaultMaxDepth is how deep tasks nest unless configured
// (tasks.max-depth): a top-level task has depth 1.
const DefaultMaxDepth = 3

// Status is a task's state.
type Status string

const (
	Open      Status = "open"      // begun, not finished (on the stack)
	Committed Status = "committed" // finished with a summary
	Reverted  Status = "reverted"  // abandoned with a reason; its files were rewound
)

// Task is one task of the session.
type Task struct {
	ID       int    `json:"id"`
	Goal     string `json:"goal"`
	Status   Status `json:"status"`
	Summary  string `json:"summary,omitempty"` // set by commit (the latest, when kept open)
	Reason   string `json:"reason,omitempty"`  // set by revert
	Parent   int    `json:"parent"`            // 0: a top-level task
	Children []int  `json:"children"`
	// BeginMessages and EndMessages: how many conversation messages there
	// were when the task began and when it finished, so the messages
	// [BeginMessages, EndMessages) belong to it (history compaction).
	BeginMessages int `json:"begin_messages"`
	EndMessages   int `json:"end_messages,omitempty"`
}

// State is the document: the stack of open tasks and every task.
type State struct {
	Version int    `json:"version"`
	NextID  int    `json:"next_id"`
	Stack   []int  `json:"stack"`
	Tasks   []Task `json:"tasks"`
}

// Parse reads a document; nil or empty data is the empty state.
func Parse(data []byte) (*State, error) {
	s := &State{Version: Version, NextID: 1, Stack: []int{}, Tasks: []Task{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDocument, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("%w: version %d (this snap reads %d)", ErrDocument, s.Version, Version)
	}
	if s.Stack == nil {
		s.Stack = []int{}
	}
	if s.Tasks == nil {
		s.Tasks = []Task{}
	}
	for i := range s.Tasks {
		if s.Tasks[i].ID < 1 || i > 0 && s.Tasks[i].ID <= s.Tasks[i-1].ID {
			return nil, fmt.Errorf("%w: task ids not increasing at task %d", ErrDocument, s.Tasks[i].ID)
		}
		if s.Tasks[i].Children == nil {
			s.Tasks[i].Children = []int{}
		}
	}
	for _, id := range s.Stack {
		if t := s.Get(id); t == nil || t.Status != Open {
			return nil, fmt.Errorf("%w: stack names task %d, which is not open", ErrDocument, id)
		}
	}
	if n := len(s.Tasks); n > 0 && s.NextID <= s.Tasks[n-1].ID {
		s.NextID = s.Tasks[n-1].ID + 1
	}
	return s, nil
}

// Marshal writes the document (indented, ending in a newline).
func (s *State) Marshal() []byte {
	data, _ := json.MarshalIndent(s, "", "  ") // cannot fail: plain types
	return append(data, '\n')
}

// Get returns task id, or nil.
func (s *State) Get(id int) *Task {
	for i := range s.Tasks {
		if s.Tasks[i].ID == id {
			return &s.Tasks[i]
		}
	}
	return nil
}

// Current returns the current task (the top of the stack), or nil.
func (s *State) Current() *Task {
	if len(s.Stack) == 0 {
		return nil
	}
	return s.Get(s.Stack[len(s.Stack)-1])
}

// Depth is the task's depth in the tree (a top-level task: 1).
func (s *State) Depth(id int) int {
	d := 0
	for t := s.Get(id); t != nil; t = s.Get(t.Parent) {
		d++
	}
	return d
}

// TopLevel, as Begin's parent, begins a task at the top of the tree.
const TopLevel = -1

// ParentArg turns a front-end's parent argument (the CLI's --parent, the
// MCP's parent_task_id) into Begin's parent: 0 is the top level, N the
// open task N; a negative number is refused. Every front-end calls it, so
// they accept and refuse the same values.
func ParentArg(n int) (int, error) {
	switch {
	case n == 0:
		return TopLevel, nil
	case n < 0:
		return 0, fmt.Errorf("%w: %d is not a task id (give an open task's id, or 0 for the top level)", ErrBadParent, n)
	}
	return n, nil
}

// Begin pushes a new open task with goal under parent (0: the current
// task, or top level when there is none; -1: top level) and returns it. A
// parent must be open; the new task's depth must not pass maxDepth.
// nextID is the least id it may take (the engine passes one past every id
// its history has seen).
func (s *State) Begin(goal string, parent, maxDepth, nextID, messages int) (*Task, error) {
	goal = strings.TrimSpace(goal)
	if goal == "" {
		return nil, fmt.Errorf("%w: a task needs a goal", ErrEmpty)
	}
	switch {
	case parent == 0:
		if cur := s.Current(); cur != nil {
			parent = cur.ID
		}
	case parent == TopLevel:
		parent = 0
	case parent < 0:
		return nil, fmt.Errorf("%w: %d is not a task id", ErrBadParent, parent)
	default:
		if !slices.Contains(s.Stack, parent) {
			return nil, fmt.Errorf("%w: task %d (open tasks: %s)", ErrBadParent, parent, s.stackText())
		}
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if d := s.Depth(parent) + 1; d > maxDepth {
		return nil, fmt.Errorf("%w: a task under task %d would be at depth %d, deeper than tasks.max-depth %d; "+
			"split the work: commit or revert the current task first, or begin the new task higher up (under a parent nearer the root)",
			ErrTooDeep, parent, d, maxDepth)
	}
	id := max(s.NextID, nextID, 1)
	s.Tasks = append(s.Tasks, Task{ID: id, Goal: goal, Status: Open, Parent: parent, Children: []int{}, BeginMessages: messages})
	if p := s.Get(parent); p != nil {
		p.Children = append(p.Children, id)
	}
	s.Stack = append(s.Stack, id)
	s.NextID = id + 1
	return s.Get(id), nil
}

// Commit finishes the current task with summary and pops it; with keepOpen
// the summary is recorded and the task stays current.
func (s *State) Commit(summary string, keepOpen bool, messages int) (*Task, error) {
	summary = strings.TrimSpace(summary)
	if summary == "" {
		return nil, fmt.Errorf("%w: a commit needs a summary", ErrEmpty)
	}
	t := s.Current()
	if t == nil {
		return nil, fmt.Errorf("%w to commit: begin one first", ErrNoOpenTask)
	}
	t.Summary = summary
	if !keepOpen {
		t.Status, t.EndMessages = Committed, messages
		s.Stack = s.Stack[:len(s.Stack)-1]
	}
	return t, nil
}

// Revert abandons the current task with reason and pops it.
func (s *State) Revert(reason string, messages int) (*Task, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, fmt.Errorf("%w: a revert needs a reason", ErrEmpty)
	}
	t := s.Current()
	if t == nil {
		return nil, fmt.Errorf("%w to revert: begin one first", ErrNoOpenTask)
	}
	t.Status, t.Reason, t.EndMessages = Reverted, reason, messages
	s.Stack = s.Stack[:len(s.Stack)-1]
	// The files go back to t's begin: whatever tasks finished since (its
	// subtasks, and tasks begun beside it with --parent) are undone too.
	for i := range s.Tasks {
		if o := &s.Tasks[i]; o.ID > t.ID && o.Status == Committed {
			o.Status, o.Reason = Reverted, fmt.Sprintf("undone by the revert of task %d", t.ID)
		}
	}
	return t, nil
}

func (s *State) stackText() string {
	if len(s.Stack) == 0 {
		return "none"
	}
	ids := make([]string, len(s.Stack))
	for i, id := range s.Stack {
		ids[i] = fmt.Sprint(id)
	}
	return strings.Join(ids, ", ")
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.Stack = slices.Clone(s.Stack)
	c.Tasks = slices.Clone(s.Tasks)
	for i := range c.Tasks {
		c.Tasks[i].Children = slices.Clone(s.Tasks[i].Children)
	}
	return &c
}
