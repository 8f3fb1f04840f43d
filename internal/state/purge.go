package state

import (
	"maps"
	"slices"
	"time"

	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/retrieve"
)

// Purge returns a new state: s with the text of chunks ids (sorted,
// committed, not purged) deleted as generation gen, committed at at. Their
// terms leave every statistic at every generation; their token and term
// counts stay. s is not changed. known holds the chunks whose batch file
// arrived already redacted by this purge (a replica that applied their
// generation after the purge rewrote it): their counts are the file's,
// and their text gave the statistics no terms to take back.
func (s *State) Purge(gen int64, at time.Time, ids []string, reason string, lex *retrieve.Lexical, known map[string]storage.Redaction) *State {
	n := *s
	n.Gen, n.Commits = gen, append(s.Commits, at)
	n.Chunks, n.Feats, n.Purged = maps.Clone(s.Chunks), maps.Clone(s.Feats), maps.Clone(s.Purged)
	n.Tenants, n.DocOrder, n.DocPlace = maps.Clone(s.Tenants), maps.Clone(s.DocOrder), maps.Clone(s.DocPlace)
	n.Counts = &retrieve.Counts{N: maps.Clone(s.Counts.N), Total: s.Counts.Total}
	n.PurgeLog = append(s.PurgeLog, ids...)
	own := map[string]bool{}
	for _, id := range ids {
		c := s.Chunks[id]
		lexTerms, tokens := lex.Terms(c.Text)
		p := s.DocPlace[id]
		rr := s.TermsOf(p.List.Nums[p.Pos])
		committed := s.Committed[id]
		ts := n.OwnTenant(c.Tenant, own)
		ts.ownDF()
		for _, t := range lexTerms {
			dropOne(ts.LexDF, t, committed)
		}
		for _, t := range terms.Distinct(slices.Clone(rr)) {
			dropOne(ts.RerankDF, t, committed)
		}
		ts.AddPurge(gen, id)
		r := storage.Redaction{Generation: gen, Tokens: tokens, Terms: len(rr)}
		if k, ok := known[id]; ok {
			r = k
		}
		n.Purged[id] = PurgeAt{Gen: gen, Reason: reason, Hash: c.ContentHash, Redaction: r}
		if f := s.Feats[id]; f != nil {
			n.Counts.Sub(f)
			n.Feats[id] = []int32{}
		}
		if !own["doc\x00"+p.Key] {
			d := n.DocOrder[p.Key]
			cp := &DocList{IDs: d.IDs, Nums: slices.Clone(d.Nums)}
			n.DocOrder[p.Key] = cp
			own["doc\x00"+p.Key] = true
			for _, other := range d.IDs { // their places point to the copy
				q := n.DocPlace[other]
				q.List = cp
				n.DocPlace[other] = q
			}
		}
		n.DocOrder[p.Key].Nums[p.Pos] = nil
		cp := *c
		cp.Text = ""
		n.Chunks[id] = &cp
	}
	return &n
}

// dropOne takes one chunk committed at generation g out of term t's
// document frequencies df; a term no chunk holds any more leaves df, as a
// recount would have it.
func dropOne(df map[string]Series, t string, g int64) {
	if s := df[t].Without(g); len(s) > 0 {
		df[t] = s
	} else {
		delete(df, t)
	}
}

// Without returns s less one count from generation g on, dropping points
// that no longer change the count (so that it equals the series a recount
// without that one gives). s is not changed.
func (s Series) Without(g int64) Series {
	out := make(Series, 0, len(s))
	for _, p := range s {
		if p.Gen >= g {
			p.N--
		}
		last := int64(0)
		if len(out) > 0 {
			last = out[len(out)-1].N
		}
		if p.N != last {
			out = append(out, p)
		}
	}
	return out
}

// RedactedAlready returns the chunks of ids whose batch file the index in d
// holds as purge gen rewrote it (a replica that applied the batch after the
// purge redacted it in the log), with the counts the file records.
func (st *State) RedactedAlready(d *storage.Dir, gen int64, ids []string) (map[string]storage.Redaction, error) {
	if d == nil {
		return nil, nil
	}
	m := d.Manifest()
	known := map[string]storage.Redaction{}
	for _, id := range ids {
		b := m.Batches[st.Committed[id]-1]
		if b.File != storage.RedactedName(b.Generation, gen) {
			continue
		}
		cont, err := d.ReadBatch(b)
		if err != nil {
			return nil, err
		}
		if r, ok := cont.Redacted[id]; ok {
			known[id] = r
		}
	}
	return known, nil
}

// A Rewrite is a batch file as a purge rewrote it, without the purged
// texts: its manifest record and its bytes.
type Rewrite struct {
	Batch storage.Batch
	Body  []byte
}

// Rewrites returns what purge st (its generation, of ids) writes of the
// batch files of the index in d that hold a purged chunk: the generations it
// redacts, ascending, and each of their batch files rewritten without the
// purged texts, in that order; one the index holds already as this purge
// rewrote it (RedactedAlready) is not written again. It records in st where
// each chunk of a rewritten batch now lies (the rewrite moves every line
// after the first purged one).
func (st *State) Rewrites(d *storage.Dir, ids []string) ([]int64, []Rewrite, error) {
	gen, prev := st.Gen, d.Manifest()
	byBatch := map[int64][]string{}
	for _, id := range ids {
		g := st.Committed[id]
		byBatch[g] = append(byBatch[g], id)
	}
	redacts := slices.Sorted(maps.Keys(byBatch))
	var out []Rewrite
	for _, g := range redacts {
		old := prev.Batches[g-1]
		if old.File == storage.RedactedName(g, gen) {
			continue // as this purge rewrote it already (RedactedAlready)
		}
		cont, err := d.ReadBatch(old)
		if err != nil {
			return nil, nil, err
		}
		if cont.Redacted == nil {
			cont.Redacted = map[string]storage.Redaction{}
		}
		for i, ch := range cont.Chunks {
			if _, purged := slices.BinarySearch(byBatch[g], ch.ID); purged {
				cont.Chunks[i] = st.Chunks[ch.ID] // the text-less copy
				cont.Redacted[ch.ID] = st.Purged[ch.ID].Redaction
			}
		}
		h := storage.BatchHeader{Generation: g, CommittedAt: old.CommittedAt}
		if g > 1 {
			h.Prev = prev.Batches[g-2].ChainSum()
		}
		raw, lines, err := storage.EncodeBatchLines(h, cont)
		if err != nil {
			return nil, nil, err
		}
		st.SetLines(cont.Chunks, lines)
		nb := old
		nb.File, nb.Chain = storage.RedactedName(g, gen), old.ChainSum()
		// The analysis file holds the purged texts' terms: it goes with
		// them, and Open analyzes the rewritten batch instead.
		nb.Analysis, nb.AnalysisSum = "", ""
		out = append(out, Rewrite{Batch: nb, Body: raw})
	}
	return redacts, out, nil
}

// TenantsOf returns the tenants whose chunks cont adds, or whose chunks its
// facts and purges name (as st or cont holds them), sorted and distinct: a
// log entry's Tenants.
func (st *State) TenantsOf(cont storage.Contents) []string {
	var tenants []string
	added := make(map[string]string, len(cont.Chunks)) // chunk ID -> tenant, lookups only
	for _, c := range cont.Chunks {
		tenants = append(tenants, c.Tenant)
		added[c.ID] = c.Tenant
	}
	tenantOf := func(id string) {
		if t, ok := st.TenantOf(id); ok { // in memory, or a checkpoint's row
			tenants = append(tenants, t)
		} else if t, ok := added[id]; ok {
			tenants = append(tenants, t)
		}
	}
	for _, f := range cont.Facts {
		tenantOf(f.ChunkID)
	}
	for _, p := range cont.Purges {
		tenantOf(p.ChunkID)
	}
	slices.Sort(tenants)
	return slices.Compact(tenants)
}
