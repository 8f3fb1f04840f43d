package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/retrieve"
)

// testLexical is an in-memory lexical index: what Analyze needs.
func testLexical(t *testing.T) *retrieve.Lexical {
	t.Helper()
	lex, err := retrieve.OpenLexical("", retrieve.LexicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lex.Close() })
	return lex
}

// testChunk returns a chunk of tenant, document doc version ver, with
// text, anchored and valid from day; pos >= 0 sets its MetaPosition.
func testChunk(id, tenant, doc, ver, text string, day int64, pos int) *evidence.Chunk {
	at := asof.DateFromDays(day).Start()
	c := &evidence.Chunk{ID: id, DocID: doc, Version: ver, Text: text, Tenant: tenant,
		SourceURL: "https://example.test/" + id, Connector: "test", RetrievedAt: at,
		Anchor: asof.Anchor{At: at, Field: "published"}, Valid: asof.Interval{From: asof.DateFromDays(day)}}
	if pos >= 0 {
		c.Meta = map[string]string{MetaPosition: fmt.Sprint(pos)}
	}
	c.ContentHash = c.ComputeHash()
	return c
}

// dump renders what a state holds of its chunks and figures in one
// canonical text: sorted keys throughout, reranker terms as their names
// (so that two states numbering terms alike compare by what they count).
func dump(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gen %d stats %+v bounds %v commits %d\n", s.Gen, s.Stats, s.Bounds, len(s.Commits))
	names := func(nums []uint32) []string {
		out := make([]string, len(nums))
		for i, n := range nums {
			out[i] = s.Names[n]
		}
		return out
	}
	for _, k := range evidence.SortedKeys(s.DocOrder) {
		d := s.DocOrder[k]
		fmt.Fprintf(&b, "doc %q:", k)
		for i, id := range d.IDs {
			fmt.Fprintf(&b, " %s%v", id, names(d.Nums[i]))
		}
		b.WriteString("\n")
	}
	for _, id := range evidence.SortedKeys(s.DocPlace) {
		p := s.DocPlace[id]
		fmt.Fprintf(&b, "place %s: key %q pos %d gen %d same-list %t committed %d\n", id, p.Key, p.Pos, p.Gen, p.List == s.DocOrder[p.Key], s.Committed[id])
	}
	for _, id := range evidence.SortedKeys(s.Facts) {
		for _, fa := range s.Facts[id] {
			fmt.Fprintf(&b, "fact %s: gen %d %s\n", id, fa.Gen, fa.Fact)
		}
	}
	for _, name := range evidence.SortedKeys(s.Tenants) {
		ts := s.Tenants[name]
		fmt.Fprintf(&b, "tenant %q: docs %v tokens %v facts %v rr %v ids %v digest %v\n", name, ts.Docs, ts.Tokens, ts.Facts, ts.RerankTerms, ts.ChunkIDs, ts.Digest)
		for _, t := range evidence.SortedKeys(ts.LexDF) {
			fmt.Fprintf(&b, "  lex %s %v\n", t, ts.LexDF[t])
		}
		for _, t := range evidence.SortedKeys(ts.RerankDF) {
			fmt.Fprintf(&b, "  rr %s %v\n", t, ts.RerankDF[t])
		}
	}
	return b.String()
}

// TestExtendLeavesItsParent: Extend copies what it changes. Over seeded
// series of commits (chunks joining new and existing documents, facts on
// earlier chunks), every state keeps what it held when it was made, and the
// last equals one state built by adding every commit's chunks and facts in
// place (no Extend).
func TestExtendLeavesItsParent(t *testing.T) {
	lex := testLexical(t)
	words := strings.Fields("capital buffer liquidity ratio reserve tier leverage exposure market credit risk report")
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 30))
		var pool []*evidence.Chunk
		for i := range 40 {
			ws := make([]string, 5+rng.IntN(8))
			for j := range ws {
				ws[j] = words[rng.IntN(len(words))]
			}
			tenant := []string{"", "acme", "globex"}[rng.IntN(3)]
			doc := fmt.Sprintf("d%d", rng.IntN(6))
			pos := -1
			if rng.IntN(3) == 0 {
				pos = rng.IntN(5)
			}
			pool = append(pool, testChunk(fmt.Sprintf("art-%d", i), tenant, doc, fmt.Sprint(1+rng.IntN(2)), strings.Join(ws, " "), 18000+int64(rng.IntN(400)), pos))
		}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })

		built := NewState() // the reference: every commit added in place
		b := NewBuilding()
		states, dumps := []*State{NewState()}, []string{dump(NewState())}
		var committed []*evidence.Chunk
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for gen := int64(1); len(pool) > 0; gen++ {
			n := min(len(pool), rng.IntN(10))
			add := pool[:n]
			pool = pool[n:]
			an := make([]Analyzed, len(add))
			for i, c := range add {
				an[i] = Analyze(lex, nil, nil, c.Text)
			}
			var facts []*evidence.Fact
			for range rng.IntN(3) {
				if len(committed) == 0 {
					break
				}
				c := committed[rng.IntN(len(committed))]
				facts = append(facts, &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: c.ID, End: asof.DateFromDays(18500 + int64(rng.IntN(50))), Anchor: t0})
			}
			at := t0.Add(time.Duration(gen) * time.Hour)
			next := extend(t, states[len(states)-1], gen, at, add, an, facts)
			states, dumps = append(states, next), append(dumps, dump(next))

			built.Gen, built.Commits = gen, append(built.Commits, at)
			for i, c := range add {
				built.Add(gen, c, an[i], b)
			}
			for _, f := range facts {
				built.AddFact(gen, f, b.Own)
			}
			committed = append(committed, add...)
		}
		for g, s := range states {
			if got := dump(s); got != dumps[g] {
				t.Fatalf("seed %d: generation %d changed after later commits:\nnow\n%s\nwhen made\n%s", seed, g, got, dumps[g])
			}
		}
		if got, want := dumps[len(dumps)-1], dump(built); got != want {
			t.Fatalf("seed %d: extended commit by commit\n%s\nbuilt in place\n%s", seed, got, want)
		}
	}
}

// TestExtendWithFactsAloneSharesChunks: a commit of facts alone shares
// its parent's maps of chunks and documents (it copies none: issue 30),
// and its facts stay out of the parent.
func TestExtendWithFactsAloneSharesChunks(t *testing.T) {
	lex := testLexical(t)
	c := testChunk("art-1", "acme", "d", "1", "capital buffer", 18000, -1)
	parent := extend(t, NewState(), 1, time.Unix(0, 0), []*evidence.Chunk{c}, []Analyzed{Analyze(lex, nil, nil, c.Text)}, nil)
	before := dump(parent)
	f := &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: c.ID, End: asof.DateFromDays(18100), Anchor: time.Unix(0, 0)}
	child := extend(t, parent, 2, time.Unix(60, 0), nil, nil, []*evidence.Fact{f})
	for _, m := range []struct {
		name        string
		child, mine any
	}{
		{"Chunks", child.Chunks, parent.Chunks}, {"Committed", child.Committed, parent.Committed},
		{"DocPlace", child.DocPlace, parent.DocPlace}, {"DocOrder", child.DocOrder, parent.DocOrder},
	} {
		if reflect.ValueOf(m.child).UnsafePointer() != reflect.ValueOf(m.mine).UnsafePointer() {
			t.Errorf("%s: the commit of a fact copied its parent's map", m.name)
		}
	}
	if got := dump(parent); got != before {
		t.Errorf("the parent changed:\n%s\nwas\n%s", got, before)
	}
	if got := len(child.Facts[c.ID]); got != 1 {
		t.Errorf("the child holds %d facts of %s, want 1", got, c.ID)
	}
	if got, want := child.RetiredAt(c.ID, 2), int64(18100); got != want {
		t.Errorf("RetiredAt at generation 2: %d, want %d", got, want)
	}
	if got := parent.RetiredAt(c.ID, 2); got != never {
		t.Errorf("the parent sees the child's fact: retired at %d", got)
	}
}

// TestDocumentOrder: a document's chunks lie in the order its chunks
// name (MetaPosition first, then the natural order of IDs, then their
// bytes), whatever order the commits brought them in; each chunk's place
// names its index there.
func TestDocumentOrder(t *testing.T) {
	lex := testLexical(t)
	want := []string{"z", "y", "art-1", "art-2", "art-10", "art-10a", "b"}
	pos := map[string]int{"z": 0, "y": 3}
	for seed := uint64(1); seed <= 10; seed++ {
		order := slices.Clone(want)
		rng := rand.New(rand.NewPCG(seed, 31))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		s := NewState()
		for i, id := range order {
			p, ok := pos[id]
			if !ok {
				p = -1
			}
			c := testChunk(id, "", "doc", "1", "text of "+id, 18000, p)
			s = extend(t, s, int64(i+1), time.Unix(int64(i), 0), []*evidence.Chunk{c}, []Analyzed{Analyze(lex, nil, nil, c.Text)}, nil)
		}
		d := s.DocOrder["\x00doc\x001"]
		if d == nil || !slices.Equal(d.IDs, want) {
			t.Fatalf("seed %d (commits %v): document order %v, want %v", seed, order, d, want)
		}
		for i, id := range want {
			if p := s.DocPlace[id]; p.Pos != i || p.List != d {
				t.Errorf("seed %d: %s placed at %d (its list the document's: %t), want %d", seed, id, p.Pos, p.List == d, i)
			}
		}
	}
}

// extend is s.Extend, failing t on an error (a state in memory has none).
func extend(t testing.TB, s *State, gen int64, at time.Time, add []*evidence.Chunk, an []Analyzed, facts []*evidence.Fact) *State {
	t.Helper()
	n, err := s.Extend(gen, at, add, an, facts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
