package retrieve

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// partDicts returns the text field's dictionaries of the first partition
// of pc's index, read through a snapshot that stays open until the test
// ends.
func partDicts(t *testing.T, pc *pruneCorpus) *fieldDicts {
	t.Helper()
	dicts, err := newFieldDicts(snapshotOf(t, pc.l.parts[0].idx, 1, 1<<20), fieldText)
	if err != nil {
		t.Fatal(err)
	}
	return dicts
}

// Decoded postings are zapx's, posting for posting: the same documents,
// deleted ones included, frequencies and lengths.
func TestDecodedPostingsAreZapx(t *testing.T) {
	pc := buildPruneCorpus(t, rand.New(rand.NewPCG(7, 7)), "en")
	dicts := partDicts(t, pc)
	c := newPostingsCache(DefaultPostingsCache)
	checked := 0
	done := map[string]bool{} // words that share a stem make one term
	for _, w := range pruneWords {
		terms, _ := pc.l.Terms(w)
		for _, term := range terms {
			if done[term] {
				continue
			}
			done[term] = true
			for i, dict := range dicts.dicts {
				got, ok, err := c.postings(dicts.segs[i], dict, term)
				if err != nil || !ok {
					t.Fatalf("%q in segment %d: ok %v, %v (the cache has room: decoded at the first ask)", term, i, ok, err)
				}
				pl, err := dict.PostingsList([]byte(term), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				var docs []uint32
				it := pl.Iterator(true, true, false, nil)
				for p, err := it.Next(); p != nil || err != nil; p, err = it.Next() {
					if err != nil {
						t.Fatal(err)
					}
					j := len(docs)
					docs = append(docs, uint32(p.Number()))
					if j >= len(got.docs) {
						continue // the lengths differ, reported below
					}
					if f, nb := got.freq(j), got.norm(j); uint64(f) != p.Frequency() || uint64(nb) != p.(interface{ NormUint64() uint64 }).NormUint64() {
						t.Fatalf("%q in segment %d, posting %d: frequency %d, norm bits %d decoded; zapx %d, %d", term, i, j, f, nb, p.Frequency(), p.(interface{ NormUint64() uint64 }).NormUint64())
					}
					if l := lengthOfNormBits(got.norm(j)); l != postingLength(p) {
						t.Fatalf("%q: length %v from the norm's bits, %v from the posting", term, l, postingLength(p))
					}
				}
				if !slices.Equal(got.docs, docs) {
					t.Fatalf("%q in segment %d: decoded documents %v, zapx %v", term, i, got.docs, docs)
				}
				again, _, _ := c.postings(dicts.segs[i], dict, term)
				if again != got {
					t.Fatalf("%q in segment %d: a second ask decoded again", term, i)
				}
				checked += len(docs)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no posting checked")
	}
}

// The cache holds at most its size, drops the entry least recently asked
// for first, and turns away a list longer than an eighth of it.
func TestPostingsCacheBound(t *testing.T) {
	pc := buildPruneCorpus(t, rand.New(rand.NewPCG(8, 8)), "en")
	dicts := partDicts(t, pc)
	seg, dict := dicts.segs[0], dicts.dicts[0]
	// terms of the segment with at least one posting, and their sizes
	type sized struct {
		term string
		n    uint64
	}
	var ts []sized
	for _, w := range pruneWords {
		terms, _ := pc.l.Terms(w)
		for _, term := range terms {
			pl, err := dict.PostingsList([]byte(term), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := pl.Count(); n > 0 && !slices.ContainsFunc(ts, func(s sized) bool { return s.term == term }) {
				ts = append(ts, sized{term, n})
			}
		}
	}
	if len(ts) < 4 {
		t.Fatalf("only %d terms in the segment", len(ts))
	}
	slices.SortFunc(ts, func(a, b sized) int {
		if a.n != b.n {
			return int(a.n) - int(b.n)
		}
		return slices.Compare([]byte(a.term), []byte(b.term))
	})
	size := func(s sized) int64 { return int64(s.n)*postingBytes + int64(len(s.term)) + entryOverhead }

	// Room for the two smallest lists and not a third: each of the two is
	// decoded at its first ask, while there is room; a third, asked as
	// often as the least recent of the two, is turned away, and asked once
	// more it takes that one's place.
	a, b, d, e := ts[0], ts[1], ts[2], ts[3]
	c := newPostingsCache(size(a) + size(b) + size(d) - 1)
	if lim := uint64(c.max / 8 / postingBytes); a.n > lim || b.n > lim || d.n > lim {
		t.Skipf("lists of %d, %d, %d postings exceed an eighth of the cache", a.n, b.n, d.n)
	}
	for _, s := range []sized{a, b, a} { // a asked again: b is the least recent
		for ask := 1; ask <= 2; ask++ {
			if _, ok, err := c.postings(seg, dict, s.term); err != nil || !ok {
				t.Fatalf("%q, ask %d: ok %v, %v; want kept from the first ask (room)", s.term, ask, ok, err)
			}
		}
	}
	if c.filled {
		t.Fatal("filled before any list found no room")
	}
	for ask := 1; ask <= 3; ask++ {
		p, ok, err := c.postings(seg, dict, d.term)
		if err != nil || ok != (ask == 3) || (p != nil) != ok {
			t.Fatalf("%q, ask %d: %v, %v, %v; want it kept at the third ask only (no room, and b was asked twice)", d.term, ask, p, ok, err)
		}
	}
	// Once full, a list is not decoded at its first ask, and at its
	// second not in place of the least recent entry (a) asked 4 times.
	for ask := 1; ask <= 2; ask++ {
		if p, ok, err := c.postings(seg, dict, e.term); err != nil || ok || p != nil {
			t.Fatalf("%q, ask %d of a filled cache: %v, %v, %v; want nothing", e.term, ask, p, ok, err)
		}
	}
	used, entries := c.stats()
	if want := size(a) + size(d); used != want || entries != 2 {
		t.Fatalf("after a, b, a, d: %d bytes in %d entries, want %d in 2 (b dropped, e turned away)", used, entries, want)
	}
	sk, _ := segmentKey(seg)
	c.mu.Lock()
	_, hasA := c.byID[postingsKey{sk, a.term}]
	_, hasB := c.byID[postingsKey{sk, b.term}]
	c.mu.Unlock()
	if !hasA || hasB {
		t.Fatalf("kept a: %v, kept b: %v; want a kept and b dropped", hasA, hasB)
	}

	// The longest list in a cache too small for it: turned away, kept
	// nowhere.
	long := ts[len(ts)-1]
	small := newPostingsCache(int64(long.n) * postingBytes * 4)
	small.postings(seg, dict, long.term)
	if p, ok, err := small.postings(seg, dict, long.term); err != nil || ok || p != nil {
		t.Fatalf("%q (%d postings) in a cache of %d bytes: %v, %v, %v; want turned away", long.term, long.n, small.max, p, ok, err)
	}
	if used, entries := small.stats(); used != 0 || entries != 0 {
		t.Fatalf("a turned-away list left %d bytes in %d entries", used, entries)
	}
	if newPostingsCache(0) != nil || newPostingsCache(-1) != nil {
		t.Fatal("a cache of no bytes is not nil")
	}
	if (LexicalOptions{}).postingsCache() != DefaultPostingsCache || (LexicalOptions{PostingsCache: -1}).postingsCache() > 0 {
		t.Fatal("PostingsCache: zero is not the default, or negative is not none")
	}
}

// Searches side by side share one small cache, which drops entries while
// others read them: every search returns the exhaustive search's hits
// (run with -race).
func TestPostingsCacheConcurrentSearches(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	pc := buildPruneCorpus(t, r, "en")
	pc.l.postings = newPostingsCache(16 << 10)
	ctx := context.Background()
	type ask struct {
		text string
		e    Eligibility
		st   BM25Stats
		want []Hit
	}
	var asks []ask
	for range 40 {
		a := ask{text: pc.question(r), e: pc.eligibility(r)}
		a.st = pc.stats(r, a.e.Tenant, pc.upTo(a.e))
		res, err := pc.l.SearchExhaustive(ctx, a.text, a.e, pc.bounds, 10, a.st)
		if err != nil {
			t.Fatal(err)
		}
		a.want = res.Hits
		asks = append(asks, a)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(asks))
	for g := range 4 {
		wg.Go(func() {
			for i := range asks {
				a := asks[(i+g*7)%len(asks)]
				res, err := pc.l.Search(ctx, a.text, a.e, pc.bounds, 10, a.st)
				if err != nil {
					errs <- err.Error()
					continue
				}
				if !slices.Equal(res.Hits, a.want) {
					errs <- a.text
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("search differs from the exhaustive one, or failed: %s", e)
	}
	used, entries := pc.l.postings.stats()
	if used > pc.l.postings.max || entries == 0 {
		t.Fatalf("the cache holds %d bytes in %d entries (at most %d bytes, some entries wanted)", used, entries, pc.l.postings.max)
	}
	pc.l.postings.mu.Lock()
	counted := len(pc.l.postings.asks)
	pc.l.postings.mu.Unlock()
	if counted > asksMax {
		t.Fatalf("%d keys counted, more than %d", counted, asksMax)
	}
}

// The counts of asks stay bounded however often their keys were asked:
// reaching asksMax keys, they are halved until at most half remain, in
// one go, so that the next ask does not halve them again.
func TestPostingsCacheAsksAge(t *testing.T) {
	c := newPostingsCache(DefaultPostingsCache)
	for i := range asksMax - 1 {
		for range 4 {
			c.ask(postingsKey{seg: i, term: "t"})
		}
	}
	if n := c.ask(postingsKey{seg: -1, term: "t"}); n != 1 || len(c.asks) != asksMax {
		t.Fatalf("a new key counted %d with %d keys, want 1 with %d", n, len(c.asks), asksMax)
	}
	if n := c.ask(postingsKey{seg: 0, term: "t"}); n != 1 {
		t.Fatalf("after aging, a key asked 4 times then once more counts %d, want 1 (4 halved to 0, forgotten)", n)
	}
	if len(c.asks) > asksMax/2 {
		t.Fatalf("%d keys after aging, want at most %d", len(c.asks), asksMax/2)
	}
	if n := c.ask(postingsKey{seg: 0, term: "t"}); n != 2 {
		t.Fatalf("the next ask counts %d, want 2: the counts were not halved again", n)
	}
}

// A posting whose frequency or length does not fit two bytes (a passage of
// 65,536 tokens or more) is not decoded: its term's list in that segment is
// read from zapx, and the pruned search's hits stay the exhaustive one's.
func TestDecodedPostingsRefuseLongPassages(t *testing.T) {
	ctx := context.Background()
	l, err := OpenLexical("", LexicalOptions{Analyzer: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	day := asof.MustDate("2024-03-01")
	chunk := func(id, text string) Doc {
		c := &evidence.Chunk{ID: id, DocID: id, Text: text, SourceURL: "u", Connector: "c",
			RetrievedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
			Anchor:      asof.Anchor{At: time.Unix(day.Days()*86400, 0).UTC(), Field: "published"}}
		if err := c.Prepare(); err != nil {
			t.Fatal(err)
		}
		return Doc{Chunk: c, Gen: 1}
	}
	long := strings.Repeat("filler ", 1<<16) + "rare" // 65,537 tokens
	many := strings.Repeat("rare ", 3) + "short"      // fits
	docs := []Doc{chunk("long", long), chunk("short", many), chunk("other", "rare filler")}
	b := NewBounds()
	for _, d := range docs {
		b.Add(d.Chunk)
	}
	if err := l.Index(ctx, docs); err != nil {
		t.Fatal(err)
	}
	dicts, err := newFieldDicts(snapshotOf(t, l.parts[0].idx, 1, 1), fieldText)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		term string
		ok   bool
		why  string
	}{
		{"rare", false, "a posting of the long passage: its length is past 16 bits"},
		{"filler", false, "its frequency in the long passage is past 16 bits too"},
		{"short", true, "only in a short passage"},
	} {
		pl, err := dicts.dicts[0].PostingsList([]byte(tc.term), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := newPostingsCache(1).decodePostings(pl); err != nil || ok != tc.ok {
			t.Errorf("%q decoded: ok %v, %v; want %v (%s)", tc.term, ok, err, tc.ok, tc.why)
		}
	}
	for range 2 { // the second search asks the cache again, which decodes
		want, err := l.SearchExhaustive(ctx, "rare short", Eligibility{AsOf: day}, b, 10, BM25Stats{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Search(ctx, "rare short", Eligibility{AsOf: day}, b, 10, BM25Stats{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != 3 || !slices.Equal(got.Hits, want.Hits) {
			t.Fatalf("pruned %v, exhaustive %v; want the same three", got.Hits, want.Hits)
		}
	}
}
