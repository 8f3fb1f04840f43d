package main

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// TestCorpusFromTheWorkingDirectory: the demo corpus is found from the
// directory given (the working directory by default), not from where the
// binary was built, and a missing one says how to point at it.
func TestCorpusFromTheWorkingDirectory(t *testing.T) {
	sources, err := corpusSources(filepath.Join("..", "..", "testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 2 || sources[0].Name() != "statute" || sources[1].Name() != "jsonl" {
		t.Fatalf("sources %v, want the statute and the JSONL guidance", sources)
	}

	dir := t.TempDir()
	_, err = corpusSources(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an empty directory: got %v, want fs.ErrNotExist", err)
	}
	want := "corpus: stat " + filepath.Join(dir, "records-act.json") + ": no such file or directory (run from the repository root, or pass -corpus DIR)"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}
}
