package fred_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/fred"
)

const oneSeries = `{"seriess":[{"id":"TTLCONS","title":"Total Construction Spending","units":"Millions of Dollars"}]}`

// TestParseRefusesAValueThatIsNotANumber: FRED's values are decimal numbers
// or "." (missing). An empty or non-numeric value became a citable chunk
// saying "observation for 2025-03-01:  Millions of Dollars", which
// superseded the vintage before it; now it is ErrField naming the
// observation.
func TestParseRefusesAValueThatIsNotANumber(t *testing.T) {
	for _, v := range []string{"", " ", "n/a", "NaN", "Inf", "1e999", "1,234", "0x10", "1 2"} {
		o := `{"observations":[{"realtime_start":"2025-05-01","realtime_end":"9999-12-31","date":"2025-03-01","value":"` + v + `"}]}`
		_, err := fred.Parse("s.json", []byte(oneSeries), "o.json", []byte(o), retrieved)
		require.True(t, errors.Is(err, connectors.ErrField), "value %q: %v", v, err)
		require.ErrorContains(t, err, "o.json: observations[0]: connectors: bad field: value: ", "value %q", v)
	}
	for _, v := range []string{"2191.3", "-4.8", "0", "12", ".5", "1e3"} {
		o := `{"observations":[{"realtime_start":"2025-05-01","realtime_end":"9999-12-31","date":"2025-03-01","value":"` + v + `"}]}`
		recs, err := fred.Parse("s.json", []byte(oneSeries), "o.json", []byte(o), retrieved)
		require.NoError(t, err, "value %q", v)
		require.Len(t, recs, 1)
	}
}

// TestSourceURLEscapesTheSeriesID: the series ID is escaped in the source
// URL's query; "A B&c=1" made "…?seid=A B&c=1", not a URL, and one whose
// query names another parameter.
func TestSourceURLEscapesTheSeriesID(t *testing.T) {
	o := `{"observations":[{"realtime_start":"2025-05-01","realtime_end":"9999-12-31","date":"2025-03-01","value":"1"}]}`
	recs, err := fred.Parse("s.json", []byte(`{"seriess":[{"id":"A B&c=1"}]}`), "o.json", []byte(o), retrieved)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, "https://alfred.stlouisfed.org/series?seid=A+B%26c%3D1", recs[0].Chunk.SourceURL)
	recs, err = fred.Parse("s.json", []byte(oneSeries), "o.json", []byte(o), retrieved)
	require.NoError(t, err)
	require.Equal(t, "https://alfred.stlouisfed.org/series?seid=TTLCONS", recs[0].Chunk.SourceURL)
}
