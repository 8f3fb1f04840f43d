package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/periodleg"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/period"
)

// TestForgedRequestPeriodFailsVerify: a pack that claims a request gave it
// a period no request can give ("bogus", "" or a year without its "FY")
// was ranked again as if it named none, with the claim copied into the
// replay, and so verified: a pack saying it was ranked for a period it was
// never ranked for passed as genuine. Now Verify finds it different.
func TestForgedRequestPeriodFailsVerify(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true})
	ctx := context.Background()
	r := Request{Question: "What were Northwind's capital expenditures?", AsOf: asof.MustDate("2025-06-30"), Filters: map[string]string{"cik": "northwind"}}
	for _, claim := range []string{"bogus", "", "fy2021", "2021 ", "FY2021\x00", "\xff"} {
		h, err := r.canonical(e.opts.K)
		require.NoError(t, err)
		h.Period, h.PeriodFrom = claim, periodleg.FromRequest
		// The pack a replay that trusts the claim makes: what a forger
		// renders.
		forged, err := e.queryOnce(ctx, h, state.Reads{})
		require.NoError(t, err)
		v, err := e.Verify(ctx, forged.Bytes())
		if err != nil { // bytes that are not UTF-8 do not parse
			require.ErrorIs(t, err, evidence.ErrNotCanonical, "%q", claim)
			continue
		}
		require.False(t, v.OK(), "a pack claiming the request's period %q verified", claim)
	}
	// The genuine ones still verify.
	for _, p := range []string{"FY2021", PeriodNone, "2021-Q2", ""} {
		r.Period = p
		pack, err := e.Query(ctx, r)
		require.NoError(t, err)
		v, err := e.Verify(ctx, pack.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK(), "%q: %v", p, v.Problems)
	}
}

// TestHostileRequestPeriods: a request's period that is not one of the
// canonical forms (years before 1000 or past 9999, quarter 0 or 5, a day
// that does not exist, a fiscal day, other digits or letters, spacing, NUL,
// bytes that are not UTF-8) is refused by name (ErrBadRequest wrapping
// period.ErrBadPeriod); the extreme canonical ones are answered.
func TestHostileRequestPeriods(t *testing.T) {
	e := periodEngine(t, Options{})
	ctx := context.Background()
	r := Request{Question: "capital expenditures", AsOf: asof.MustDate("2025-06-30")}
	for _, bad := range []string{"0", "-1", "-2021", "10000", "FY10000", "0999", "FY0999", "2021-Q0", "2021-Q5", "FY2021-Q5", "2021-00-10", "2021-13-01",
		"2021-02-29", "FY2020-12-31", "fy2021", "Fy2021", " FY2021", "FY2021 ", "FY2021\n", "FY 2021", "FY2021\x00", "\x00", "\xff", "FY\xff2021",
		"\uff12\uff10\uff12\uff11", "FY\u0662\u0660\u0662\u0661", "\uff26\uff392021", "NONE", "none ", "2021-Q3-01", "2021-W01", "+2021"} {
		r.Period = bad
		_, err := e.Query(ctx, r)
		require.ErrorIs(t, err, ErrBadRequest, "%q", bad)
		require.ErrorIs(t, err, period.ErrBadPeriod, "%q", bad)
		_, err = e.CacheKey(r)
		require.ErrorIs(t, err, period.ErrBadPeriod, "%q", bad)
	}
	for _, good := range []string{"1000", "9999", "FY9999-Q4", "2020-02-29", "9999-12-31", "1000-01-01"} {
		r.Period = good
		p, err := e.Query(ctx, r)
		require.NoError(t, err, "%q", good)
		require.Equal(t, good, p.Period)
		v, err := e.Verify(ctx, p.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK(), "%q: %v", good, v.Problems)
	}
}
