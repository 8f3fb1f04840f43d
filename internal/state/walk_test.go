package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
)

// rowsState returns a state read from the checkpoint of a state of docs
// documents (doc000, doc002, ...: even numbers, so that keys fall between
// them), each of one to three chunks, with nothing in its maps.
func rowsState(t *testing.T, docs int) *State {
	t.Helper()
	lex := testLexical(t)
	var add []*evidence.Chunk
	var an []Analyzed
	for d := range docs {
		for c := range 1 + d%3 {
			ch := testChunk(fmt.Sprintf("c%03d-%d", 2*d, c), "", fmt.Sprintf("doc%03d", 2*d), "1", fmt.Sprintf("text %d of document %d", c, d), 18000, c)
			add, an = append(add, ch), append(an, Analyze(lex, nil, nil, ch.Text))
		}
	}
	full := extend(t, NewState(), 1, time.Unix(1, 0), add, an, nil)
	f, err := EncodeCheckpoint(full, "walk", func() ([]byte, error) { return []byte(`{}`), nil })
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "state-00000001.bin")
	if err := os.WriteFile(name, f.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := checkpoint.Sum(f.Head())
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	st, ok, err := decodeCheckpoint(name, file, sum, "walk", nil, []string{"00000001.jsonl"})
	if err != nil || !ok {
		t.Fatalf("decode: %v (identity matched: %t)", err, ok)
	}
	t.Cleanup(func() { st.Rows.Close() })
	return st
}

// TestDocsInKeyOrderInParts: the documents of a state read from a
// checkpoint, with the maps holding documents before, between and after
// the rows' and documents copied out of them (at every place a part may
// start), come out the same cut into any number of parts as in one: in key
// order, each copied-out document as the maps hold it, every other row's
// document once.
func TestDocsInKeyOrderInParts(t *testing.T) {
	st := rowsState(t, 23)
	n := st.Rows.Docs()
	var rowKeys []string
	for k := range n {
		e, ok := st.Rows.Doc(k)
		if !ok {
			t.Fatal(st.Rows.Err())
		}
		rowKeys = append(rowKeys, e.Key)
	}
	mem := func(id string) *DocList { return &DocList{IDs: []string{id}, Nums: [][]uint32{nil}} }
	for _, tc := range []struct{ name, reason string }{
		{"no maps", "a checkpoint just read: the rows alone"},
		{"new documents", "keys before, between and after the rows', none equal"},
		{"copied out everywhere", "every row's document in the maps too: each part starts on one"},
		{"both", "new and copied-out documents together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.DocOrder = map[string]*DocList{}
			if strings.Contains(tc.name, "new") || tc.name == "both" {
				st.DocOrder[""] = mem("m-first")
				for i, k := range rowKeys {
					if i%2 == 0 {
						st.DocOrder[k+"\x00a"] = mem(fmt.Sprintf("m-after-%d", i))
					}
				}
				st.DocOrder["\xff"] = mem("m-last")
			}
			if strings.Contains(tc.name, "copied") || tc.name == "both" {
				for i, k := range rowKeys {
					if tc.name == "both" && i%3 != 0 {
						continue
					}
					st.DocOrder[k] = mem(fmt.Sprintf("m-copy-%d", i))
				}
			}
			for _, nums := range []bool{false, true} {
				one, err := st.docsInKeyOrder(nums, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := n + len(st.DocOrder) - copiedOut(st.DocOrder, rowKeys); len(one) != want {
					t.Fatalf("%s: %d documents, want %d", tc.reason, len(one), want)
				}
				for i, d := range one {
					if i > 0 && one[i-1].Key >= d.Key {
						t.Fatalf("%s: %q after %q", tc.reason, d.Key, one[i-1].Key)
					}
					if l, ok := st.DocOrder[d.Key]; ok && (d.Chunks != nil || d.IDs[0] != l.IDs[0]) {
						t.Fatalf("%s: document %q is the rows', not the maps'", tc.reason, d.Key)
					}
				}
				for _, parts := range []int{2, 3, 5, n - 1, n, n + 4} {
					got, err := st.docsInKeyOrder(nums, parts, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(one, got) {
						t.Fatalf("%s: nums %t, %d parts: not the one part's documents", tc.reason, nums, parts)
					}
				}
			}
		})
	}
}

// copiedOut counts the keys of maps that are rows' documents too.
func copiedOut(maps map[string]*DocList, rowKeys []string) int {
	n := 0
	for _, k := range rowKeys {
		if _, ok := maps[k]; ok {
			n++
		}
	}
	return n
}

// TestCheckpointAheadStops: a checkpoint written ahead gives up with
// checkpoint.ErrStopped once its stop says so (its engine is closing), in
// the walk of the rows; asked and never told, it gives Checkpoint's bytes
// (with the catalog the state holds, which it takes as it is).
func TestCheckpointAheadStops(t *testing.T) {
	st := rowsState(t, 9000) // more than one walk part's worth of documents, more than stopEvery chunks
	lex := testLexical(t)
	if _, err := CheckpointAhead(st, lex, func() bool { return true }, nil); !errors.Is(err, checkpoint.ErrStopped) {
		t.Fatalf("told to stop: %v, want ErrStopped", err)
	}
	// The catalog over every chunk (after facts, a state has none to take
	// as it is) asks too, every stopEvery chunks: more than this state's
	// documents hold are walked before it asks.
	docs, err := st.docsInKeyOrder(false, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalogOf(lex, st, docs, func() bool { return true }); !errors.Is(err, checkpoint.ErrStopped) {
		t.Fatalf("the catalog told to stop: %v, want ErrStopped", err)
	}
	if _, err := catalogOf(lex, st, docs, func() bool { return false }); err != nil {
		t.Fatalf("the catalog never told: %v", err)
	}
	var asked atomic.Int64 // asked on every core
	got, err := CheckpointAhead(st, lex, func() bool { asked.Add(1); return false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Checkpoint(st, lex, func([]checkpoint.Doc) ([]byte, error) { return st.Catalog, nil }) // the catalog st was read with
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) || asked.Load() < 2 {
		t.Fatalf("never told: %d bytes, Checkpoint's %d; asked %d times", len(got.Bytes()), len(want.Bytes()), asked.Load())
	}
}
