package connectors

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/evpack/evpack/asof"
)

// TestStatuteManyAmendmentsCostLinear: each amendment changes one article
// of many. The connector re-split every article at every version and held a
// copy of the article list per amendment, so the work and the memory grew
// as versions × articles: 1,000 of each (a 137 kB file) took 1.8 s, and
// ten times each would take minutes and gigabytes. Only the articles a
// version changes are split again; the chunks are the same.
func TestStatuteManyAmendmentsCostLinear(t *testing.T) {
	const n = 1000
	var b strings.Builder
	b.WriteString(`{"doc_id":"d","versions":[{"version":"v0","published":"1900-01-01","in_force":"1900-01-01","text":"`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `Article %d\n(a) first.\n(b) second.\n`, i)
	}
	b.WriteString(`"}],"amendments":[`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		d := asof.DateFromDays(asof.MustDate("1900-01-01").Days() + int64(i))
		fmt.Fprintf(&b, `{"version":"a%d","published":"%s","in_force":"%s","changes":[{"article":"%d","replace":"first","with":"1st"}]}`, i, d, d, i)
	}
	b.WriteString(`]}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	recs, err := NewStatute().Parse("s.json", []byte(b.String()))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	// Article i's lead-in and clauses (a) and (b), then the new (a) of each amendment.
	if len(recs) != 4*n {
		t.Fatalf("%d records, want %d", len(recs), 4*n)
	}
	r := recs[3*n+4] // amendment a5's new clause (a) of article 5
	if r.Chunk.ID != "d/art-5/a@a5" || r.Chunk.Text != "Article 5\n(a) 1st." {
		t.Fatalf("record %d: %+v", 3*n+4, r.Chunk)
	}
	if old := recs[3*4+1]; old.Chunk.ID != "d/art-5/a@v0" || old.By != "d/art-5/a@a5" || old.Chunk.Valid.To.String() != "1900-01-06" {
		t.Fatalf("article 5 (a) of v0: %+v by %q", old.Chunk, old.By)
	}
	if got := after.Mallocs - before.Mallocs; got > 200_000 {
		t.Fatalf("%d allocations for %d articles and %d amendments: grows as their product", got, n, n)
	}
}
