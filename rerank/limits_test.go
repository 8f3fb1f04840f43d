package rerank

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// craftedModel seals a model header declaring trees whose node counts are
// nodes[i], followed by body bytes (the nodes, or too few of them).
func craftedModel(trees uint64, nodes []uint64, body []byte) []byte {
	b := []byte(modelMagic)
	b = binary.AppendUvarint(b, uint64(len(FeatureSet)))
	b = append(b, FeatureSet...)
	b = binary.AppendUvarint(b, NumFeatures)
	b = binary.AppendUvarint(b, 0) // no training record
	b = binary.AppendUvarint(b, trees)
	for _, n := range nodes {
		b = binary.AppendUvarint(b, n)
	}
	return fsutil.Seal(append(b, body...))
}

// allocated returns the bytes the heap handed out while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A model file's declared counts are checked against the format's limits
// and against its own size before anything is allocated for them (issue
// 31, item 6: on b3bfa5e a tree declaring 65,536 nodes got a 1.5 MB slice
// before its first node was read, and 10,000 such trees took gigabytes).
func TestDecodeModelRefusesBeforeAllocating(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  []byte
		want error
	}{
		// Tiny files whose headers claim what their bytes cannot hold.
		{"one tree at the node limit", craftedModel(1, []uint64{MaxTreeNodes}, []byte{0, 2}), ErrModelTooLarge},
		{"trees at the limit", craftedModel(MaxModelTrees, []uint64{MaxTreeNodes}, []byte{0, 2}), ErrModelTooLarge},
		// Past the limits themselves.
		{"trees past the limit", craftedModel(MaxModelTrees+1, nil, nil), ErrModel},
		{"nodes past the limit", craftedModel(1, []uint64{MaxTreeNodes + 1}, nil), ErrModel},
	} {
		var err error
		n := allocated(func() { _, err = DecodeModel(tc.raw, "crafted.evm") })
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrModel) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		// The file itself is under 100 bytes; its unsealing and the error
		// take a few kilobytes, a slice for its declared nodes 1.5 MB.
		if n > 64<<10 {
			t.Errorf("%s: %d bytes allocated before refusing a %d-byte file", tc.name, n, len(tc.raw))
		}
	}
}

// The total node count is bounded too: trees each within MaxTreeNodes whose
// sum passes MaxModelNodes are refused at the tree that passes it, before
// its nodes are allocated, even when the file's bytes would hold them.
func TestDecodeModelRefusesTotalNodes(t *testing.T) {
	const per = MaxTreeNodes
	trees := MaxModelNodes/per + 1
	b := []byte(modelMagic)
	b = binary.AppendUvarint(b, uint64(len(FeatureSet)))
	b = append(b, FeatureSet...)
	b = binary.AppendUvarint(b, NumFeatures)
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, uint64(trees))
	for range trees {
		b = binary.AppendUvarint(b, per)
		for range per {
			b = append(b, 0, 2) // a leaf of value 1
		}
	}
	_, err := DecodeModel(fsutil.Seal(b), "many.evm")
	if !errors.Is(err, ErrModelTooLarge) {
		t.Fatalf("got %v, want ErrModelTooLarge", err)
	}
	const want = "declares 65536 nodes (4259840 in all, at most 4194304"
	if got := err.Error(); !strings.Contains(got, want) {
		t.Fatalf("got %q, want it to say %q", got, want)
	}
}

// A file larger than MaxModelBytes is refused by its size, unread.
func TestLoadModelRefusesLargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.evm")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxModelBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	var lerr error
	n := allocated(func() { _, lerr = LoadModel(path) })
	if !errors.Is(lerr, ErrModelTooLarge) {
		t.Fatalf("got %v, want ErrModelTooLarge", lerr)
	}
	if n > 64<<10 {
		t.Fatalf("%d bytes allocated: the file was read", n)
	}
}

// The trainer refuses settings whose model could pass MaxModelNodes.
func TestTrainRefusesModelPastTheLimits(t *testing.T) {
	_, err := TrainOptions{Trees: maxTrees, Leaves: 1024}.WithDefaults()
	if !errors.Is(err, ErrTrain) {
		t.Fatalf("got %v, want ErrTrain", err)
	}
}
