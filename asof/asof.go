package asof

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBadDate is returned (wrapped in a *DateError) for a date or instant that
// cannot be parsed or lies outside the supported range.
var ErrBadDate = errors.New("asof: bad date")

// ErrBadInterval is returned for a validity interval whose end is not after
// its start.
var ErrBadInterval = errors.New("asof: bad interval")

// DateError reports which input could not be read as a date.
type DateError struct {
	Input string // the text as given
	Want  string // the accepted forms
}

// Error implements error.
func (e *DateError) Error() string {
	return fmt.Sprintf("asof: cannot read %q as a date (want %s, in the years %d-%d)", e.Input, e.Want, minYear, maxYear)
}

// Unwrap lets errors.Is(err, ErrBadDate) match.
func (e *DateError) Unwrap() error { return ErrBadDate }

// The supported range keeps day numbers and Unix seconds exactly
// representable as float64, which is how bleve stores numeric fields.
const (
	minYear = 1000
	maxYear = 9999
	// minDays and maxDays are the day numbers of 1000-01-01 and 9999-12-31
	// (TestDayBounds).
	minDays = -354285
	maxDays = 2932896
)

// Date is a civil day in UTC. The zero Date is "unset" (an open interval end).
type Date struct {
	days int64 // days since 1970-01-01, valid only when set
	set  bool
}

// DateFromDays returns the Date that is n days after 1970-01-01.
func DateFromDays(n int64) Date { return Date{days: n, set: true} }

// DateOf returns the UTC day of the instant t.
func DateOf(t time.Time) Date {
	// A UTC day is floor(Unix seconds / 86400): no calendar arithmetic, which
	// matters because eligibility is checked per chunk on the query path.
	s := t.Unix()
	days := s / 86400
	if s%86400 < 0 {
		days--
	}
	return DateFromDays(days)
}

// ParseDate reads a date written YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) || t.Year() < minYear || t.Year() > maxYear {
		return Date{}, &DateError{Input: s, Want: "YYYY-MM-DD"}
	}
	return DateOf(t), nil
}

// MustDate is ParseDate for constants in tests and examples; it panics on a
// malformed literal, so it must never see user input.
func MustDate(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

// IsZero reports whether d is unset.
func (d Date) IsZero() bool { return !d.set }

// Days returns the number of days since 1970-01-01.
func (d Date) Days() int64 { return d.days }

// Check returns a *DateError (ErrBadDate) when d is set and outside the
// supported years, 1000 to 9999; nil otherwise. ParseDate never returns
// such a date, but DateFromDays takes any day number: whatever takes a
// Date from a caller checks it, since a date out of range would not
// survive the index's float64 fields nor parse back from a pack.
func (d Date) Check() error {
	if d.set && (d.days < minDays || d.days > maxDays) {
		return &DateError{Input: fmt.Sprintf("day %d", d.days), Want: "a day number in [" + fmt.Sprint(minDays) + ", " + fmt.Sprint(maxDays) + "]"}
	}
	return nil
}

// CheckInstant returns a *DateError (ErrBadDate) when t is set and its UTC
// year is outside 1000 to 9999; nil otherwise (the zero time is unset).
func CheckInstant(t time.Time) error {
	if y := t.UTC().Year(); !t.IsZero() && (y < minYear || y > maxYear) {
		return &DateError{Input: t.UTC().Format(time.RFC3339), Want: "an instant"}
	}
	return nil
}

// Start returns midnight UTC at the start of d. A date outside the
// supported years (Check) starts on the day just past the range's end it
// lies beyond, 0999-12-31 or 10000-01-01: its seconds would overflow, and
// a wrapped instant would name a day inside the range.
func (d Date) Start() time.Time {
	return time.Unix(min(max(d.days, minDays-1), maxDays+1)*86400, 0).UTC()
}

// String writes d as YYYY-MM-DD, or "" when unset.
func (d Date) String() string {
	if !d.set {
		return ""
	}
	return d.Start().Format(time.DateOnly)
}

// Before reports whether d is strictly before e. Both must be set.
func (d Date) Before(e Date) bool { return d.days < e.days }

// ParseInstant reads an RFC 3339 timestamp or a YYYY-MM-DD date (midnight
// UTC). The result is in UTC, truncated to whole seconds so that it survives a
// round trip through the index and the rendered pack unchanged.
func ParseInstant(s string) (time.Time, error) {
	want := "RFC 3339 (2006-01-02T15:04:05Z) or YYYY-MM-DD"
	if len(s) == len(time.DateOnly) {
		d, err := ParseDate(s)
		if err != nil {
			return time.Time{}, &DateError{Input: s, Want: want}
		}
		return d.Start(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.UTC().Year() < minYear || t.UTC().Year() > maxYear {
		return time.Time{}, &DateError{Input: s, Want: want}
	}
	return t.UTC().Truncate(time.Second), nil
}

// FormatInstant writes t in the one form evpack renders: RFC 3339 in UTC with
// whole seconds, or "" for the zero time.
func FormatInstant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// Interval is a validity window [From, To): From is the first day a version is
// in force, To the first day it no longer is. An unset end is open.
type Interval struct {
	From Date
	To   Date
}

// Validate reports ErrBadDate (a *DateError) when an end is outside the
// supported years (Date.Check), and ErrBadInterval when both ends are set
// and To <= From.
func (iv Interval) Validate() error {
	if err := iv.From.Check(); err != nil {
		return fmt.Errorf("valid_from: %w", err)
	}
	if err := iv.To.Check(); err != nil {
		return fmt.Errorf("valid_to: %w", err)
	}
	if iv.From.set && iv.To.set && iv.To.days <= iv.From.days {
		return fmt.Errorf("%w: valid_to %s is not after valid_from %s", ErrBadInterval, iv.To, iv.From)
	}
	return nil
}

// Contains reports whether d lies in [From, To).
func (iv Interval) Contains(d Date) bool {
	if iv.From.set && d.days < iv.From.days {
		return false
	}
	if iv.To.set && d.days >= iv.To.days {
		return false
	}
	return true
}

// String writes the interval as "[from, to)" with "…" for an open end.
func (iv Interval) String() string {
	f, t := iv.From.String(), iv.To.String()
	if f == "" {
		f = "…"
	}
	if t == "" {
		t = "…"
	}
	return "[" + f + ", " + t + ")"
}

// RetrievedAtField is the anchor field name used when a connector declares
// none: the chunk is dated by when evpack's source fetched it.
const RetrievedAtField = "retrieved_at"

// Anchor is the instant from which a chunk is citable, and the name of the
// field that supplied it.
type Anchor struct {
	At    time.Time // UTC, whole seconds; zero when nothing dates the chunk
	Field string    // e.g. "acceptance_datetime", "realtime_start", RetrievedAtField
}

// ResolveAnchor applies the conservative fallback: when the connector's
// declared anchor field is empty or has no value, the retrieval time anchors
// the chunk. That can lose recall (the text may have existed earlier) but it
// can never make a chunk citable before evpack could have seen it.
func ResolveAnchor(field string, value, retrieved time.Time) Anchor {
	if strings.TrimSpace(field) != "" && !value.IsZero() {
		return Anchor{At: value.UTC().Truncate(time.Second), Field: field}
	}
	return Anchor{At: retrieved.UTC().Truncate(time.Second), Field: RetrievedAtField}
}

// Day returns the UTC day of the anchor.
func (a Anchor) Day() Date { return DateOf(a.At) }

// Eligible reports whether a chunk anchored at a with validity iv may be cited
// as of day d. An undated chunk (zero anchor) is never eligible.
func Eligible(a Anchor, iv Interval, d Date) bool {
	if a.At.IsZero() || d.IsZero() {
		return false
	}
	return a.Day().days <= d.days && iv.Contains(d)
}
