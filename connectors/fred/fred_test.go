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
	gdp := filepath.Join("..", "..", "testdata", "fred", "history", "2020-07-01", "A191RL1Q225SBEA")
	gdpSeries, _ := os.ReadFile(filepath.Join(gdp, "series.json"))
	gdpObs, _ := os.ReadFile(filepath.Join(gdp, "observations.json"))
	f.Add(gdpSeries, gdpObs)
	f.Fuzz(func(t *testing.T, s, o []byte) {
		recs, err := fred.Parse("s.json", s, "o.json", o, retrieved)
		if err != nil {
			return
		}
		ids := map[string]bool{}
		for _, r := range recs {
			ids[r.Chunk.ID] = true
		}
		for _, r := range recs {
			if r.Chunk.Anchor.Field != fred.AnchorField || r.Chunk.Valid.Validate() != nil {
				t.Fatalf("bad record %+v", r)
			}
			// By names another chunk of this response, and only of an ended one.
			if r.By != "" && (!ids[r.By] || r.By == r.Chunk.ID || r.Chunk.Valid.To.IsZero()) {
				t.Fatalf("bad by %+v", r)
			}
		}
	})
}

// TestByNamesTheNextVintage: a vintage that ended names the vintage of the
// same observation date that started the day after its realtime_end, so that
// ingest records the end as a supersession by it. The current vintage, and
// one whose successor the response lacks (or whose successor is a missing
// value), names none.
func TestByNamesTheNextVintage(t *testing.T) {
	gdp := func(day string) string {
		return filepath.Join("..", "..", "testdata", "fred", "history", day, "A191RL1Q225SBEA")
	}
	type rec struct{ id, to, by string }
	cases := []struct {
		name string
		dirs []string
		want []rec
	}{
		{"GDP fetched after the second and third estimates", []string{gdp("2020-07-01")}, []rec{
			{"fred/A191RL1Q225SBEA/2019-10-01@2020-01-30", "", ""},
			{"fred/A191RL1Q225SBEA/2020-01-01@2020-04-29", "2020-05-28", "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28"},
			{"fred/A191RL1Q225SBEA/2020-01-01@2020-05-28", "2020-06-25", "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25"},
			{"fred/A191RL1Q225SBEA/2020-01-01@2020-06-25", "", ""},
		}},
		{"GDP fetched after the advance estimate only", []string{gdp("2020-05-15")}, []rec{
			{"fred/A191RL1Q225SBEA/2019-10-01@2020-01-30", "", ""},
			{"fred/A191RL1Q225SBEA/2020-01-01@2020-04-29", "", ""},
		}},
		{"construction spending, with a missing value", []string{fixture()}, []rec{
			{"fred/TTLCONS/2025-02-01@2025-04-01", "2025-05-01", "fred/TTLCONS/2025-02-01@2025-05-01"},
			{"fred/TTLCONS/2025-02-01@2025-05-01", "", ""},
			{"fred/TTLCONS/2025-03-01@2025-05-01", "2025-07-01", "fred/TTLCONS/2025-03-01@2025-07-01"},
			{"fred/TTLCONS/2025-03-01@2025-07-01", "", ""},
			{"fred/TTLCONS/2025-04-01@2025-08-01", "", ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, err := fred.New(retrieved, c.dirs...).Read(context.Background())
			require.NoError(t, err)
			var got []rec
			for _, r := range recs {
				got = append(got, rec{r.Chunk.ID, r.Chunk.Valid.To.String(), r.By})
			}
			require.Equal(t, c.want, got)
		})
	}

	// The successor is not in the response, or its value is missing: the
	// vintage just ends.
	series := `{"seriess":[{"id":"X","title":"T","units":"U","frequency":"Monthly"}]}`
	for _, c := range []struct{ name, obs string }{
		{"successor not in the response", `{"observations":[{"realtime_start":"2025-01-01","realtime_end":"2025-01-31","date":"2024-12-01","value":"1"}]}`},
		{"successor is a missing value", `{"observations":[{"realtime_start":"2025-01-01","realtime_end":"2025-01-31","date":"2024-12-01","value":"1"},
			{"realtime_start":"2025-02-01","realtime_end":"9999-12-31","date":"2024-12-01","value":"."}]}`},
		{"successor of another observation date", `{"observations":[{"realtime_start":"2025-01-01","realtime_end":"2025-01-31","date":"2024-12-01","value":"1"},
			{"realtime_start":"2025-02-01","realtime_end":"9999-12-31","date":"2024-11-01","value":"2"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := fred.Parse("s.json", []byte(series), "o.json", []byte(c.obs), retrieved)
			require.NoError(t, err)
			require.Equal(t, "fred/X/2024-12-01@2025-01-01", recs[0].Chunk.ID)
			require.Equal(t, "2025-02-01", recs[0].Chunk.Valid.To.String())
			require.Empty(t, recs[0].By)
		})
	}
}
