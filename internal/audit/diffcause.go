package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// Why a citation changed, in words a reader of the report needs no index
// to follow: the commits (with their times) and the sources' own names.

// SourceName names chunk c in its source's own terms: an EDGAR filing's
// company, form and item ("Northwind Robotics, Inc. 10-K/A item 7, filed
// 2025-04-20"), a FRED series' observation and vintage ("FRED series
// A191RL1Q225SBEA, observation 2020-01-01, vintage 2020-05-28"), a
// statute's article and version ("records-act article 2, version
// 2024-01"); any other chunk by its document and version.
func SourceName(c *evidence.Chunk) string {
	m := c.Meta
	switch {
	case c.Connector == "edgar" && m["form"] != "":
		s := m["form"]
		if m["company"] != "" {
			s = m["company"] + " " + s
		}
		if m["item"] != "" {
			s += " item " + m["item"]
		}
		if m["filing_date"] != "" {
			s += ", filed " + m["filing_date"]
		}
		return s
	case c.Connector == "fred" && m["series"] != "":
		return fmt.Sprintf("FRED series %s, observation %s, vintage %s", m["series"], m["observation_date"], c.Version)
	case m["article"] != "":
		s := c.DocID + " article " + m["article"]
		if m["clause"] != "" {
			s += " clause " + m["clause"]
		}
		return s + ", version " + c.Version
	}
	return c.DocID + ", version " + c.Version
}

// ChunkSource is SourceName of chunk id, or "" when st does not hold it.
func ChunkSource(st *state.State, id string) string {
	if c, ok := st.Chunks[id]; ok {
		return SourceName(c)
	}
	return ""
}

// CommitTime returns generation g's commit time, or the zero time for a
// generation st has not committed.
func CommitTime(st *state.State, g int64) time.Time {
	if g < 1 || g > int64(len(st.Commits)) {
		return time.Time{}
	}
	return st.Commits[g-1]
}

// generationAt renders "generation 3 (committed 2026-01-10T12:00:00Z)".
func generationAt(st *state.State, g int64) string {
	return fmt.Sprintf("generation %d (committed %s)", g, asof.FormatInstant(CommitTime(st, g)))
}

// generations renders a list of generations, oldest first, with their
// commit times: "generation 3 (committed T)", "generations 3..5
// (committed T1 to T2)" when contiguous, else "generations 3, 5, 9
// (committed T1 to T2)".
func generations(st *state.State, gs []int64) string {
	switch len(gs) {
	case 0:
		return "no generation"
	case 1:
		return generationAt(st, gs[0])
	}
	first, last := gs[0], gs[len(gs)-1]
	var s string
	if last-first == int64(len(gs)-1) {
		s = fmt.Sprintf("generations %d..%d", first, last)
	} else {
		parts := make([]string, len(gs))
		for i, g := range gs {
			parts[i] = fmt.Sprint(g)
		}
		s = "generations " + strings.Join(parts, ", ")
	}
	return s + fmt.Sprintf(" (committed %s to %s)", asof.FormatInstant(CommitTime(st, first)), asof.FormatInstant(CommitTime(st, last)))
}

// StatisticsWhy renders CauseStatistics's sentence for the scope commits
// gens of a pack of tenant, of which shared touched the shared corpus and
// own the tenant's evidence.
func StatisticsWhy(st *state.State, gens []int64, tenant string, shared, own int) string {
	n := len(gens)
	s := fmt.Sprintf("the scope's statistics changed by %d %s since the pack, %s", n, plural(n, "commit", "commits"), generations(st, gens))
	if tenant != "" {
		s += fmt.Sprintf(" (%d to the shared corpus, %d to tenant %q)", shared, own, tenant)
	}
	return s + ": no fact touches this citation and no new chunk outranks it; the same evidence is scored against " +
		"BM25 figures (document counts, term frequencies, lengths) that those commits moved"
}

// Cause says why citation i of rep changed (nil when unchanged); latest is
// the pack the request gets at rep.LatestGeneration, statsWhy the sentence
// of CauseStatistics.
func Cause(st *state.State, rep *DiffReport, latest *evidence.Pack, i int, statsWhy string) *DiffCause {
	d := rep.Citations[i]
	switch d.Status {
	case DiffUnchanged:
		return nil
	case DiffTextChanged:
		return &DiffCause{Kind: CauseText, Why: "the index does not hold the text the pack cites (" + d.Detail + "): a corrupted index, or a pack of another index"}
	case DiffPurged:
		pa := st.Purged[d.ChunkID]
		return &DiffCause{Kind: CausePurge, Generations: []int64{pa.Gen},
			Why: fmt.Sprintf("%s deleted its text (purge: %s)", generationAt(st, pa.Gen), pa.Reason)}
	case DiffSuperseded, DiffEnded, DiffRetracted:
		return &DiffCause{Kind: CauseFact, Generations: []int64{d.FactGeneration}, Why: factWhy(st, d)}
	}
	// Moved or outranked: the same request ranks differently.
	if d.Status == DiffOutranked || d.Now > d.Index {
		var ids, parts []string
		var gens []int64
		for _, c := range latest.Citations {
			if d.Status == DiffMoved && c.Index >= d.Now {
				break
			}
			g := st.Committed[c.ChunkID]
			if g <= rep.Generation {
				continue
			}
			ids, gens = append(ids, c.ChunkID), append(gens, g)
			parts = append(parts, fmt.Sprintf("[%d] %s (%s; %s)", c.Index, c.ChunkID, ChunkSource(st, c.ChunkID), generationAt(st, g)))
		}
		if len(ids) > 0 {
			slices.Sort(gens)
			return &DiffCause{Kind: CauseNewEvidence, Chunks: ids, Generations: slices.Compact(gens),
				Why: fmt.Sprintf("outranked by %d %s committed since the pack: %s", len(ids), plural(len(ids), "chunk", "chunks"), strings.Join(parts, ", "))}
		}
	} else { // moved up
		var ids, parts []string
		var gens []int64
		for _, o := range rep.Citations[:i] {
			if o.Now != 0 {
				continue
			}
			ids = append(ids, o.ChunkID)
			part := fmt.Sprintf("[%d] %s (%s", o.Index, o.ChunkID, o.Status)
			if c := o.Cause; c != nil && len(c.Generations) > 0 && (c.Kind == CauseFact || c.Kind == CausePurge) {
				gens = append(gens, c.Generations...)
				part += " at " + generationAt(st, c.Generations[0])
			}
			parts = append(parts, part+")")
		}
		if len(ids) > 0 {
			slices.Sort(gens)
			return &DiffCause{Kind: CauseLeftAbove, Chunks: ids, Generations: slices.Compact(gens),
				Why: fmt.Sprintf("%d %s cited above it %s cited no longer: %s", len(ids), plural(len(ids), "chunk", "chunks"),
					plural(len(ids), "is", "are"), strings.Join(parts, ", "))}
		}
	}
	if len(rep.ScopeCommits) > 0 {
		return &DiffCause{Kind: CauseStatistics, Generations: slices.Clone(rep.ScopeCommits), Why: statsWhy}
	}
	return &DiffCause{Kind: CauseRanking, Why: "no commit changed the scope since the pack: the engine ranks differently from the one that made it (see the verification)"}
}

// factWhy renders the fact that excludes a citation (d.Fact) as a sentence.
func factWhy(st *state.State, d CitationDiff) string {
	f := d.Fact
	var s string
	switch f.Kind {
	case evidence.FactSuperseded:
		s = "superseded by " + f.By
		if name := ChunkSource(st, f.By); name != "" {
			s += " (" + name + ")"
		}
		s += " from " + f.End.String()
	case evidence.FactRetracted:
		s = "retracted from " + f.End.String()
	default:
		s = "no longer in force from " + f.End.String()
	}
	if f.Anchor.After(f.End.Start()) {
		s += ", published " + asof.FormatInstant(f.Anchor)
	}
	return generationAt(st, d.FactGeneration) + " recorded that it is " + s
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
