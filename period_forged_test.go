package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/periodleg"
	"github.com/evpack/evpack/internal/state"
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
