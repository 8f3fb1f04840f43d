package evidence

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
)

// hashReference is ComputeHash as its doc comment defines it, written the
// plain way: the sized-buffer version must give the same hashes.
func hashReference(c *Chunk) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
		b.WriteByte(',')
	}
	instant := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	field(ChunkHashVersion)
	for _, s := range []string{c.ID, c.DocID, c.Version, c.Text, c.SourceURL, c.Connector,
		instant(c.RetrievedAt), instant(c.Anchor.At), c.Anchor.Field,
		c.Valid.From.String(), c.Valid.To.String(), c.Tenant} {
		field(s)
	}
	field(strconv.Itoa(len(c.Meta)))
	for _, k := range SortedKeys(c.Meta) {
		field(k)
		field(c.Meta[k])
	}
	return Sum([]byte(b.String()))
}

func TestComputeHashMatchesDefinition(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891, time.FixedZone("x", 3600))
	long := strings.Repeat("évidence ", 5000)
	chunks := []Chunk{
		{},
		{ID: "c", DocID: "d", Text: "t"},
		{ID: "c1", DocID: "doc", Version: "2024-06-01", Text: long, SourceURL: "https://x/y", Connector: "statute",
			RetrievedAt: at, Anchor: asof.Anchor{At: at, Field: "published"},
			Valid:  asof.Interval{From: asof.MustDate("2024-01-01"), To: asof.MustDate("2025-01-01")},
			Tenant: "acme", Meta: map[string]string{"z": "1", "a": strings.Repeat("v", 1024), "position": "12"}},
	}
	for i := range chunks {
		c := &chunks[i]
		if got, want := c.ComputeHash(), hashReference(c); got != want {
			t.Errorf("chunk %d: ComputeHash %s, the definition gives %s", i, got, want)
		}
	}
}
