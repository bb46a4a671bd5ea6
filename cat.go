package snap

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/snapcore-dev/snap/conversation"
	"github.com/snapcore-dev/snap/objects"
)

// Cat writes file path of checkpoint id to w.
func (r *Repo) Cat(ctx context.Context, id objects.ID, path string, w io.Writer) error {
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return err
	}
	e, err := r.lookupPath(ck.Tree, path)
	if err != nil {
		return err
	}
	if e.Mode == objects.ModeDir {
		return fmt.Errorf("%w: %s is a directory in %s", ErrUsage, path, id.Short())
	}
	_, err = r.objects.WriteBlob(e.ID, w)
	return err
}

func (r *Repo) lookupPath(tree objects.ID, p string) (objects.TreeEntry, error) {
	e, ok, err := objects.EntryAt(r.objects, tree, p)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", ErrNoPath, strings.Trim(p, "/"))
	}
	return e, err
}

// stateDoc reads checkpoint id and finds its state document name
// (ErrNoPath, naming those it has, when it has none of that name).
func (r *Repo) stateDoc(id objects.ID, name string) (*objects.Checkpoint, objects.TreeEntry, error) {
	ck, err := r.loadCheckpoint(id)
	if err != nil {
		return nil, objects.TreeEntry{}, err
	}
	st, err := r.objects.ReadTree(ck.State)
	if err != nil {
		return nil, objects.TreeEntry{}, err
	}
	e, ok := st.Find(name)
	if !ok {
		return nil, objects.TreeEntry{}, fmt.Errorf("%w: state document %q (checkpoint %s has %s)", ErrNoPath, name, id.Short(), stateNames(st))
	}
	return ck, e, nil
}

// CatState writes state document name of checkpoint id to w.
func (r *Repo) CatState(ctx context.Context, id objects.ID, name string, w io.Writer) error {
	_, e, err := r.stateDoc(id, name)
	if err != nil {
		return err
	}
	_, err = r.objects.WriteBlob(e.ID, w)
	return err
}

func stateNames(t *objects.Tree) string {
	if len(t.Entries) == 0 {
		return "none"
	}
	var names []string
	for _, e := range t.Entries {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}

// ConversationPage is a page of a checkpoint's conversation.
type ConversationPage struct {
	Checkpoint objects.ID             `json:"checkpoint"`
	Format     conversation.Format    `json:"format"`
	Total      int                    `json:"total"`
	Offset     int                    `json:"offset"`
	Messages   []conversation.Message `json:"messages"`
	Problems   []conversation.Problem `json:"problems"`
}

// Conversation returns messages [offset, offset+limit) of the conversation
// recorded in checkpoint id (limit <= 0: all).
//
// The document is streamed from the store and only the page is kept in
// memory (conversation.ParsePage), whatever the transcript's size.
func (r *Repo) Conversation(ctx context.Context, id objects.ID, offset, limit int) (*ConversationPage, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: negative offset", ErrUsage)
	}
	_, e, err := r.stateDoc(id, ConversationDoc)
	if err != nil {
		return nil, err
	}
	rd := r.blobReader(e.ID)
	defer rd.Close()
	c, total, err := conversation.ParsePage(rd, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("conversation of %s: %w", id.Short(), err)
	}
	page := &ConversationPage{Checkpoint: id, Format: c.Format, Total: total, Offset: offset,
		Messages: c.Messages, Problems: c.Problems}
	if page.Messages == nil {
		page.Messages = []conversation.Message{}
	}
	if page.Problems == nil {
		page.Problems = []conversation.Problem{}
	}
	return page, nil
}
