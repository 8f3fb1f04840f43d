package period

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Real phrasings: FinanceBench's questions (A to L), the examples,
// and ObliQA questions that name a law's year, not a period.
func TestParsePhrasings(t *testing.T) {
	for _, tc := range []struct {
		q, want string
	}{
		// The examples.
		{"What is the FY2018 capital expenditure amount (in USD millions) for 3M?", "FY2018"},
		{"Which segment grew most in fiscal 2022?", "FY2022"},
		{"What drove revenue growth in 2019?", "2019"},
		{"What was net income in Q3 2021?", "2021-Q3"},
		{"What was total debt as of December 31, 2020?", "2020-12-31"},
		// FinanceBench (A to L).
		{"What Was AMCOR's Adjusted Non GAAP EBITDA for FY 2023", "FY2023"},
		{"Does AMD have a reasonably healthy liquidity profile based on its quick ratio for FY22?", "FY2022"},
		{"From FY21 to FY22, excluding Embedded, in which AMD reporting segment did sales proportionally increase the most?", "FY2022"},
		{"Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?", "FY2023"},
		{"What is the FY2017 - FY2019 3 year average of capex as a % of revenue for Activision Blizzard?", "FY2019"},
		{"Does 3M have a reasonably healthy liquidity profile based on its quick ratio for Q2 of FY2023?", "FY2023-Q2"},
		{"Which debt securities are registered to trade on a national securities exchange under 3M's name as of Q2 of 2023?", "2023-Q2"},
		{"Was there any drop in Cash & Cash equivalents between FY 2023 and Q2 of FY2024?", "FY2024-Q2"},
		{"Which of JPM's business segments had the lowest net revenue in 2021 Q1?", "2021-Q1"},
		{"In 2022 Q2, which of JPM's business segments had the highest net income?", "2022-Q2"},
		{"Looking at VaR, did the risk that JPM faced in the second fiscal quarter of 2023 decrease compared to the same period in the prior year?", "FY2023-Q2"},
		{"What was the key agenda of the AMCOR's 8k filing dated 1st July 2022?", "2022-07-01"},
		{"Which business segment of JnJ will be treated as a discontinued operation from August 30, 2023 onward?", "2023-08-30"},
		{"Has CVS Health reported any materially important ongoing legal battles from 2022, 2021 and 2020?", "2022"},
		{"If we exclude the impact of M&A, which segment has dragged down 3M's overall growth in 2022?", "2022"},
		{"What was the largest liability in American Express's Balance Sheet in 2022?", "2022"},
		{"Was American Express able to retain card members during 2022?", "2022"},
		{"What is the nature & purpose of AMCOR's restructuring liability as oF Q2 of FY2023 close?", "FY2023-Q2"},
		{"Real Gross Domestic Product percent change 2020-01-01", "2020-01-01"},
		{"Revenue for FY2021/FY2022", "FY2022"},
		{"Net sales in the third quarter of fiscal 2022", "FY2022-Q3"},
		{"Balance at Dec. 31 2019 and for 2019", "2019-12-31"}, // the day is more precise than the year
		// No period.
		{"Does 3M maintain a stable trend of dividend distribution?", ""},
		{"What industry does AMCOR primarily operate in?", ""},
		{"What is the FY2018 revenue? It rose 2018% (a typo)", "FY2018"},
		{"Under what title are the 2015 regulations that govern financial services and markets known?", ""},
		{"What are the consequences for non-compliance with Article 21 of Cabinet Decision No. (74) of 2020?", ""},
		{"How does the ADGM Data Protection Regulations 2015 apply to a PFP Operator?", ""},
		{"Revenue was $2019 million", ""},
		{"Order 12019 and part 20190", ""},
		{"As of February 30, 2020 (no such day)", ""},
	} {
		p, ok := Parse(tc.q)
		require.Equal(t, tc.want != "", ok, "%q", tc.q)
		require.Equal(t, tc.want, p.String(), "%q", tc.q)
		if ok {
			back, err := ParseCanonical(p.String())
			require.NoError(t, err)
			require.Equal(t, p, back, "String and ParseCanonical round-trip")
		}
	}
}

func TestParseCanonical(t *testing.T) {
	for _, s := range []string{"2019", "FY2018", "2021-Q3", "FY2023-Q2", "2020-12-31", "2024-02-29"} {
		p, err := ParseCanonical(s)
		require.NoError(t, err, s)
		require.Equal(t, s, p.String())
	}
	for _, s := range []string{"", "none", "fy2018", "FY18", "2021-Q5", "2021-q3", "FY2020-12-31", "2023-02-29", "2020-13-01", "0999", " 2019", "2019 "} {
		_, err := ParseCanonical(s)
		require.True(t, errors.Is(err, ErrBadPeriod), "%q: %v", s, err)
	}
}

func TestNamedBy(t *testing.T) {
	fy18 := Period{Kind: KindFiscal, Year: 2018, Fiscal: true}
	q3 := Period{Kind: KindQuarter, Year: 2018, Quarter: 3}
	for _, tc := range []struct {
		meta map[string]string
		want bool
	}{
		{map[string]string{"fiscal_year": "2018"}, true},                   // EDGAR, FinanceBench
		{map[string]string{"observation_date": "2018-07-01"}, true},        // FRED
		{map[string]string{"period": "FY2018"}, true},                      // declared
		{map[string]string{"period": "2018-Q1"}, true},                     // years only are compared
		{map[string]string{"period": "FY2018-Q4"}, true},                   //
		{map[string]string{"fiscal_year": "2019", "period": "2018"}, true}, // any key
		{map[string]string{"fiscal_year": "2019"}, false},                  //
		{map[string]string{"period_end": "2018-12-31"}, false},             // not a period key
		{map[string]string{"period": "20180"}, false},                      //
		{map[string]string{"article": "2018"}, false},                      // a statute's
		{nil, false}, //
		{map[string]string{"observation_date": "2019-01-01"}, false},           //
		{map[string]string{"fiscal_year": "2018-06-30", "form": "10-K"}, true}, //
	} {
		require.Equal(t, tc.want, fy18.NamedBy(tc.meta), "%v", tc.meta)
		require.Equal(t, tc.want, q3.NamedBy(tc.meta), "%v", tc.meta)
	}
	require.False(t, Period{}.NamedBy(map[string]string{"fiscal_year": "2018"}))
	terms, prefixes := MetaTerms(2018)
	require.Equal(t, []string{"period=2018", "period=FY2018", "fiscal_year=2018", "fiscal_year=FY2018", "observation_date=2018", "observation_date=FY2018"}, terms)
	require.Equal(t, []string{"period=2018-", "period=FY2018-", "fiscal_year=2018-", "fiscal_year=FY2018-", "observation_date=2018-", "observation_date=FY2018-"}, prefixes)
}
