package snap

import (
	"context"
	"fmt"
	"strings"

	"github.com/snapcore-dev/snap/objects"
)

// FileInfo is one entry of a checkpoint's tree, as Files lists it.
type FileInfo struct {
	// Path is slash-separated, from the project root; an empty
	// directory's ends in "/".
	Path string `json:"path"`
	// Mode is "file", "exec", "symlink" or "dir" (an empty directory).
	Mode string `json:"mode"`
	// Size is a file's length in bytes, a symlink's target's length, 0
	// for an empty directory.
	Size int64      `json:"size"`
	ID   objects.ID `json:"id"` // the content's id (the tree's, for a directory)
}

// Files lists the tree of checkpoint id in path order: every
// file and symlink, and every empty directory (a restore writes exactly
// these). dir ("" or "." is the whole tree) limits the list to what lies
// beneath it, or to itself when it names a file; a path the checkpoint
// does not have is ErrNoPath.
func (r *Repo) Files(ctx context.Context, id objects.ID, dir string) ([]FileInfo, error) {
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return nil, err
	}
	dir = strings.Trim(dir, "/")
	if dir == "." {
		dir = ""
	}
	root := ck.Tree
	if dir != "" {
		e, err := r.lookupPath(ck.Tree, dir)
		if err != nil {
			return nil, err
		}
		if e.Mode != objects.ModeDir {
			return []FileInfo{fileInfo(dir, e)}, nil
		}
		root = e.ID
	}
	out := []FileInfo{}
	err = objects.WalkTree(r.objects, root, func(p string, e objects.TreeEntry) error {
		if dir != "" {
			p = dir + "/" + p
		}
		out = append(out, fileInfo(p, e))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", ck.Tree.Short(), err)
	}
	if len(out) == 0 && dir != "" { // dir itself is an empty directory
		e, _ := r.lookupPath(ck.Tree, dir)
		out = append(out, fileInfo(dir, e))
	}
	return out, nil
}

func fileInfo(p string, e objects.TreeEntry) FileInfo {
	fi := FileInfo{Path: p, Mode: e.Mode.String(), Size: e.Size, ID: e.ID}
	if e.Mode == objects.ModeDir {
		fi.Path += "/"
		fi.Size = 0
	}
	return fi
}
