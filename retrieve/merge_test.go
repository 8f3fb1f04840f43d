package retrieve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// TestSmallBatchesLeaveTheLargeSegment: batches of a few documents into a
// partition of a thousand keep the partition's large segment as it was
// (partMergePlan). Under bleve's default plan the budget of a partition of
// 1,006 documents is one segment, so each of these batches merged the
// whole partition again; under partMergePlan it is four (three tiny
// segments of the 200 floor, and one of the next tier), so no merge is
// planned at all and the store holds exactly the four segments the four
// batches made, whatever the merger's timing. The hits are the same as
// after Merge, which makes the partition one segment.
func TestSmallBatchesLeaveTheLargeSegment(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "lex")
	l, err := OpenLexical(dir, LexicalOptions{PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2020, 1, 5, 0, 0, 0, 0, time.UTC)
	doc := func(i int) Doc {
		id := fmt.Sprintf("c%04d", i)
		text := fmt.Sprintf("quarterly filing %s of the capital requirement number %d", id, i%7)
		return Doc{Chunk: &evidence.Chunk{ID: id, DocID: id, Version: "1", Text: text, Anchor: asof.Anchor{At: at, Field: "anchor"}}, Gen: 1}
	}
	bounds := NewBounds()
	var large []Doc
	for i := range 1006 {
		bounds.Add(doc(i).Chunk)
		if i < 1000 {
			large = append(large, doc(i))
		}
	}
	if err := l.Index(ctx, large); err != nil {
		t.Fatal(err)
	}
	parts, err := l.allParts()
	if err != nil || len(parts) != 1 {
		t.Fatalf("%d partitions (%v), want one", len(parts), err)
	}
	store := filepath.Join(parts[0].dir, "store")
	first := segmentFiles(t, store)
	if len(first) != 1 {
		t.Fatalf("after one batch the store holds segments %v, want one", first)
	}
	for b := range 3 {
		if err := l.Index(ctx, []Doc{doc(1000 + 2*b), doc(1001 + 2*b)}); err != nil {
			t.Fatal(err)
		}
	}
	elig := Eligibility{AsOf: asof.MustDate("2020-06-01"), UpTo: 1}
	search := func() []Hit {
		res, err := l.Search(ctx, "capital requirement 3", elig, bounds, 20, BM25Stats{Docs: 1006, Tokens: 1006 * 8})
		if err != nil {
			t.Fatal(err)
		}
		return res.Hits
	}
	before := search()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, store)
	if len(segs) != 4 || !slices.Contains(segs, first[0]) {
		t.Fatalf("after three small batches the store holds segments %v, want four, %s (the large one) among them", segs, first[0])
	}

	if l, err = OpenLexical(dir, LexicalOptions{}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	parts, err = l.allParts()
	if err != nil {
		t.Fatal(err)
	}
	if n := liveSegments(t, parts[0]); n != 1 {
		t.Fatalf("after Merge the partition reads %d segments, want one", n)
	}
	if after := search(); len(before) == 0 || !slices.Equal(after, before) {
		t.Fatalf("hits after Merge %v, before %v: want the same, and some", after, before)
	}
}

// liveSegments is how many segments p's current snapshot reads.
func liveSegments(t *testing.T, p *part) int {
	t.Helper()
	snap := openSnapshot(t, p.idx)
	defer snap.Close()
	return len(snap.Segments())
}

// segmentFiles is the names of the zap segment files in a bleve store
// directory, sorted.
func segmentFiles(t *testing.T, store string) []string {
	t.Helper()
	ents, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".zap") {
			out = append(out, e.Name())
		}
	}
	return out
}
