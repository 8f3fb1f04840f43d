package fred_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/fred"
)

var retrieved = time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)

func fixture() string { return filepath.Join("..", "..", "testdata", "fred", "TTLCONS") }

// TestMarchValueIsCitedAsOfItsVintage: the value for March 2025 was published
// on 1 May and revised on 1 July. As of June the May vintage is cited; as of
// August the July one; as of April the March value is not citable at all,
// although its observation_date (March) is before April.
func TestMarchValueIsCitedAsOfItsVintage(t *testing.T) {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Check()); eng.Close() })
	rep, err := eng.Ingest(ctx, fred.New(retrieved, fixture()), evpack.IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 5, rep.Added, "the missing value \".\" is not ingested")

	ask := func(day string) []string {
		p, err := eng.Query(ctx, evpack.Request{Question: "total construction spending observation for March 2025",
			AsOf: asof.MustDate(day), Filters: map[string]string{"observation_date": "2025-03-01"}})
		require.NoError(t, err)
		var ids []string
		for _, c := range p.Citations {
			require.Equal(t, fred.AnchorField, c.Anchor.Field, "dated by realtime_start, never observation_date")
			ids = append(ids, c.ChunkID)
		}
		return ids
	}
	require.Equal(t, []string{"fred/TTLCONS/2025-03-01@2025-05-01"}, ask("2025-06-15"))
	require.Equal(t, []string{"fred/TTLCONS/2025-03-01@2025-07-01"}, ask("2025-08-01"))
	require.Equal(t, []string{"fred/TTLCONS/2025-03-01@2025-05-01"}, ask("2025-06-30"), "realtime_end is inclusive")
	require.Empty(t, ask("2025-04-15"), "not yet published")
}

func TestParseErrors(t *testing.T) {
	series, err := os.ReadFile(filepath.Join(fixture(), "series.json"))
	require.NoError(t, err)
	cases := []struct {
		name, series, obs string
		want              error
		where             string
	}{
		{"observations not JSON", string(series), "{\n\"observations\": [x]}", connectors.ErrSyntax, "o.json:2:"},
		{"series not JSON", "[", `{}`, connectors.ErrSyntax, "s.json"},
		{"no series", `{"seriess":[]}`, `{}`, connectors.ErrField, "s.json"},
		{"bad date", string(series), `{"observations":[{"realtime_start":"2025-05-01","realtime_end":"9999-12-31","date":"March","value":"1"}]}`, asof.ErrBadDate, "o.json: observations[0]"},
		{"end before start", string(series), `{"observations":[{"realtime_start":"2025-05-01","realtime_end":"2025-04-01","date":"2025-03-01","value":"1"}]}`, asof.ErrBadInterval, "observations[0]"},
	}
	for _, c := range cases {
		_, err := fred.Parse("s.json", []byte(c.series), "o.json", []byte(c.obs), retrieved)
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		require.Contains(t, err.Error(), c.where, c.name)
	}
}

func FuzzParse(f *testing.F) {
	series, _ := os.ReadFile(filepath.Join(fixture(), "series.json"))
	obs, _ := os.ReadFile(filepath.Join(fixture(), "observations.json"))
	f.Add(series, obs)
	f.Add([]byte(`{"seriess":[{"id":"X"}]}`), []byte(`{"observations":[{"realtime_start":"2025-01-01","realtime_end":"9999-12-31","date":"2024-12-01","value":"."}]}`))
	f.Add([]byte(`{}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, s, o []byte) {
		recs, err := fred.Parse("s.json", s, "o.json", o, retrieved)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Chunk.Anchor.Field != fred.AnchorField || r.Chunk.Valid.Validate() != nil {
				t.Fatalf("bad record %+v", r)
			}
		}
	})
}
