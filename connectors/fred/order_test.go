package fred_test

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors/fred"
)

// TestRecordsDoNotDependOnObservationOrder: a response whose observations
// come in another order gives the same chunks (IDs, texts, validity) and
// the same supersessions (By): nothing is decided by position or by a map's
// order. Seeded shuffles of the fixture.
func TestRecordsDoNotDependOnObservationOrder(t *testing.T) {
	series, err := os.ReadFile(filepath.Join(fixture(), "series.json"))
	require.NoError(t, err)
	obs, err := os.ReadFile(filepath.Join(fixture(), "observations.json"))
	require.NoError(t, err)
	var o fred.Observations
	require.NoError(t, json.Unmarshal(obs, &o))
	summary := func(raw []byte) []string {
		recs, err := fred.Parse("s.json", series, "o.json", raw, retrieved)
		require.NoError(t, err)
		var out []string
		for _, r := range recs {
			out = append(out, strings.Join([]string{r.Chunk.ID, r.Chunk.Text, r.Chunk.Valid.String(), r.By, r.Chunk.Anchor.At.Format(time.RFC3339)}, " | "))
		}
		slices.Sort(out)
		return out
	}
	want := summary(obs)
	require.Equal(t, []string{
		"fred/TTLCONS/2025-02-01@2025-04-01 | Total Construction Spending: Total Construction in the United States (TTLCONS), observation for 2025-02-01: 2195832 Millions of Dollars. Vintage published 2025-04-01. | [2025-04-01, 2025-05-01) | fred/TTLCONS/2025-02-01@2025-05-01 | 2025-04-01T00:00:00Z",
	}, want[:1])
	require.Len(t, want, 5)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for i := 0; i < 20; i++ {
		r.Shuffle(len(o.Observations), func(a, b int) { o.Observations[a], o.Observations[b] = o.Observations[b], o.Observations[a] })
		raw, err := json.Marshal(o)
		require.NoError(t, err)
		require.Equal(t, want, summary(raw), "shuffle %d", i)
	}
}
