// Package pipeline is the ranking stage of a query: the legs' ranked lists
// in, an evidence pack out. It fuses the lists (fuse.RRF), cuts the pool,
// hands the candidates with their documents to the reranker, checks that
// the reranker returned a permutation of them, and assembles the pack
// through the citation gate (evidence.Assemble).
//
// Why a package of its own: this is where "a chunk nobody can check never
// reaches the reasoner" is decided, and it must be testable without an
// index. Everything it reads of the index comes through [State], so a test
// hands it a fake and asserts the exact pack.
//
// Entry point: [Rank].
//
// Invariant: the pack's citations are a subset of the fused pool, in the
// reranker's order; a reranker that adds, repeats or loses a candidate
// yields an error, never a pack.
package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/internal/par"
	"github.com/evpack/evpack/rerank"
)

// State is what the pipeline reads of the scope a request reads at its
// generation. Contract: answers depend only on the scope and generation
// (never on time or on other requests), its methods are safe for
// concurrent use (a request reads its pool side by side), and an error is
// a failed read of stored data, which Rank returns wrapped in a *ReadError.
type State interface {
	// Stats is what the reranker is handed as the scope's corpus
	// statistics (it may implement rerank.Documents and
	// rerank.TermNumbers too).
	Stats() rerank.Stats
	// Place returns chunk id's place in its document, with the reranker
	// terms of the window around it as numbers.
	Place(id string) (rerank.DocumentPlace, bool)
	// Terms returns the terms numbered nums.
	Terms(nums []uint32) []string
	// Text returns chunk id's stored text; ok is false for a chunk the
	// scope does not hold. A text that fails its hash may be returned: the
	// gate drops its chunk.
	Text(id string) (text string, ok bool, err error)
	// Entry returns what the citation gate needs to know of chunk id as of
	// day d (endsKnownLater: ends learned after d count too).
	Entry(id string, d asof.Date, endsKnownLater bool) (evidence.Entry, bool, error)
	// Err returns an error that a read met after it returned (a block of a
	// checkpoint that failed its check), or nil.
	Err() error
}

// Input is one request's ranking stage, as plain data.
type Input struct {
	Header evidence.Header
	// Text is the ranking text (the question, entity names removed unless
	// kept).
	Text string
	// Lists are the legs' ranked lists, in leg order; Steps the trace lines
	// so far.
	Lists []fuse.List
	Steps []string
	// RRFK is fusion's k; Fusion the setting the trace names.
	RRFK   int
	Fusion string
	// Boost, when set, may reorder the fused list before the pool is cut
	// and returns its trace line ("" for none).
	Boost func(fused []fuse.Item) (string, error)
	// Pool is how many fused candidates the reranker sees.
	Pool int
	// Reranker orders the pool; Fingerprint is the configuration the pack
	// names.
	Reranker    rerank.Reranker
	Fingerprint evidence.Fingerprint
}

// ReadError is a failed read of stored data during ranking.
type ReadError struct{ Err error }

// Error says what failed.
func (e *ReadError) Error() string { return e.Err.Error() }

// Unwrap returns the read's error.
func (e *ReadError) Unwrap() error { return e.Err }

// Rank fuses in's lists, reranks the pool and assembles the pack.
func Rank(ctx context.Context, in Input, st State) (*evidence.Pack, error) {
	steps := slices.Clone(in.Steps)
	fused, err := fuse.RRF(in.RRFK, in.Lists...)
	if err != nil {
		return nil, err
	}
	boosted := ""
	if in.Boost != nil { // before the pool is cut: the boost decides what enters it
		if boosted, err = in.Boost(fused); err != nil {
			return nil, err
		}
	}
	if len(fused) > in.Pool {
		fused = fused[:in.Pool]
	}
	steps = append(steps, fmt.Sprintf("fused %d (%s)", len(fused), in.Fusion))
	if boosted != "" {
		steps = append(steps, boosted)
	}
	steps = append(steps, fmt.Sprintf("pool %d", len(fused)))
	rr := in.Reranker
	cands, err := candidates(fused, rr, st)
	if err != nil {
		return nil, err
	}
	pool := make([]rerank.Candidate, len(fused)) // the IDs as the engine fused them: the reranker may write to cands
	for i, f := range fused {
		pool[i].ID = f.ID
	}
	ranked, err := rr.Rerank(ctx, in.Text, cands, st.Stats())
	if err != nil {
		return nil, fmt.Errorf("evpack: rerank: %w", err)
	}
	// A reranker orders its pool and adds nothing to it: an output that is
	// not a permutation of the pool (another tenant's chunk, a repeat, a lost
	// candidate), or not in order, is an error, never a pack.
	if err := cmp.Or(rerank.CheckPermutation(pool, ranked), rerank.CheckOrder(ranked)); err != nil {
		return nil, fmt.Errorf("evpack: rerank: reranker %q: %w", rr.Name(), err)
	}
	steps = append(steps, fmt.Sprintf("reranked %d", len(ranked)))
	if f, ok := rr.(*rerank.Fallback); ok { // never silent: the trace says a model was not used
		steps = append(steps, "reranker: the learned model could not be loaded ("+f.Why()+"); the arithmetic reranker ranked the pool")
	}
	p, err := assemble(in.Header, ranked, st, steps, in.Fingerprint)
	if err != nil {
		return nil, err
	}
	if !BitStable(rr) {
		p.Ledger = slices.Clone(ranked) // not the reranker's slice
	}
	return p, nil
}

// assemble is evidence.Assemble over st: each ranked chunk's entry as of
// h's day, read from the store and checked by the citation gate.
func assemble(h evidence.Header, ranked []evidence.Scored, st State, steps []string, fp evidence.Fingerprint) (*evidence.Pack, error) {
	var readErr error
	lookup := func(id string) (evidence.Entry, bool) {
		en, ok, err := st.Entry(id, h.AsOf, h.EndsKnownLater)
		readErr = cmp.Or(readErr, err)
		return en, ok
	}
	p := evidence.Assemble(h, ranked, lookup, steps, fp)
	if err := cmp.Or(readErr, st.Err()); err != nil {
		return nil, &ReadError{Err: err}
	}
	return p, nil
}

// Holds reports whether st cites p's citations, in p's order with p's
// scores, byte for byte as p renders them: each chunk held and citable as
// of h's day (not purged, not ended, its stored text hashing to its
// content hash), its fields the store's. A pack read from a cache is served
// only then: its key and header (packcache.Answers) say nothing of its
// citations, and a cache may hand back a pack from before a purge, or
// edited.
func Holds(h evidence.Header, st State, p *evidence.Pack) bool {
	ranked := make([]evidence.Scored, len(p.Citations))
	for i, c := range p.Citations {
		ranked[i] = evidence.Scored{ChunkID: c.ChunkID, Score: c.Score}
	}
	q, err := assemble(h, ranked, st, nil, nil)
	return err == nil && bytes.Equal((&evidence.Pack{Citations: q.Citations}).Bytes(), (&evidence.Pack{Citations: p.Citations}).Bytes())
}

// candidates returns the pool as the reranker reads it: each chunk's
// document place (its terms as numbers, as terms only when the reranker
// asks for them) and its text unless the reranker declares it reads none.
// A candidate's first read (its row found, its document's rows and its
// line, pages faulted in) depends on no other's, so the pool is read side
// by side (par.Each; State is safe for concurrent use).
//
// Invariant: the candidates, and the error returned (the first in pool
// order), do not depend on how the pool was shared out.
func candidates(fused []fuse.Item, rr rerank.Reranker, st State) ([]rerank.Candidate, error) {
	cands := make([]rerank.Candidate, len(fused))
	places := make([]rerank.DocumentPlace, len(fused))
	tf, _ := rr.(rerank.TextFree)
	readText := tf == nil || !tf.TextFree() // else the texts stay where they are stored
	dt, _ := rr.(rerank.DocumentTerms)
	makeTerms := dt == nil || !dt.DocumentTerms() // else the numbers are enough
	err := par.Each(len(fused), func(i int) error {
		f := fused[i]
		cands[i] = rerank.Candidate{ID: f.ID, Rank: i + 1}
		if pl, ok := st.Place(f.ID); ok {
			places[i] = pl
			cands[i].Doc = &places[i]
			if makeTerms {
				cands[i].Terms = st.Terms(pl.Nums[pl.Pos-pl.Start])
			}
		}
		if readText {
			text, ok, err := st.Text(f.ID)
			if err != nil {
				return &ReadError{Err: err}
			}
			if ok { // one that does not verify goes without: the gate drops it
				cands[i].Text = text
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cands, nil
}

// BitStable reports whether rr promises identical scores on every machine.
func BitStable(rr rerank.Reranker) bool {
	b, ok := rr.(rerank.BitStable)
	return ok && b.BitStable()
}

// EntityPolicy is the pack fingerprint's entity_names setting: whether the
// names of a chunk's declared entity are kept in its ranking text.
func EntityPolicy(keep bool) string {
	if keep {
		return "kept"
	}
	return "removed from ranking text under a filter on the entity a chunk declares"
}

// Settings are an engine's settings that shape a pack, for its
// fingerprint (Fingerprint), as plain data.
type Settings struct {
	Corpus, Legs, Analyzer     string
	RRFK, Pool                 int
	LexicalWeight, DenseWeight float64
	KeepEntityNames            bool
	// Dense is the dense leg's setting (DenseSetting).
	Dense string
}

// Fingerprint lists every setting that shaped a pack ranked by rr.
func Fingerprint(s Settings, rr rerank.Reranker) evidence.Fingerprint {
	return evidence.NewFingerprint(
		evidence.Setting{Key: "corpus", Value: s.Corpus},
		evidence.Setting{Key: "legs", Value: s.Legs},
		evidence.Setting{Key: "lexical", Value: fmt.Sprintf("bleve bm25 analyzer=%s quantum=1e-9 corpus_stats=true", s.Analyzer)},
		evidence.Setting{Key: "fusion", Value: FusionSetting(s.RRFK, s.Legs, s.LexicalWeight, s.DenseWeight)},
		evidence.Setting{Key: "pool", Value: strconv.Itoa(s.Pool)},
		evidence.Setting{Key: "reranker", Value: rr.Name()},
		evidence.Setting{Key: "reranker_bit_stable", Value: strconv.FormatBool(BitStable(rr))},
		evidence.Setting{Key: "entity_names", Value: EntityPolicy(s.KeepEntityNames)},
		evidence.Setting{Key: "dense", Value: s.Dense},
	)
}

// DenseSetting is the pack fingerprint's dense setting: "off" without an
// embedder (nil) or a dense leg, else the search (HNSW graph described by
// graph, or the exact scan) and the embedder's identity.
func DenseSetting(legs string, emb interface{ Identity() string }, hnsw bool, graph string) string {
	if emb == nil || !strings.Contains(legs, "dense") {
		return "off"
	}
	if hnsw {
		return graph + " (approximate; exact scan when eligible² < exact_factor × indexed), " + emb.Identity()
	}
	return "exact int8 scan, " + emb.Identity()
}

// FusionSetting is the pack fingerprint's fusion setting: Reciprocal Rank
// Fusion's k and the weight of each leg legs names.
func FusionSetting(rrfK int, legs string, lexicalWeight, denseWeight float64) string {
	s := fmt.Sprintf("rrf k=%d", rrfK)
	if strings.Contains(legs, "lexical") {
		s += " lexical=" + strconv.FormatFloat(lexicalWeight, 'g', -1, 64)
	}
	if strings.Contains(legs, "dense") {
		s += " dense=" + strconv.FormatFloat(denseWeight, 'g', -1, 64)
	}
	return s
}
