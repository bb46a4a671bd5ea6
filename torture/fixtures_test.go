package torture

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/snapcore-dev/snap/objects"
)

// wantProblem is a finding fsck must report.
type wantProblem struct {
	severity string
	path     string     // prefix of the problem's path ("" = any)
	object   objects.ID // the object at fault (zero = any)
	substr   []string   // each must be in the message
}

// fixtureCase is what must happen on one corrupt store.
type fixtureCase struct {
	name     string
	fsckExit int // 12 corrupt, 0 warnings only
	want     []wantProblem
	// rewind: REF to rewind to and the exit code expected; keep lists the
	// files that must keep their content (the target's copy is damaged).
	rewindRef  string
	rewindExit int
	keep       []string
}

// blobID1 is the id of a file's content in checkpoint #1 of the fixtures.
func blobID1(path string) objects.ID { return objects.Hash(objects.TypeBlob, fixtureContent(1)[path]) }

var v1Files = []string{"README.md", "notes.txt", "blob.bin"}

var fixtureCases = []fixtureCase{
	{name: "bitflip-blob", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", blobID1("blob.bin"), []string{"reachable blob", "is corrupt", "does not hash to its id"}}},
		rewindRef: "#1", rewindExit: 12, keep: []string{"blob.bin"}},
	{name: "truncated-pack", fsckExit: 12,
		want: []wantProblem{
			{"error", "packs/", objects.ID{}, []string{"pack cannot be indexed"}},
			{"error", "", blobID1("notes.txt"), []string{"missing"}},
		},
		rewindRef: "#1", rewindExit: 12, keep: v1Files},
	{name: "trailing-garbage", fsckExit: 12,
		want: []wantProblem{
			{"error", "packs/", objects.ID{}, []string{"pack cannot be indexed", "footer"}},
			{"error", "", blobID1("blob.bin"), []string{"missing"}},
		},
		rewindRef: "#1", rewindExit: 12, keep: v1Files},
	{name: "corrupt-zstd-frame", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", blobID1("notes.txt"), []string{"reachable blob", "is corrupt", "zstd"}}},
		rewindRef: "#1", rewindExit: 12, keep: []string{"notes.txt"}},
	{name: "decompression-bomb", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", blobID1("notes.txt"), []string{"reachable blob", "is corrupt", "zstd"}}},
		rewindRef: "#1", rewindExit: 12, keep: []string{"notes.txt"}},
	{name: "missing-delta-base", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", blobID1("notes.txt"), []string{"stored as a delta on", "which is missing"}}},
		rewindRef: "#1", rewindExit: 12, keep: []string{"notes.txt"}},
	{name: "missing-blob", fsckExit: 12,
		want:      []wantProblem{{"error", "", blobID1("blob.bin"), []string{"missing content", `"blob.bin"`}}},
		rewindRef: "#1", rewindExit: 12, keep: []string{"blob.bin"}},
	{name: "unsorted-tree", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", objects.ID{}, []string{"tree", "cannot be read", "unsorted or duplicate"}}},
		rewindRef: "#1", rewindExit: 12, keep: v1Files},
	{name: "duplicate-tree-entries", fsckExit: 12,
		want:      []wantProblem{{"error", "packs/", objects.ID{}, []string{"tree", "cannot be read", `"notes.txt" and "notes.txt"`}}},
		rewindRef: "#1", rewindExit: 12, keep: v1Files},
	{name: "ref-missing-checkpoint", fsckExit: 12,
		want:      []wantProblem{{"error", "refs/labels/lost", objects.ID{}, []string{"names a missing checkpoint"}}},
		rewindRef: "lost", rewindExit: 12, keep: v1Files},
	{name: "stale-ref-lock", fsckExit: 0,
		want:      []wantProblem{{"warning", "refs/sessions/default/head.lock", objects.ID{}, []string{"lock file"}}},
		rewindRef: "#1", rewindExit: 0},
	{name: "leftover-temp-files", fsckExit: 0,
		want:      []wantProblem{{"warning", "tmp/pack-1234567890", objects.ID{}, []string{"temporary file"}}},
		rewindRef: "#1", rewindExit: 0},
}

func (w wantProblem) matches(p fsckProblem) bool {
	if p.Severity != w.severity || !strings.HasPrefix(p.Path, w.path) {
		return false
	}
	if !w.object.IsZero() && p.Object != w.object.String() {
		return false
	}
	for _, s := range w.substr {
		if !strings.Contains(p.Message, s) {
			return false
		}
	}
	return true
}

// fixtureCopy copies fixture name into a new temporary directory (fixtures
// are never used in place) and returns the project root.
func fixtureCopy(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := copyDir(filepath.Join(fixturesDir, name), dst); err != nil {
		t.Fatalf("copy fixture: %v", err)
	}
	return dst
}

func problemsText(ps []fsckProblem) string {
	var s []string
	for _, p := range ps {
		s = append(s, "  "+p.String())
	}
	return strings.Join(s, "\n")
}

// TestFixturesCovered keeps the generator and the expectations in step.
func TestFixturesCovered(t *testing.T) {
	cases := map[string]bool{}
	for _, c := range fixtureCases {
		cases[c.name] = true
	}
	for _, d := range fixtureDefects {
		if !cases[d.name] {
			t.Errorf("fixture %s has no expectations in fixtureCases", d.name)
		}
		delete(cases, d.name)
	}
	for n := range cases {
		t.Errorf("fixtureCases names %s, which is not generated", n)
	}
}

// TestCorruptFixtures runs fsck, rewind and gc on a copy of each corrupt
// store: fsck reports the defect with the right severity and exit code;
// rewind refuses rather than writing wrong bytes; gc --grace 0s makes
// nothing worse and never deletes the only copy of a reachable object.
func TestCorruptFixtures(t *testing.T) {
	for _, c := range fixtureCases {
		t.Run(c.name, func(t *testing.T) {
			t.Run("fsck", func(t *testing.T) { fixtureFsck(t, c) })
			t.Run("rewind", func(t *testing.T) { fixtureRewind(t, c) })
			t.Run("gc", func(t *testing.T) { fixtureGC(t, c) })
		})
	}
}

func fixtureFsck(t *testing.T, c fixtureCase) {
	proj := fixtureCopy(t, c.name)
	res, rep, err := fsck(proj)
	if err != nil {
		t.Fatal(err)
	}
	if res.code != c.fsckExit {
		t.Errorf("fsck --full: exit %d, want %d\n%s", res.code, c.fsckExit, problemsText(rep.Problems))
	}
	for _, w := range c.want {
		found := false
		for _, p := range rep.Problems {
			found = found || w.matches(p)
		}
		if !found {
			t.Errorf("fsck --full does not report %s %s %s %q; it reports:\n%s", w.severity, w.path, w.object.Short(), w.substr, problemsText(rep.Problems))
		}
	}
	if c.fsckExit == 0 && len(rep.errors()) > 0 {
		t.Errorf("fsck --full reports errors for a store with only leftovers:\n%s", problemsText(rep.errors()))
	}
	// The connectivity check (no --full) must agree on the exit code
	// except for damage only a re-hash sees.
	conn := runSnap(proj, "fsck", "--json")
	if c.fsckExit == 0 && conn.code != 0 {
		t.Errorf("fsck (connectivity): %s", conn)
	}
}

func fixtureRewind(t *testing.T, c fixtureCase) {
	proj := fixtureCopy(t, c.name)
	before, err := scanTree(proj)
	if err != nil {
		t.Fatal(err)
	}
	headBefore, _ := os.ReadFile(filepath.Join(proj, ".snap/refs/sessions/default/head"))
	res := runSnap(proj, "rewind", c.rewindRef, "--json")
	after, err := scanTree(proj)
	if err != nil {
		t.Fatal(err)
	}
	headAfter, _ := os.ReadFile(filepath.Join(proj, ".snap/refs/sessions/default/head"))
	v1, v2 := fixtureContent(1), fixtureContent(2)

	// Never wrong bytes: every file is as it was, or #1's version.
	for p, f := range after {
		if strings.HasPrefix(filepath.Base(p), ".snap-tmp-") {
			continue
		}
		if b, ok := before[p]; ok && b == f {
			continue
		}
		if f.Data == string(v1[p]) {
			continue
		}
		t.Errorf("rewind wrote wrong bytes to %s: %s", p, f)
	}
	for _, p := range c.keep {
		if after[p].Data != string(v2[p]) {
			t.Errorf("%s lost its content (the checkpoint's copy is damaged): now %s", p, after[p])
		}
	}
	if res.code != c.rewindExit {
		t.Errorf("snap rewind %s: exit %d, want %d (%s)\n  stdout: %s", c.rewindRef, res.code, c.rewindExit, res, oneLine(res.stdout, 600))
	}
	if res.code != 0 {
		var restored []string
		for p, f := range after {
			if before[p] != f {
				restored = append(restored, p)
			}
		}
		sort.Strings(restored)
		t.Logf("refused rewind (exit %d): files changed anyway: %v; head moved: %v", res.code, restored, string(headBefore) != string(headAfter))
		return
	}
	// A successful rewind gives exactly #1 (a leftover temporary file may
	// be deleted: it was captured in the safety checkpoint).
	want := treeState{}
	for p, b := range v1 {
		want[p] = file{Mode: 'f', Data: string(b)}
	}
	for p := range after {
		if strings.HasPrefix(filepath.Base(p), ".snap-tmp-") {
			delete(after, p)
		}
	}
	if d := diffTrees(want, after, 10); len(d) > 0 {
		t.Errorf("rewind exited 0 but the tree is not #1:\n  %s", strings.Join(d, "\n  "))
	}
}

func fixtureGC(t *testing.T, c fixtureCase) {
	proj := fixtureCopy(t, c.name)
	store := filepath.Join(proj, ".snap")
	_, rep, err := fsck(proj)
	if err != nil {
		t.Fatal(err)
	}
	v, err := openView(store)
	if err != nil {
		t.Fatal(err)
	}
	reach := v.reachableObjects()
	v.close()

	res := runSnap(proj, "gc", "--grace", "0s", "--json")
	t.Logf("%s\n  stdout: %s", res, oneLine(res.stdout, 600))
	if res.code != 0 && res.code != 12 {
		t.Errorf("gc: %s (want exit 0, or 12 refusing on a corrupt store)", res)
	}
	if res.code == 0 && c.fsckExit == 12 {
		var out struct {
			PacksRewritten int `json:"packs_rewritten"`
			PacksDeleted   int `json:"packs_deleted"`
		}
		json.Unmarshal(res.stdout, &out)
		t.Logf("gc ran on a corrupt store: rewrote %d packs, deleted %d", out.PacksRewritten, out.PacksDeleted)
	}

	_, rep2, err := fsck(proj)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.errors() {
		found := false
		for _, q := range rep2.Problems {
			if q.Severity == p.Severity && q.Object == p.Object && (p.Object != "" || q.Path == p.Path) {
				found = true
			}
		}
		if !found {
			t.Errorf("after gc, fsck no longer reports: %s\n  it reports:\n%s", p, problemsText(rep2.Problems))
		}
	}
	if c.fsckExit == 0 {
		if len(rep2.errors()) > 0 {
			t.Errorf("gc made a store with only leftovers corrupt:\n%s", problemsText(rep2.errors()))
		}
		if c.name == "leftover-temp-files" {
			for _, p := range rep2.Problems {
				if strings.HasPrefix(p.Path, "tmp/") {
					t.Errorf("gc --grace 0s left a temporary file: %s", p)
				}
			}
		}
	}
	v, err = openView(store)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	var gone []string
	for id := range reach {
		if !v.st.Has(id) {
			gone = append(gone, id.Short())
		}
	}
	if len(gone) > 0 {
		t.Errorf("gc deleted reachable objects: %v", gone)
	}
}

// oneLine squeezes command output onto one line of at most max bytes.
func oneLine(b []byte, max int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
