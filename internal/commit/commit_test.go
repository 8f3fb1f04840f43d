package commit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
)

// writeOne opens a new index directory and writes generation 1's batch
// file through Write: a commit waiting for Publish.
func writeOne(t *testing.T) (*storage.Dir, *Commit) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "idx")
	d, err := storage.Open(path, storage.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := Write(d, Files{
		Batch:   storage.Batch{Generation: 1, File: storage.BatchName(1), Chunks: 1, CommittedAt: "2024-06-01T00:00:00Z"},
		Body:    []byte("a batch file's bytes\n"),
		AddDocs: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

// TestPublishSyncsBesideApply: the names of a commit's files are made
// durable, and its manifest written to a temp file, on another goroutine
// while apply runs, and Publish waits for both; a failure of either undoes
// the lexical change and removes the files, the manifest's temp file
// among them, and the two failures are reported together.
func TestPublishSyncsBesideApply(t *testing.T) {
	batch := filepath.Join(storage.ChunksDir, storage.BatchName(1))
	errApply := errors.New("bleve refused the batch")
	cases := []struct {
		name, reason string
		applyErr     error
		hideChunks   bool // chunks/ renamed away during apply: its fsync cannot open it
		wantErr      []error
		wantSyncErr  bool
		wantUndo     bool
	}{
		{name: "both succeed", reason: "the generation is published and its batch file stays"},
		{name: "apply fails", reason: "the sync beside it is waited for, then the lexical change is undone and the file removed",
			applyErr: errApply, wantErr: []error{errApply}, wantUndo: true},
		{name: "sync fails", reason: "a name that could not be made durable fails the commit though apply succeeded",
			hideChunks: true, wantSyncErr: true, wantUndo: true},
		{name: "both fail", reason: "both causes are reported",
			applyErr: errApply, hideChunks: true, wantErr: []error{errApply}, wantSyncErr: true, wantUndo: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, c := writeOne(t)
			chunks := filepath.Join(d.Path(), storage.ChunksDir)
			if tc.hideChunks {
				// Before Publish starts the sync: apply cannot order itself
				// against the goroutine, so the directory goes first and
				// comes back in undo, where the files are removed.
				if err := os.Rename(chunks, chunks+".away"); err != nil {
					t.Fatal(err)
				}
			}
			applied, undone := false, false
			err := Publish(c,
				func() error { applied = true; return tc.applyErr },
				func() error {
					undone = true
					if tc.hideChunks {
						return os.Rename(chunks+".away", chunks)
					}
					return nil
				})
			if !applied {
				t.Fatal("apply was not called")
			}
			if undone != tc.wantUndo {
				t.Fatalf("undo called %v, want %v (err %v)", undone, tc.wantUndo, err)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("error %v does not wrap %v", err, want)
				}
			}
			var pe *os.PathError
			if gotSync := errors.As(err, &pe) && pe.Path == chunks; gotSync != tc.wantSyncErr {
				t.Fatalf("error %v: names the fsync of %s: %v, want %v", err, chunks, gotSync, tc.wantSyncErr)
			}
			if len(tc.wantErr) == 0 && !tc.wantSyncErr && err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(d.Path(), batch))
			if published := d.Manifest().Generation == 1; published != (err == nil) {
				t.Fatalf("manifest at generation %d after error %v", d.Manifest().Generation, err)
			}
			if kept := statErr == nil; kept != (err == nil) {
				t.Fatalf("batch file kept %v after error %v (stat: %v)", kept, err, statErr)
			}
			if _, err := os.Stat(filepath.Join(d.Path(), storage.PendingName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left after the commit: %v", storage.PendingName, err)
			}
			for _, sub := range []string{".", storage.ChunksDir} {
				entries, derr := os.ReadDir(filepath.Join(d.Path(), sub))
				if derr != nil {
					t.Fatal(derr)
				}
				for _, e := range entries {
					if fsutil.IsTemp(e.Name()) {
						t.Fatalf("temp file %s left in %s after error %v", e.Name(), sub, err)
					}
				}
			}
		})
	}
}

// TestPrepareRunsBesideApply: the manifest is staged (its temp file
// written) while apply runs, not after it: apply waits for the temp file
// to appear, and gives up after a minute, which only a Publish that
// prepares after apply would take.
func TestPrepareRunsBesideApply(t *testing.T) {
	d, c := writeOne(t)
	staged := func() bool {
		entries, err := os.ReadDir(d.Path())
		if err != nil {
			t.Error(err)
			return true
		}
		for _, e := range entries {
			if fsutil.IsTempOf(e.Name(), storage.ManifestName) {
				return true
			}
		}
		return false
	}
	errNotBeside := errors.New("no manifest was staged while apply ran")
	apply := func() error {
		for deadline := time.Now().Add(time.Minute); !staged(); runtime.Gosched() {
			if time.Now().After(deadline) {
				return errNotBeside
			}
		}
		return nil
	}
	if err := Publish(c, apply, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if d.Manifest().Generation != 1 || staged() {
		t.Fatalf("after Publish: manifest at generation %d, a temp manifest left: %v", d.Manifest().Generation, staged())
	}
}

// TestWriteLeavesNothingWhenItFails: the batch file is written beside the
// commit's record, so a record that cannot be written, or a batch file
// that cannot, must take the other down with it: no temp file, no record,
// no batch file left.
func TestWriteLeavesNothingWhenItFails(t *testing.T) {
	cases := []struct {
		name, reason string
		gen          int64 // the batch's generation
		refuseRename bool  // the batch file's rename fails (storage.Hooks.BeforeRename)
		want         string
	}{
		{name: "record refused", reason: "Begin refuses a generation that skips one; the batch written beside it is discarded",
			gen: 2, want: "generation 2 after 0"},
		{name: "batch not renamed", reason: "the record was written and is removed again, with the batch's temp file",
			gen: 1, refuseRename: true, want: "disk full"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "idx")
			d, err := storage.Open(path, storage.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if tc.refuseRename {
				d.Hooks.BeforeRename = func(string) error { return errors.New("disk full") }
			}
			_, err = Write(d, Files{
				Batch:   storage.Batch{Generation: tc.gen, File: storage.BatchName(tc.gen), Chunks: 1, CommittedAt: "2024-06-01T00:00:00Z"},
				Body:    []byte("a batch file's bytes\n"),
				AddDocs: 1,
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			for _, sub := range []string{".", storage.ChunksDir} {
				entries, err := os.ReadDir(filepath.Join(path, sub))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if n := e.Name(); n != storage.ManifestName && n != storage.LockName && n != storage.ChunksDir {
						t.Errorf("%s left in %s", n, sub)
					}
				}
			}
			if d.Unfinished() {
				t.Error("a commit record is left in memory")
			}
		})
	}
}
