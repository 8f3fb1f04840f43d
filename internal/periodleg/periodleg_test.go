package periodleg

import (
	"errors"
	"testing"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/period"
)

// TestAskedChecksEveryClaim: a header's period is what a request can give
// (kept) or what its question names (parsed again); any other claim, a
// request's period no request can give included, is dropped.
func TestAskedChecksEveryClaim(t *testing.T) {
	for _, c := range []struct {
		q, period, from string
		fromQuestions   bool
		want, wantFrom  string
	}{
		{"capex in FY2021?", "", "", true, "FY2021", FromQuestion},
		{"capex in FY2021?", "", "", false, "", ""},
		{"capex in FY2021?", "FY2019", FromQuestion, true, "FY2021", FromQuestion},
		{"capex?", "FY2019", FromQuestion, true, "", ""},
		{"capex in FY2021?", "FY2019", FromRequest, true, "FY2019", FromRequest},
		{"capex in FY2021?", None, FromRequest, true, None, FromRequest},
		{"capex in FY2021?", "2020-02-29", FromRequest, false, "2020-02-29", FromRequest},
		{"capex in FY2021?", "bogus", FromRequest, true, "FY2021", FromQuestion},
		{"capex in FY2021?", "", FromRequest, true, "FY2021", FromQuestion},
		{"capex?", "fy2019", FromRequest, true, "", ""},
		{"capex?", "2021-02-29", FromRequest, false, "", ""},
		{"capex?", "FY2019", "martian", true, "", ""},
	} {
		h := evidence.Header{Question: c.q, Period: c.period, PeriodFrom: c.from}
		Asked(&h, c.fromQuestions)
		if h.Period != c.want || h.PeriodFrom != c.wantFrom {
			t.Errorf("%+v: got %q from %q", c, h.Period, h.PeriodFrom)
		}
	}
}

// TestFromRequestPeriod: "" leaves the header alone, None and the canonical
// forms are taken, anything else is period.ErrBadPeriod and changes nothing.
func TestFromRequestPeriod(t *testing.T) {
	for _, p := range []string{"", None, "FY2021", "2021-Q3", "FY2023-Q2", "2020-12-31", "2019"} {
		var h evidence.Header
		if err := FromRequestPeriod(p, &h); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if p != "" && (h.Period != p || h.PeriodFrom != FromRequest) || p == "" && (h.Period != "" || h.PeriodFrom != "") {
			t.Errorf("%q: got %q from %q", p, h.Period, h.PeriodFrom)
		}
	}
	for _, p := range []string{"none ", "NONE", "FY21", "0", "-1", "10000", "2021-Q5", "FY2021\x00", "\xff"} {
		h := evidence.Header{Period: "kept", PeriodFrom: "kept"}
		if err := FromRequestPeriod(p, &h); !errors.Is(err, period.ErrBadPeriod) {
			t.Errorf("%q: %v, want ErrBadPeriod", p, err)
		}
		if h.Period != "kept" || h.PeriodFrom != "kept" {
			t.Errorf("%q: the header changed to %q from %q", p, h.Period, h.PeriodFrom)
		}
	}
}

// TestSettingAndStep: the fingerprint's entry and the trace line, exactly;
// no entry without a period.
func TestSettingAndStep(t *testing.T) {
	s := Settings{List: 200, Weight: 2, Boost: 100, RRFK: 60}
	for _, h := range []evidence.Header{{}, {Period: None, PeriodFrom: FromRequest}} {
		if got, ok := Setting(h, s); ok {
			t.Errorf("%+v: a period entry %+v", h, got)
		}
	}
	h := evidence.Header{Period: "FY2021-Q2", PeriodFrom: FromRequest}
	got, ok := Setting(h, s)
	want := evidence.Setting{Key: "period", Value: "period/1; year list: bm25 over eligible chunks naming the year (text or metadata [period fiscal_year observation_date]) depth=200 weight=2; year boost: 100% of a first place to fused chunks whose metadata declares the year"}
	if !ok || got != want {
		t.Errorf("Setting: %+v, want %+v", got, want)
	}
	if got, _ := Setting(h, Settings{}); got.Value != "period/1; year list: off; year boost: off" {
		t.Errorf("Setting off: %q", got.Value)
	}
	for _, c := range []struct {
		h    evidence.Header
		want string
	}{
		{evidence.Header{Period: None, PeriodFrom: FromRequest}, "period: none (the request turned the question's off)"},
		{evidence.Header{Period: "FY2021", PeriodFrom: FromRequest}, "period: FY2021 (given by the request)"},
		{evidence.Header{Period: "2020-12-31", PeriodFrom: FromQuestion}, "period: 2020-12-31 (parsed from the question)"},
	} {
		if got := Step(c.h); got != c.want {
			t.Errorf("Step(%+v) = %q, want %q", c.h, got, c.want)
		}
	}
	if p := Of(evidence.Header{Period: "FY2021-Q2"}); p != (period.Period{Kind: period.KindQuarter, Year: 2021, Quarter: 2, Fiscal: true}) {
		t.Errorf("Of: %+v", p)
	}
}
