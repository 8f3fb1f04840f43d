//go:build linux

package commit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestPublishKeepsWhatARenamedManifestNames: once the manifest is renamed
// into place, the manifest on disk names the commit's files, whatever the
// fsync of the directory after the rename reports. Failing the commit
// there (undo, then Abort) would delete files that manifest names: the
// next Open would find generation 1 and no batch file for it. The fsync is
// made to fail the way EMFILE fails it, in its open of the directory: the
// hook that runs just before the rename uses up the process's descriptors,
// which the rename itself does not need.
func TestPublishKeepsWhatARenamedManifestNames(t *testing.T) {
	d, c := writeOne(t)
	path := d.Path()
	use, restore := storagetest.ExhaustDescriptors(t)
	d.Hooks.BeforeManifest = use
	undone := false
	err := Publish(c, func() error { return nil }, func() error { undone = true; return nil })
	restore()
	var ue *UndoError
	if !errors.As(err, &ue) || !errors.Is(err, storage.ErrNotDurable) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Publish = %v, want an *UndoError wrapping storage.ErrNotDurable and EMFILE", err)
	}
	if undone {
		t.Error("the lexical change was undone after the manifest was renamed into place")
	}
	if got := d.Manifest().Generation; got != 1 {
		t.Errorf("the Dir's manifest is at generation %d after the rename, want 1", got)
	}
	d.Close()

	// The next Open settles the commit from its record: the manifest on
	// disk (here, with no power cut) holds generation 1, so it is kept.
	d2, err := storage.Open(path, storage.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer d2.Close()
	if !d2.Unfinished() {
		t.Error("the commit record is gone: the next Open cannot settle the commit")
	}
	did, err := d2.Recover(func(int64) (uint64, error) { return 0, nil }, func() error { return errors.New("rolled back a committed generation") })
	if err != nil || !strings.Contains(did, "generation 1 was committed") {
		t.Fatalf("Recover = %q, %v; want generation 1 kept", did, err)
	}
	m := d2.Manifest()
	if m.Generation != 1 || len(m.Batches) != 1 {
		t.Fatalf("reopened manifest at generation %d with %d batches, want 1 and 1", m.Generation, len(m.Batches))
	}
	file := filepath.Join(path, storage.ChunksDir, m.Batches[0].File)
	if raw, err := os.ReadFile(file); err != nil || string(raw) != "a batch file's bytes\n" {
		t.Errorf("the manifest names %s, which the failed commit removed or changed: %q, %v", file, raw, err)
	}
}
