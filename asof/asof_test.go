package asof

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
		why      string
	}{
		{"2026-01-15", "2026-01-15", true, "the one accepted form"},
		{"2024-02-29", "2024-02-29", true, "leap day"},
		{"2023-02-29", "", false, "not a leap year"},
		{"2026-1-15", "", false, "month must have two digits"},
		{"15/01/2026", "", false, "day-first forms are ambiguous"},
		{"2026-01-15T00:00:00Z", "", false, "an instant is not a date"},
		{"0999-12-31", "", false, "before the supported range"},
		{"", "", false, "empty"},
	}
	for _, c := range cases {
		d, err := ParseDate(c.in)
		if c.ok != (err == nil) {
			t.Fatalf("%s (%s): err = %v", c.in, c.why, err)
		}
		if !c.ok {
			var de *DateError
			if !errors.Is(err, ErrBadDate) || !errors.As(err, &de) || de.Input != c.in {
				t.Fatalf("%s (%s): want *DateError wrapping ErrBadDate, got %v", c.in, c.why, err)
			}
			if want := fmt.Sprintf("asof: cannot read %q as a date (want YYYY-MM-DD, in the years 1000-9999)", c.in); err.Error() != want {
				t.Fatalf("%s (%s): error %q, want %q (it names the supported range)", c.in, c.why, err, want)
			}
			continue
		}
		if d.String() != c.want {
			t.Fatalf("%s: got %s", c.in, d)
		}
	}
}

func TestParseInstant(t *testing.T) {
	got, err := ParseInstant("2026-01-15T17:30:00-05:00")
	if err != nil || FormatInstant(got) != "2026-01-15T22:30:00Z" {
		t.Fatalf("offset is converted to UTC: %v %v", FormatInstant(got), err)
	}
	got, err = ParseInstant("2026-01-15")
	if err != nil || FormatInstant(got) != "2026-01-15T00:00:00Z" {
		t.Fatalf("a date is midnight UTC: %v %v", got, err)
	}
	got, _ = ParseInstant("2026-01-15T10:00:00.999Z")
	if FormatInstant(got) != "2026-01-15T10:00:00Z" {
		t.Fatalf("sub-second parts are truncated: %v", got)
	}
	if _, err := ParseInstant("yesterday"); !errors.Is(err, ErrBadDate) {
		t.Fatalf("got %v", err)
	}
}

func TestIntervalContains(t *testing.T) {
	from, to := MustDate("2021-04-01"), MustDate("2026-01-01")
	cases := []struct {
		iv   Interval
		day  string
		want bool
		why  string
	}{
		{Interval{From: from, To: to}, "2021-04-01", true, "from is inclusive"},
		{Interval{From: from, To: to}, "2025-12-31", true, "last day in force"},
		{Interval{From: from, To: to}, "2026-01-01", false, "to is exclusive"},
		{Interval{From: from, To: to}, "2021-03-31", false, "before from"},
		{Interval{From: from}, "9999-12-31", true, "open end"},
		{Interval{To: to}, "1000-01-01", true, "open start"},
		{Interval{}, "2020-01-01", true, "fully open"},
	}
	for _, c := range cases {
		if got := c.iv.Contains(MustDate(c.day)); got != c.want {
			t.Errorf("%s contains %s = %v, want %v (%s)", c.iv, c.day, got, c.want, c.why)
		}
	}
	if err := (Interval{From: to, To: from}).Validate(); !errors.Is(err, ErrBadInterval) {
		t.Fatalf("reversed interval: %v", err)
	}
	if err := (Interval{From: to, To: to}).Validate(); !errors.Is(err, ErrBadInterval) {
		t.Fatalf("empty interval: %v", err)
	}
}

func TestEligible(t *testing.T) {
	at := func(s string) Anchor { v, _ := ParseInstant(s); return Anchor{At: v, Field: "published"} }
	cases := []struct {
		a    Anchor
		iv   Interval
		day  string
		want bool
		why  string
	}{
		{at("2026-01-15T23:59:59Z"), Interval{}, "2026-01-15", true, "anchored late on the as-of day itself"},
		{at("2026-01-16T00:00:00Z"), Interval{}, "2026-01-15", false, "anchored the next day"},
		{at("2026-01-20T00:00:00Z"), Interval{}, "2026-01-15", false, "the brief of the 15th must not cite the 20th"},
		{at("2025-11-20T00:00:00Z"), Interval{From: MustDate("2026-01-01")}, "2025-12-15", false, "published but not yet in force"},
		{Anchor{}, Interval{}, "2026-01-15", false, "undated is never eligible"},
	}
	for _, c := range cases {
		if got := Eligible(c.a, c.iv, MustDate(c.day)); got != c.want {
			t.Errorf("%s: got %v (%s)", c.why, got, c.day)
		}
	}
}

func TestResolveAnchor(t *testing.T) {
	retrieved := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	filed := time.Date(2025, 3, 1, 21, 5, 3, 0, time.UTC)
	if a := ResolveAnchor("acceptance_datetime", filed, retrieved); a.Field != "acceptance_datetime" || !a.At.Equal(filed) {
		t.Fatalf("declared field with a value anchors: %+v", a)
	}
	if a := ResolveAnchor("acceptance_datetime", time.Time{}, retrieved); a.Field != RetrievedAtField || !a.At.Equal(retrieved) {
		t.Fatalf("declared field without a value falls back: %+v", a)
	}
	if a := ResolveAnchor("", filed, retrieved); a.Field != RetrievedAtField {
		t.Fatalf("no declared field falls back: %+v", a)
	}
}

func TestDateOfMatchesTheCalendar(t *testing.T) {
	for _, s := range []string{"1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "1000-01-01T12:00:00Z",
		"2024-02-29T23:59:59+05:00", "2026-01-15T00:00:00-08:00", "9999-12-31T23:59:59Z"} {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := DateOf(tm).String(), tm.UTC().Format(time.DateOnly); got != want {
			t.Errorf("DateOf(%s) = %s, want %s", s, got, want)
		}
	}
}

// TestDayBounds: minDays and maxDays are the first and last days ParseDate
// accepts, so that Check and ParseDate agree on the range.
func TestDayBounds(t *testing.T) {
	first, last := MustDate("1000-01-01"), MustDate("9999-12-31")
	if first.Days() != minDays || last.Days() != maxDays {
		t.Fatalf("bounds %d, %d; the calendar says %d, %d", minDays, maxDays, first.Days(), last.Days())
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		d    Date
		ok   bool
		why  string
	}{
		{"unset", Date{}, true, "an open end is not a date to check"},
		{"first day", DateFromDays(minDays), true, "1000-01-01, ParseDate's first"},
		{"last day", DateFromDays(maxDays), true, "9999-12-31, ParseDate's last"},
		{"day before", DateFromDays(minDays - 1), false, "0999-12-31 does not parse back from a pack"},
		{"day after", DateFromDays(maxDays + 1), false, "10000-01-01 does not parse back"},
		{"wraps", DateFromDays(17683 + 1<<57), false, "its seconds overflow int64 and wrapped to 2018-06-01"},
		{"most negative", DateFromDays(math.MinInt64), false, "no overflow in the check itself"},
	}
	for _, c := range cases {
		err := c.d.Check()
		if c.ok != (err == nil) {
			t.Fatalf("%s (%s): err = %v", c.name, c.why, err)
		}
		if !c.ok && !errors.Is(err, ErrBadDate) {
			t.Fatalf("%s (%s): want ErrBadDate, got %v", c.name, c.why, err)
		}
		if err := (Interval{From: c.d}).Validate(); c.ok != (err == nil) || (!c.ok && !strings.HasPrefix(err.Error(), "valid_from: ")) {
			t.Fatalf("%s: Interval.Validate with it as valid_from: %v", c.name, err)
		}
	}
	for _, c := range []struct {
		name string
		t    time.Time
		ok   bool
	}{
		{"zero", time.Time{}, true},
		{"in range", time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), true},
		{"year 500", time.Date(500, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"year 12000", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"9999-12-31 23:00 -05:00, 10000 in UTC", time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("", -5*3600)), false},
	} {
		if err := CheckInstant(c.t); c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrBadDate)) {
			t.Fatalf("CheckInstant %s: %v", c.name, err)
		}
	}
}

// TestStartDoesNotWrap: a day number whose seconds would overflow int64
// starts on the day just past the range, not on one inside it.
func TestStartDoesNotWrap(t *testing.T) {
	for _, c := range []struct {
		d    Date
		want string
	}{
		{DateFromDays(17683 + 1<<57), "10000-01-01"},
		{DateFromDays(maxDays + 1), "10000-01-01"},
		{DateFromDays(-17683 - 1<<57), "0999-12-31"},
		{DateFromDays(math.MinInt64), "0999-12-31"},
	} {
		if got := c.d.String(); got != c.want {
			t.Fatalf("day %d: %s, want %s", c.d.Days(), got, c.want)
		}
	}
}
