package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteTempEdges: stop is asked once before each run of
// writeBackEvery bytes, never after the last byte (a file of exactly N
// runs asks N times), not for empty parts, and not at all for no bytes;
// the file holds the parts in order; a write whose directory is missing
// leaves nothing and says why.
func TestWriteTempEdges(t *testing.T) {
	run := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*13 + n)
		}
		return b
	}
	for _, c := range []struct {
		name  string
		parts [][]byte
		asked int
	}{
		{"no bytes", nil, 0},
		{"empty parts only", [][]byte{{}, nil, {}}, 0},
		{"one byte", [][]byte{{7}}, 1},
		{"less than a run", [][]byte{run(writeBackEvery - 1)}, 1},
		{"exactly one run", [][]byte{run(writeBackEvery)}, 1},
		{"exactly two runs, in one part", [][]byte{run(2 * writeBackEvery)}, 2},
		{"exactly two runs, parts ending on the runs, empty parts between", [][]byte{{}, run(writeBackEvery), nil, run(writeBackEvery), {}}, 2},
		{"two runs and a byte", [][]byte{run(writeBackEvery), run(writeBackEvery + 1)}, 3},
		{"runs cut across parts", [][]byte{run(3), run(writeBackEvery - 3), run(1), run(writeBackEvery - 2), run(2)}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			asked := 0
			tmp, err := WriteTemp(filepath.Join(dir, "f.bin"), func() bool { asked++; return false }, c.parts...)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, p := range c.parts {
				want = append(want, p...)
			}
			got, err := os.ReadFile(tmp)
			if err != nil || string(got) != string(want) {
				t.Fatalf("the file holds %d bytes (%v), want the %d of the parts", len(got), err, len(want))
			}
			if asked != c.asked {
				t.Fatalf("stop asked %d times, want %d", asked, c.asked)
			}
			if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o644 {
				t.Fatalf("mode %v (%v), want 0644", fi.Mode(), err)
			}
		})
	}
	t.Run("stopped at the first question", func(t *testing.T) {
		dir := t.TempDir()
		_, err := WriteTemp(filepath.Join(dir, "f.bin"), func() bool { return true }, []byte("x"))
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("err %v, want ErrStopped", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("left %v", entries)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := WriteTemp(filepath.Join(dir, "missing", "f.bin"), nil, []byte("x")); err == nil {
			t.Fatal("wrote into a missing directory")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("left %v", entries)
		}
	})
}
