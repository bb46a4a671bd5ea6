package torture

import (
	"bytes"
	"errors"
	"fmt"
	"path"

	"github.com/snapcore-dev/snap/objects"
	"github.com/snapcore-dev/snap/refs"
)

// storeView reads checkpoints straight from a store directory with the
// objects and refs layers: the same verified read path `snap cat` uses,
// without a process per file. Open one per check: it sees the packs on
// disk at that moment.
type storeView struct {
	dir   string
	st    *objects.Store
	rs    *refs.Store
	blobs map[objects.ID]string // memo of content already read in this view
}

func openView(storeDir string) (*storeView, error) {
	st, err := objects.Open(storeDir)
	if err != nil {
		return nil, err
	}
	rs, err := refs.Open(storeDir)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &storeView{dir: storeDir, st: st, rs: rs, blobs: map[objects.ID]string{}}, nil
}

func (v *storeView) close() { v.st.Close() }

func (v *storeView) blob(id objects.ID) (string, error) {
	if s, ok := v.blobs[id]; ok {
		return s, nil
	}
	var b bytes.Buffer
	if _, err := v.st.WriteBlob(id, &b); err != nil {
		return "", err
	}
	v.blobs[id] = b.String()
	return b.String(), nil
}

// content returns what checkpoint id holds: its files and its conversation
// document (hasConv false when it has none).
func (v *storeView) content(id objects.ID) (tree treeState, conv string, hasConv bool, err error) {
	ck, err := v.st.ReadCheckpoint(id)
	if err != nil {
		return nil, "", false, fmt.Errorf("checkpoint %s: %w", id.Short(), err)
	}
	tree = treeState{}
	if err := v.flatten(ck.Tree, "", tree); err != nil {
		return nil, "", false, fmt.Errorf("checkpoint %s: %w", id.Short(), err)
	}
	st, err := v.st.ReadTree(ck.State)
	if err != nil {
		return nil, "", false, fmt.Errorf("checkpoint %s: state: %w", id.Short(), err)
	}
	if e, ok := st.Find("conversation"); ok {
		if conv, err = v.blob(e.ID); err != nil {
			return nil, "", false, fmt.Errorf("checkpoint %s: conversation: %w", id.Short(), err)
		}
		hasConv = true
	}
	return tree, conv, hasConv, nil
}

func (v *storeView) flatten(id objects.ID, dir string, out treeState) error {
	t, err := v.st.ReadTree(id)
	if err != nil {
		return fmt.Errorf("tree %s (%q): %w", id.Short(), dir, err)
	}
	for _, e := range t.Entries {
		p := path.Join(dir, e.Name)
		switch e.Mode {
		case objects.ModeDir:
			if err := v.flatten(e.ID, p, out); err != nil {
				return err
			}
			continue
		}
		data, err := v.blob(e.ID)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		m := byte('f')
		switch e.Mode {
		case objects.ModeExec:
			m = 'x'
		case objects.ModeSymlink:
			m = 'l'
		}
		out[p] = file{Mode: m, Data: data}
	}
	return nil
}

// checkpoint reads a checkpoint object.
func (v *storeView) checkpoint(id objects.ID) (*objects.Checkpoint, error) {
	return v.st.ReadCheckpoint(id)
}

// head returns the session head (zero when the session has none).
func (v *storeView) head(session string) (objects.ID, error) {
	id, err := v.rs.Get("sessions/" + session + "/head")
	if errors.Is(err, refs.ErrNotFound) {
		return objects.ID{}, nil
	}
	return id, err
}

// roots returns what gc keeps: every ref and every id the op log names.
func (v *storeView) roots() ([]objects.ID, error) {
	var ids []objects.ID
	seen := map[objects.ID]bool{}
	add := func(id objects.ID) {
		if !id.IsZero() && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	list, lerr := v.rs.List("")
	for _, r := range list {
		add(r.ID)
	}
	ops, oerr := v.rs.Ops()
	for _, op := range ops {
		add(op.Checkpoint)
		add(op.Target)
		add(op.Safety)
		for _, rc := range op.Refs {
			add(rc.Old)
			add(rc.New)
		}
	}
	return ids, errors.Join(lerr, oerr)
}

// rootedCheckpoints returns every checkpoint reachable from the roots
// (following parents) that the store can read.
func (v *storeView) rootedCheckpoints() ([]objects.ID, error) {
	roots, err := v.roots()
	if err != nil {
		return nil, err
	}
	seen := map[objects.ID]bool{}
	var out []objects.ID
	queue := roots
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		ck, err := v.st.ReadCheckpoint(id)
		if err != nil {
			continue
		}
		out = append(out, id)
		queue = append(queue, ck.Parents...)
	}
	return out, nil
}

// reachableObjects returns every object reachable from the roots that the
// store holds, tolerating damage (unreadable objects are simply not walked).
func (v *storeView) reachableObjects() map[objects.ID]bool {
	roots, _ := v.roots()
	seen := map[objects.ID]bool{}
	var walk func(id objects.ID)
	walk = func(id objects.ID) {
		if seen[id] || !v.st.Has(id) {
			return
		}
		seen[id] = true
		t, _ := v.st.TypeOf(id)
		switch t {
		case objects.TypeCheckpoint:
			if ck, err := v.st.ReadCheckpoint(id); err == nil {
				walk(ck.Tree)
				walk(ck.State)
				for _, p := range ck.Parents {
					walk(p)
				}
			}
		case objects.TypeTree:
			if tr, err := v.st.ReadTree(id); err == nil {
				for _, e := range tr.Entries {
					walk(e.ID)
				}
			}
		case objects.TypeChunkList:
			if cl, err := v.st.ReadChunkList(id); err == nil {
				for _, e := range cl.Entries {
					walk(e.ID)
				}
			}
		}
	}
	for _, id := range roots {
		walk(id)
	}
	return seen
}
