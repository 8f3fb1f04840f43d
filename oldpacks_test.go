package evpack

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/evidence"
)

// oldPack reads a pack an earlier build wrote (testdata/oldpacks/README.md
// says how each was made).
func oldPack(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "oldpacks", name))
	require.NoError(t, err)
	return raw
}

// retentionEngine holds the corpus the retention packs were made from.
func retentionEngine(t *testing.T) *Engine {
	t.Helper()
	ctx := context.Background()
	e := memEngine(t, Options{})
	for _, src := range []connectors.Connector{connectors.NewStatute("testdata/corpus/records-act.json"), connectors.NewJSONL("testdata/corpus/guidance.jsonl")} {
		_, err := e.Ingest(ctx, src, IngestOptions{})
		require.NoError(t, err)
	}
	return e
}

// fredHistory and edgarHistory are the two-fetch histories of living_test.go,
// ingested fetch by fetch.
func fredHistory(t *testing.T) *Engine {
	dir := "testdata/fred/history/"
	e, _ := fetchInOrder(t, fred.New(time.Date(2020, 5, 15, 12, 0, 0, 0, time.UTC), dir+"2020-05-15/A191RL1Q225SBEA"),
		fred.New(time.Date(2020, 7, 1, 12, 0, 0, 0, time.UTC), dir+"2020-07-01/A191RL1Q225SBEA"))
	return e
}

func edgarHistory(t *testing.T) *Engine {
	e, _ := fetchInOrder(t, edgar.New("testdata/edgar-history/before", time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)),
		edgar.New("testdata/edgar", time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)))
	return e
}

// Every pack form evpack ever wrote verifies, or says exactly what still
// holds of it (issue 31, item 9: on b3bfa5e Parse refused any pack of
// another form, "run its request again").
func TestOldPackFormatsVerify(t *testing.T) {
	ctx := context.Background()
	e := retentionEngine(t)

	t.Run("evpack-pack/1", func(t *testing.T) {
		for _, name := range []string{"pack1-03d5b55-retention.json", "pack1-0aa9884-retention.json", "pack1-5fda4c6-retention.json"} {
			raw := oldPack(t, name)
			p, err := evidence.Parse(raw)
			require.NoError(t, err, name)
			require.Equal(t, evidence.FormatV1, p.Format)
			require.Equal(t, string(raw), string(p.Bytes()), "%s: rendered back in its own form", name)
			rep, err := e.Verify(ctx, raw)
			require.NoError(t, err, name)
			require.True(t, rep.OK(), "%s: %v", name, rep.Problems)
			require.False(t, rep.Replayed, name)
			require.Equal(t, evidence.FormatV1, rep.Format)
			require.Len(t, rep.Holds, len(p.Citations)+2, name)
			require.Equal(t, "the bytes are a canonical evpack-pack/1 pack and hash to "+evidence.Sum(raw), rep.Holds[0])
			for i, c := range p.Citations {
				require.Contains(t, rep.Holds[i+1], "citation ["+strconv.Itoa(c.Index)+"] "+c.ChunkID+": ", name)
			}
			require.True(t, strings.HasPrefix(rep.Holds[len(rep.Holds)-1], "not replayed: evpack-pack/1 names no generation"), name)
		}
		// The first builds' content hash covered the text alone; later /1
		// builds' cover every field.
		first := oldPack(t, "pack1-03d5b55-retention.json")
		rep, err := e.Verify(ctx, first)
		require.NoError(t, err)
		require.Contains(t, rep.Holds[1], "its content hash is of its text alone (the first evpack-pack/1 packs)")
		rep, err = e.Verify(ctx, oldPack(t, "pack1-5fda4c6-retention.json"))
		require.NoError(t, err)
		require.Contains(t, rep.Holds[1], "citation [1] records-act/art-2@2025: its text and fields are the stored chunk's, which hashes to blake3:8e1a18ad")

		// What does not hold is a Problem: an edited citation text.
		p, err := evidence.Parse(first)
		require.NoError(t, err)
		p.Citations[0].Text += " Amended."
		rep, err = e.Verify(ctx, p.Bytes())
		require.NoError(t, err)
		require.False(t, rep.OK())
		require.Contains(t, rep.Problems[0], "citation [1] records-act/art-2@2025: ")
	})

	t.Run("evpack-pack/2 of its first build", func(t *testing.T) {
		// Its settings are not what this build gives (the entity_names
		// wording, the corpus digest), so it cannot replay; its bytes and
		// every citation still hold, and the report says so.
		raw := oldPack(t, "pack2-8edd835-retention.json")
		p, err := evidence.Parse(raw)
		require.NoError(t, err)
		rep, err := e.Verify(ctx, raw)
		require.NoError(t, err)
		require.True(t, rep.Replayed)
		require.False(t, rep.OK())
		require.Contains(t, strings.Join(rep.Problems, "\n"), "setting entity_names: pack ")
		require.Len(t, rep.Holds, len(p.Citations)+1)
		require.Equal(t, "the bytes are a canonical evpack-pack/2 pack and hash to "+evidence.Sum(raw), rep.Holds[0])
		require.Contains(t, rep.Holds[1], "citation [1] records-act/art-2@2025: its text is the stored chunk's")
	})

	t.Run("evpack-pack/2 showing ends learned later", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			e    *Engine
		}{{"pack2-b3bfa5e-fred-hindsight.json", fredHistory(t)}, {"pack2-b3bfa5e-edgar-hindsight.json", edgarHistory(t)}} {
			raw := oldPack(t, tc.name)
			rep, err := tc.e.Verify(ctx, raw)
			require.NoError(t, err, tc.name)
			require.True(t, rep.OK(), "%s: %v", tc.name, rep.Problems)
			require.True(t, rep.Replayed && rep.EndsKnownLater, tc.name)
			require.Equal(t, rep.Hash, rep.ReplayHash)
		}
	})
}

// A citation shows a validity end only where it was known on the as-of
// day: the chunk's own valid_to, or a fact anchored on or before it (issue
// 31, item 10: on b3bfa5e the FRED pack as of 2020-05-01 showed 2020-05-28
// and the EDGAR pack as of 2025-04-19 showed 2025-04-20, ends that facts
// anchored after those days set).
func TestAsOfPackShowsNoEndLearnedLater(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		e    *Engine
		r    Request
		id   string
	}{
		{"FRED", fredHistory(t), Request{Question: "real GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-05-01")},
			"fred/A191RL1Q225SBEA/2020-01-01@2020-04-29"},
		{"EDGAR", edgarHistory(t), Request{Question: "Northwind revenue growth fiscal 2024 warehouse automation logistics customers",
			AsOf: asof.MustDate("2025-04-19"), Filters: map[string]string{"cik": "0001234567", "item": "7"}},
			"edgar/0001234567/0001234567-25-000010/item-7/1"},
	} {
		p, err := tc.e.Query(ctx, tc.r)
		require.NoError(t, err, tc.name)
		i := indexOfCitation(p, tc.id)
		require.GreaterOrEqual(t, i, 0, "%s: %v", tc.name, citedIDs(p))
		require.True(t, p.Citations[i].Valid.To.IsZero(), "%s: shows %s", tc.name, p.Citations[i].Valid.To)
		// The old rule, as Verify replays packs made before, shows it.
		old, err := evidence.Parse(oldPack(t, map[string]string{"FRED": "pack2-b3bfa5e-fred-hindsight.json", "EDGAR": "pack2-b3bfa5e-edgar-hindsight.json"}[tc.name]))
		require.NoError(t, err)
		require.False(t, old.Citations[indexOfCitation(old, tc.id)].Valid.To.IsZero(), tc.name)
		// The new pack verifies, by the new rule.
		v, err := tc.e.Verify(ctx, p.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK() && !v.EndsKnownLater, "%s: %v", tc.name, v.Problems)
	}

	// An end announced before the as-of day is shown: anchored 2020-05-10,
	// ending 2020-06-01, as of 2020-05-15.
	first, _ := gdpFetches(t)
	e := memEngine(t, Options{})
	_, err := e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	announce := connectors.Record{Where: "facts:1", Fact: &evidence.Fact{Kind: evidence.FactEnded, ChunkID: "gdp@2020-04-29",
		End: asof.MustDate("2020-06-01"), Anchor: asof.MustDate("2020-05-10").Start()}}
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{announce}), IngestOptions{})
	require.NoError(t, err)
	for day, want := range map[string]string{"2020-05-09": "", "2020-05-10": "2020-06-01", "2020-05-15": "2020-06-01"} {
		p, err := e.Query(ctx, Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate(day)})
		require.NoError(t, err)
		require.Equal(t, []string{"gdp@2020-04-29"}, citedIDs(p), day)
		require.Equal(t, want, p.Citations[0].Valid.To.String(), "as of %s", day)
	}
}

func indexOfCitation(p *evidence.Pack, id string) int {
	for i, c := range p.Citations {
		if c.ChunkID == id {
			return i
		}
	}
	return -1
}
