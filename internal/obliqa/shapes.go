package obliqa

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// Shapes are corpora unlike ObliQA's made from it, to test whether a ranking
// that reads each passage's document context still helps where that context
// is degenerate or misleading. Each keeps every passage's text and ID, so the
// questions and their gold stay the same.
var Shapes = []string{"as-is", "one-document", "passage-per-document", "no-headings", "shuffled"}

// headingWords is the most words a passage may have to count as a heading
// (rerank's heading path takes chunks of at most 6 terms).
const headingWords = 6

// Shape returns recs (as Records makes them) transformed into the named
// shape. gold names the passages some question cites; "no-headings" keeps
// those even when short, so every question stays answerable. seed orders
// "shuffled".
//
//   - as-is: unchanged.
//   - one-document: every passage in one document, positions in corpus order.
//   - passage-per-document: each passage its own document, at position 0.
//   - no-headings: passages of at most 6 words that no question cites
//     removed; positions renumbered.
//   - shuffled: positions permuted within each document (seeded).
func Shape(name string, recs []connectors.Record, gold map[string]bool, seed uint64) ([]connectors.Record, error) {
	out := make([]connectors.Record, 0, len(recs))
	for _, r := range recs {
		r.Chunk.Meta = maps.Clone(r.Chunk.Meta)
		if r.Chunk.Meta == nil { // a shape writes the chunk's document and position
			r.Chunk.Meta = map[string]string{}
		}
		out = append(out, r)
	}
	setPos := func(r *connectors.Record, doc string, pos int) {
		r.Chunk.DocID = doc
		r.Chunk.Meta["document"] = doc
		r.Chunk.Meta[evpack.MetaPosition] = strconv.Itoa(pos)
	}
	switch name {
	case "as-is":
	case "one-document":
		for i := range out {
			setPos(&out[i], "all", i)
		}
	case "passage-per-document":
		for i := range out {
			setPos(&out[i], out[i].Chunk.ID, 0)
		}
	case "no-headings":
		kept := out[:0]
		pos := map[string]int{}
		for _, r := range out {
			if len(strings.Fields(r.Chunk.Text)) <= headingWords && !gold[r.Chunk.ID] {
				continue
			}
			setPos(&r, r.Chunk.DocID, pos[r.Chunk.DocID])
			pos[r.Chunk.DocID]++
			kept = append(kept, r)
		}
		out = kept
	case "shuffled":
		rng := rand.New(rand.NewPCG(seed, 2))
		byDoc := map[string][]int{}
		var docs []string
		for i, r := range out {
			if _, ok := byDoc[r.Chunk.DocID]; !ok {
				docs = append(docs, r.Chunk.DocID)
			}
			byDoc[r.Chunk.DocID] = append(byDoc[r.Chunk.DocID], i)
		}
		slices.SortFunc(docs, func(a, b string) int { return cmp.Compare(a, b) })
		for _, d := range docs {
			rows := byDoc[d]
			for k, p := range rng.Perm(len(rows)) {
				setPos(&out[rows[k]], d, p)
			}
		}
	default:
		return nil, fmt.Errorf("obliqa: shape %q (want one of %s)", name, strings.Join(Shapes, ", "))
	}
	return out, nil
}
