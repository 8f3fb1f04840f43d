package obliqa

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// What BenchmarkScale's figures rest on: the grown corpus holds Tenants ×
// Versions copies of every passage, each a valid chunk with a unique ID, in
// batches of the size asked; on ScaleAsOf exactly one version of each
// passage is eligible per tenant; and the same seed makes the same corpus.
func TestScaleCorpus(t *testing.T) {
	base := scaleBase(7, "p%d")
	s := Scale{Tenants: 3, Versions: 5, Seed: 7}
	collect := func(s Scale) ([]connectors.Record, []int) {
		var all []connectors.Record
		var sizes []int
		for recs := range s.Batches(base, 10) {
			all, sizes = append(all, recs...), append(sizes, len(recs))
		}
		return all, sizes
	}
	all, sizes := collect(s)
	require.Len(t, all, s.Len(base))
	require.Equal(t, []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5}, sizes)
	again, _ := collect(s)
	require.Equal(t, all, again, "the same seed makes the same corpus")
	other, _ := collect(Scale{Tenants: 3, Versions: 5, Seed: 8})
	require.NotEqual(t, all, other, "another seed shifts the version days")

	day := s.ScaleAsOf()
	ids := map[string]bool{}
	eligible := map[string]int{} // tenant/passage -> versions eligible on day
	for _, r := range all {
		c := r.Chunk
		require.NoError(t, c.Prepare(), r.Where)
		require.False(t, ids[c.ID], "duplicate ID %s", c.ID)
		ids[c.ID] = true
		if asof.Eligible(c.Anchor, c.Valid, day) {
			eligible[c.Tenant+"/"+c.DocID+"/"+r.Where[len(r.Where)-2:]]++
		}
	}
	require.Len(t, eligible, s.Tenants*len(base))
	for k, n := range eligible {
		require.Equal(t, 1, n, "%s: versions eligible on %s", k, day)
	}
	tenants := []string{}
	for _, r := range all[:len(base)*s.Tenants] {
		if !slices.Contains(tenants, r.Chunk.Tenant) {
			tenants = append(tenants, r.Chunk.Tenant)
		}
	}
	require.Equal(t, []string{"t00", "t01", "t02"}, tenants, "version 0 of every tenant comes first")
}

// TurnOrders is a Williams design for every n it is asked: each order is a
// permutation, each system takes each place equally often, and each
// ordered pair of systems is adjacent equally often within the orders, the
// balance BenchmarkScale's fair turns rest on. Hand-checked for 4.
func TestTurnOrders(t *testing.T) {
	require.Equal(t, [][]int{{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}}, TurnOrders(4))
	require.Equal(t, [][]int{{0, 1}, {1, 0}}, TurnOrders(2))
	require.Equal(t, [][]int{{0}}, TurnOrders(1))
	require.Nil(t, TurnOrders(0))
	for n := 2; n <= 9; n++ {
		orders := TurnOrders(n)
		want := n
		if n%2 == 1 {
			want = 2 * n
		}
		require.Len(t, orders, want, "n=%d", n)
		place := make([][]int, n) // place[s][j]: orders with s in place j
		next := make([][]int, n)  // next[a][b]: orders with b right after a
		for s := range n {
			place[s], next[s] = make([]int, n), make([]int, n)
		}
		for _, o := range orders {
			sorted := slices.Sorted(slices.Values(o))
			for j := range n {
				require.Equal(t, j, sorted[j], "n=%d: %v is not a permutation", n, o)
				place[o[j]][j]++
				if j > 0 {
					next[o[j-1]][o[j]]++
				}
			}
		}
		for a := range n {
			for j := range n {
				require.Equal(t, len(orders)/n, place[a][j], "n=%d: system %d in place %d", n, a, j)
			}
			for b := range n {
				if a != b {
					require.Equal(t, len(orders)/n, next[a][b], "n=%d: system %d right after %d", n, b, a)
				}
			}
		}
	}
}

// scaleTestBase is the seven-passage base corpus the Scale tests grow.
func scaleTestBase() []connectors.Record {
	base := scaleBase(7, "p%d")
	return base
}

// scaleDigest is the SHA-256 of every record s makes of base, in batch
// order, then of Next's records, each printed with %+v.
func scaleDigest(s Scale, base []connectors.Record) string {
	h := sha256.New()
	for recs := range s.Batches(base, 10) {
		for _, r := range recs {
			fmt.Fprintf(h, "%+v\n", r)
		}
	}
	for _, r := range s.Next(base, len(base)) {
		fmt.Fprintf(h, "%+v\n", r)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The aligned shape makes the records it made before the spread shape
// existed: digests pinned from the code at 2fa8dc6, so every figure taken
// on it stays reproducible.
func TestScaleAlignedUnchanged(t *testing.T) {
	base := scaleTestBase()
	require.Equal(t, "7d99711b6f455893658b959043f808be8eb38ff38686b35be783d2a731dcabee",
		scaleDigest(Scale{Tenants: 3, Versions: 5, Seed: 7}, base))
	require.Equal(t, "632a611a03b65467fc9f3c69e4c3b131e19ff71252564248ded631a366ac7123",
		scaleDigest(Scale{Tenants: 2, Versions: 4, Seed: 20261130}, base))
	s := Scale{Tenants: 2, Versions: 4, Seed: 20261130}
	require.Equal(t, []asof.Date{s.ScaleAsOf(), s.ScaleAsOf()}, s.AskDays(2, 1), "aligned: every question on ScaleAsOf")
}

// The spread shape (issue 30): each passage's versions start a seeded
// 90..540 days apart, version 0 in the first year, the last open, each
// published 30 days before; on every ask day (brute force over the records)
// each passage of each tenant has exactly one version in force, and most
// have versions before and after it; the same seed makes the same corpus
// and the same days.
func TestScaleSpread(t *testing.T) {
	base := scaleBase(300, "p%03d")
	for _, s := range []Scale{{Tenants: 2, Versions: 4, Seed: 20261130, Spread: true}, {Tenants: 1, Versions: 10, Seed: 5, Spread: true}} {
		var all []connectors.Record
		for recs := range s.Batches(base, 97) {
			all = append(all, recs...)
		}
		require.Len(t, all, s.Len(base))
		again := slices.Collect(s.Batches(base, 97))
		require.Equal(t, all, slices.Concat(again...), "the same seed makes the same corpus")
		other := s
		other.Seed++
		require.NotEqual(t, scaleDigest(s, base), scaleDigest(other, base), "another seed, other days")
		require.NotEqual(t, scaleDigest(s, base), scaleDigest(Scale{Tenants: s.Tenants, Versions: s.Versions, Seed: s.Seed}, base), "spread differs from aligned")

		// versions[tenant/passage][v]: the chunks, to check the days.
		versions := map[string][]evidence.Chunk{}
		ids := map[string]bool{}
		for _, r := range all {
			c := r.Chunk
			require.NoError(t, c.Prepare(), r.Where)
			require.False(t, ids[c.ID], "duplicate ID %s", c.ID)
			ids[c.ID] = true
			k := c.ID[:strings.LastIndex(c.ID, "/")] // tenant/passage
			versions[k] = append(versions[k], c)
		}
		require.Len(t, versions, s.Tenants*len(base))
		next := s.Next(base, len(base))
		for k, vs := range versions {
			require.Len(t, vs, s.Versions, k)
			first := vs[0].Valid.From.Days() - scaleStart.Days()
			require.True(t, first >= 0 && first < 365, "%s: version 0 starts on day %d", k, first)
			for v, c := range vs {
				require.Equal(t, fmt.Sprint(v+1), c.Version, k)
				require.Equal(t, c.Valid.From.Days()-30, c.Anchor.Day().Days(), "%s v%d: published 30 days before", k, v)
				if v+1 == len(vs) {
					require.True(t, c.Valid.To.IsZero(), "%s: the last version stays open", k)
					continue
				}
				require.Equal(t, vs[v+1].Valid.From, c.Valid.To, "%s v%d ends when the next starts", k, v)
				gap := c.Valid.To.Days() - c.Valid.From.Days()
				require.True(t, gap >= spreadMinGap && gap <= spreadMaxGap, "%s v%d: gap %d days", k, v, gap)
			}
		}
		for i, r := range next { // Next: tenant 0's version after the last
			last := versions[r.Chunk.ID[:strings.LastIndex(r.Chunk.ID, "/")]][s.Versions-1]
			gap := r.Chunk.Valid.From.Days() - last.Valid.From.Days()
			require.True(t, gap >= spreadMinGap && gap <= spreadMaxGap, "Next %d: gap %d days", i, gap)
		}

		days := s.AskDays(40, 99)
		require.Equal(t, days, s.AskDays(40, 99), "the same seeds make the same days")
		require.NotEqual(t, days, s.AskDays(40, 100))
		from, to := s.AskWindow()
		var inner float64
		for _, day := range days {
			require.True(t, !day.Before(from) && day.Before(to), "%s outside [%s, %s)", day, from, to)
			inForce := map[string]int{}
			between := 0
			for k, vs := range versions {
				for v, c := range vs {
					if asof.Eligible(c.Anchor, c.Valid, day) {
						inForce[k]++
						if v > 0 && v+1 < len(vs) {
							between++
						}
					}
				}
			}
			require.Len(t, inForce, len(versions), "%s: every passage has a version in force", day)
			for k, n := range inForce {
				require.Equal(t, 1, n, "%s on %s: versions in force", k, day)
			}
			share := float64(between) / float64(len(versions))
			require.Greater(t, share, 0.5, "%s: passages with versions before and after the one in force", day)
			inner += share / float64(len(days))
		}
		t.Logf("%dx%d seed %d: window [%s, %s); on average %.0f%% of passages have versions before and after the one in force",
			s.Tenants, s.Versions, s.Seed, from, to, 100*inner)
	}
}

// Kept indexes never mix shapes: the spread shape's live in the kept
// directory's subdirectory "spread", under a marker whose name and text
// name the shape, and a marker of the aligned shape is refused for it.
// Nor spans of partitions: another span's live in "days-N" below.
func TestScaleKeptShapes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvScaleDir, dir)
	base := scaleTestBase()
	aligned := Scale{Tenants: 2, Versions: 4, Seed: 20261130}
	spread := aligned
	spread.Spread = true
	require.Equal(t, dir, keptRoot(aligned))
	require.Equal(t, filepath.Join(dir, "spread"), keptRoot(spread))
	// Another span of partitions is kept apart from the default's, in
	// either shape.
	t.Setenv(EnvScalePartitionDays, "365")
	require.Equal(t, filepath.Join(dir, "days-365"), keptRoot(aligned))
	require.Equal(t, filepath.Join(dir, "spread", "days-365"), keptRoot(spread))
	require.Equal(t, int64(365), scaleOptions(t).PartitionDays)
	t.Setenv(EnvScalePartitionDays, "")
	require.Equal(t, filepath.Join(dir, "complete-2x4.txt"), scaleMarker(dir, aligned, ""), "the aligned marker as before shapes")
	require.Equal(t, filepath.Join(dir, "complete-2x4-spread-one.txt"), scaleMarker(dir, spread, "one"))
	require.Equal(t, "BenchmarkScale 2x4 seed 20261130: 56 chunks from 7 base records; complete: evpack bleve small\n",
		scaleMarkerText(aligned, base, ""))
	require.Equal(t, "BenchmarkScale 2x4 seed 20261130, shape spread: 56 chunks from 7 base records; complete: one\n",
		scaleMarkerText(spread, base, "one"))

	require.NoError(t, os.WriteFile(scaleMarker(dir, aligned, ""), []byte(scaleMarkerText(aligned, base, "")), 0o644))
	ok, err := scaleComplete(dir, aligned, base, "")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = scaleComplete(dir, spread, base, "")
	require.NoError(t, err)
	require.False(t, ok, "the aligned marker does not make the spread indexes complete")
	// An aligned marker under the spread name (a copied directory) is another corpus.
	require.NoError(t, os.WriteFile(scaleMarker(dir, spread, ""), []byte(scaleMarkerText(aligned, base, "")), 0o644))
	_, err = scaleComplete(dir, spread, base, "")
	require.ErrorContains(t, err, "indexes of another corpus")
}

// scaleBase returns n base passages of one document, passage i with the ID
// idFormat makes of i.
func scaleBase(n int, idFormat string) []connectors.Record {
	base := make([]connectors.Record, n)
	for i := range base {
		id := fmt.Sprintf(idFormat, i)
		base[i] = connectors.Record{Where: id, Chunk: evidence.Chunk{
			ID: id, DocID: "d", Version: "1", Text: fmt.Sprintf("Passage %d on records.", i),
			SourceURL: "obliqa://d/p", Connector: "obliqa", RetrievedAt: Retrieved,
			Anchor: asof.ResolveAnchor("", time.Time{}, Retrieved)}}
	}
	return base
}
