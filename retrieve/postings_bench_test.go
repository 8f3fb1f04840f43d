package retrieve

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// decodeEach is how decodePostings read a list until issue 30's stop 71,
// kept as the benchmark's peer: a fresh zapx iterator for each list, and
// each posting's norm asked through an interface.
func decodeEach(pl segment.PostingsList) (*decodedPostings, bool, error) {
	n := pl.Count()
	p := &decodedPostings{docs: make([]uint32, 0, n), fn: make([]uint32, 0, n)}
	it := pl.Iterator(true, true, false, nil)
	for {
		q, err := it.Next()
		if err != nil || q == nil {
			return p, err == nil, err
		}
		z, ok := q.(interface{ NormUint64() uint64 })
		if !ok || q.Number() > math.MaxUint32 || q.Frequency() > math.MaxUint16 || z.NormUint64() > math.MaxUint16 {
			return nil, false, nil
		}
		p.docs = append(p.docs, uint32(q.Number()))
		p.fn = append(p.fn, uint32(q.Frequency())<<16|uint32(z.NormUint64()))
	}
}

// BenchmarkDecodePostings decodes the postings of every word of a
// partition's size of passages (2,600 of 20 to 120 words drawn Zipf-like
// from pruneWords, seeded; the million-chunk spread index's partitions hold
// 2,600 at the median) on disk, two ways taking turns list by list: the
// peer, decodeEach, and the cache's decodePostings. It reports each way's
// time a list and their ratio, and checks that both decode the same.
func BenchmarkDecodePostings(b *testing.B) {
	ctx := context.Background()
	l, err := OpenLexical(filepath.Join(b.TempDir(), "lex"), LexicalOptions{Analyzer: "standard"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const seed = 20261206
	b.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 4))
	day := asof.MustDate("2024-03-01")
	var docs []Doc
	for i := range 2600 {
		id := fmt.Sprintf("c%04d", i)
		c := &evidence.Chunk{ID: id, DocID: id, Text: pruneText(r, 20+r.IntN(100)), SourceURL: "u", Connector: "c",
			RetrievedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
			Anchor:      asof.Anchor{At: time.Unix(day.Days()*86400, 0).UTC(), Field: "published"}}
		if err := c.Prepare(); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, Doc{Chunk: c, Gen: 1})
	}
	if err := l.Index(ctx, docs); err != nil {
		b.Fatal(err)
	}
	snap := openSnapshot(b, l.parts[0].idx)
	defer snap.Close()
	dicts, err := newFieldDicts(snap, fieldText)
	if err != nil {
		b.Fatal(err)
	}
	type list struct {
		pl segment.PostingsList
		n  uint64
	}
	var lists []list
	postings := 0
	for _, d := range dicts.dicts {
		for _, w := range append(append([]string{}, pruneWords...), pruneStop...) {
			pl, err := d.PostingsList([]byte(w), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if n := pl.Count(); n > 0 {
				lists, postings = append(lists, list{pl, n}), postings+int(n)
			}
		}
	}
	b.Logf("%d lists in %d segment(s), %d postings", len(lists), len(dicts.dicts), postings)
	c := newPostingsCache(DefaultPostingsCache)
	var took [2]time.Duration
	for i := 0; b.Loop(); i++ {
		li := lists[i%len(lists)]
		var got [2]*decodedPostings
		for turn := range 2 {
			way := (i/len(lists) + turn) % 2 // each way goes first every other round of the lists
			start := time.Now()
			var ok bool
			if way == 0 {
				got[way], ok, err = decodeEach(li.pl)
			} else {
				got[way], ok, err = c.decodePostings(li.pl)
			}
			took[way] += time.Since(start)
			if err != nil || !ok {
				b.Fatalf("list of %d: %v, %v", li.n, ok, err)
			}
		}
		if len(got[0].docs) != len(got[1].docs) || len(got[1].docs) > 0 && (got[0].docs[len(got[0].docs)-1] != got[1].docs[len(got[1].docs)-1] || got[0].fn[0] != got[1].fn[0]) {
			b.Fatalf("list of %d: the two ways decode differently", li.n)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "each-ns/list")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "reuse-ns/list")
	b.ReportMetric(float64(took[1])/float64(took[0]), "reuse/each")
}
