package obliqa

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

// Scale grows the ObliQA corpus the way a regulatory mirror grows, for the
// cost benchmarks: every passage held by each of Tenants tenants, in
// Versions dated versions, version v in force from its own day until the
// next version's (the last stays open) and published 30 days before. Version
// days are a year apart, shifted per passage by a seeded 0..179 days, so on
// ScaleAsOf exactly one version of each passage is in force: a request of
// one tenant sees as many chunks as ObliQA holds, out of Tenants × Versions
// times as many.
//
// With Spread set (issue 30's shape) each passage's versions change on
// days of their own instead: version 0 starts on a seeded day of the first
// year, each later version a seeded 90..540 days after the one before, the
// last stays open, and each is published 30 days before it is in force.
// Any day from the end of the first year on has exactly one version of
// every passage in force, but the days on which passages change are spread
// over the whole span, so questions ask on days of their own (AskDays).
//
// The corpus is a function of the base records and the seed; batches are
// made one at a time, so a caller holds one batch, never the whole corpus.
type Scale struct {
	Tenants  int
	Versions int
	Seed     uint64
	Spread   bool // the spread-version shape (issue 30); false: aligned years
}

// Shape names the scale's shape: "spread" or "aligned".
func (s Scale) Shape() string {
	if s.Spread {
		return "spread"
	}
	return "aligned"
}

// The spread shape's gaps between one version's first day and the next's,
// in days, inclusive (issue 30).
const (
	spreadMinGap = 90
	spreadMaxGap = 540
)

// scaleStart is version 0's first possible day.
var scaleStart = asof.MustDate("2014-01-01")

// scaleDay returns the day n days after scaleStart.
func scaleDay(n int) asof.Date { return asof.DateFromDays(scaleStart.Days() + int64(n)) }

// ScaleAsOf returns the day the cost benchmarks ask on in the aligned
// shape: inside version Versions/2 of every passage. (In the spread shape
// it is a day with one version of each in force only when it falls in
// AskWindow; the benchmarks ask on AskDays there.)
func (s Scale) ScaleAsOf() asof.Date {
	return scaleDay(365*(s.Versions/2) + 200)
}

// Tenant names tenant i.
func (s Scale) Tenant(i int) string { return fmt.Sprintf("t%02d", i) }

// Len returns how many records the scale makes of base.
func (s Scale) Len(base []connectors.Record) int { return len(base) * s.Tenants * s.Versions }

// Batches yields the corpus in batches of at most size records, in the
// order a mirror fetches it: version by version, and within a version,
// tenant by tenant.
func (s Scale) Batches(base []connectors.Record, size int) iter.Seq[[]connectors.Record] {
	return func(yield func([]connectors.Record) bool) {
		days := s.days(len(base))
		batch := make([]connectors.Record, 0, size)
		for v := range s.Versions {
			for t := range s.Tenants {
				for i, r := range base {
					batch = append(batch, s.version(r, days[i], t, v))
					if len(batch) == size {
						if !yield(batch) {
							return
						}
						batch = make([]connectors.Record, 0, size)
					}
				}
			}
		}
		if len(batch) > 0 {
			yield(batch)
		}
	}
}

// shifts returns the days by which each of n base records' versions start
// after their year's first day (seeded).
func (s Scale) shifts(n int) []int {
	shift := make([]int, n)
	rng := rand.New(rand.NewPCG(s.Seed, 0x5ca1e))
	for i := range shift {
		shift[i] = rng.IntN(180)
	}
	return shift
}

// days returns, for each of n base records, the first day of each of its
// versions 0..Versions (one more than the corpus holds, for Next), in days
// after scaleStart. Aligned: a year apart, shifted per record (shifts).
// Spread: version 0 on a seeded day of the first year, each later one a
// seeded spreadMinGap..spreadMaxGap days after the one before, drawn record
// by record, version by version, from a stream of its own.
func (s Scale) days(n int) [][]int {
	out := make([][]int, n)
	if !s.Spread {
		for i, sh := range s.shifts(n) {
			out[i] = make([]int, s.Versions+1)
			for v := range out[i] {
				out[i][v] = 365*v + sh
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5b7ead))
	for i := range out {
		d := make([]int, s.Versions+1)
		d[0] = rng.IntN(365)
		for v := 1; v < len(d); v++ {
			d[v] = d[v-1] + spreadMinGap + rng.IntN(spreadMaxGap-spreadMinGap+1)
		}
		out[i] = d
	}
	return out
}

// Records returns a func giving version v (below Versions) of base record
// i for tenant t, as Batches makes it: for a benchmark that names stored
// chunks. The days of base are drawn once, here: drawn again for each
// record (1.5 MB at 13k base records), they made garbage that set the
// collector going beside the commits a benchmark timed.
func (s Scale) Records(base []connectors.Record) func(i, t, v int) connectors.Record {
	days := s.days(len(base))
	return func(i, t, v int) connectors.Record { return s.version(base[i], days[i], t, v) }
}

// AskWindow returns the spread shape's ask window [from, to): the year
// starting at day max(365, 315×(Versions/2)) after the first possible
// version day. From the end of the first year on every version 0 has
// started, and the last version stays open, so every passage has exactly
// one version in force on every day of the window; 315 days is the mean
// gap, so the window sits around version Versions/2's mean first day,
// where most passages have versions before and after the one in force
// (TestScaleSpread measures how many). Aligned: ScaleAsOf alone.
func (s Scale) AskWindow() (from, to asof.Date) {
	if !s.Spread {
		d := s.ScaleAsOf()
		return d, asof.DateFromDays(d.Days() + 1)
	}
	lo := max(365, (spreadMinGap+spreadMaxGap)/2*(s.Versions/2))
	return scaleDay(lo), scaleDay(lo + 365)
}

// AskDays returns n days to ask on, drawn uniformly from AskWindow by a
// stream seeded with the scale's seed and seed: in the aligned shape every
// one is ScaleAsOf.
func (s Scale) AskDays(n int, seed uint64) []asof.Date {
	from, to := s.AskWindow()
	rng := rand.New(rand.NewPCG(s.Seed, seed))
	out := make([]asof.Date, n)
	for i := range out {
		out[i] = asof.DateFromDays(from.Days() + rng.Int64N(to.Days()-from.Days()))
	}
	return out
}

// Next returns the version after the last of the first n base records
// (n at most len(base)) for the first tenant: a day's few new chunks for
// an index of the whole scale.
func (s Scale) Next(base []connectors.Record, n int) []connectors.Record {
	days := s.days(len(base))
	out := make([]connectors.Record, n)
	for i := range out {
		out[i] = s.version(base[i], days[i], 0, s.Versions)
	}
	return out
}

// version returns version v of base record r for tenant t, given the
// first days of its versions (days, in days after scaleStart).
func (s Scale) version(r connectors.Record, days []int, t, v int) connectors.Record {
	from := scaleDay(days[v])
	c := r.Chunk
	c.ID = fmt.Sprintf("%s/%s/v%d", s.Tenant(t), r.Chunk.ID, v)
	c.Tenant = s.Tenant(t)
	c.Version = fmt.Sprint(v + 1)
	c.SourceURL = fmt.Sprintf("%s?v=%d", r.Chunk.SourceURL, v+1)
	if v > 0 { // an amendment names its day, as amended texts do
		c.Text = fmt.Sprintf("%s (As amended with effect from %s.)", r.Chunk.Text, from)
	}
	c.Valid = asof.Interval{From: from}
	if v+1 < s.Versions {
		c.Valid.To = scaleDay(days[v+1])
	}
	published := asof.DateFromDays(from.Days() - 30).Start()
	c.RetrievedAt = published.Add(24 * time.Hour)
	c.Anchor = asof.ResolveAnchor("published", published, c.RetrievedAt)
	return connectors.Record{Where: fmt.Sprintf("scale %s v%d: %s", c.Tenant, v, r.Where), Chunk: c}
}

// TurnOrders returns the orders in which n systems take their turns, one
// order per question, to be used in turn: a Williams design. Within its
// orders every system comes right after every other equally often (once
// each for even n; odd n needs 2n orders, and twice each) and takes every
// place equally often. A benchmark whose systems always run in one order
// lets one system's leftovers (the garbage it made, the pages it evicted)
// fall on the same neighbour at every turn; this one spreads them. The
// step from one order's last system to the next order's first is not
// balanced.
func TurnOrders(n int) [][]int {
	if n <= 0 {
		return nil
	}
	if n == 1 {
		return [][]int{{0}}
	}
	// The first order: 0, 1, n-1, 2, n-2, ...; the others add r mod n.
	first := make([]int, n)
	lo, hi := 1, n-1
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			first[j], lo = lo, lo+1
		} else {
			first[j], hi = hi, hi-1
		}
	}
	orders := make([][]int, 0, 2*n)
	for r := range n {
		o := make([]int, n)
		for j, f := range first {
			o[j] = (f + r) % n
		}
		orders = append(orders, o)
	}
	if n%2 == 1 {
		for r := range n {
			o := slices.Clone(orders[r])
			slices.Reverse(o)
			orders = append(orders, o)
		}
	}
	return orders
}
