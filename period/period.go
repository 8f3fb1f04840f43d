// Package period reads the period a question asks about ("FY2018", "fiscal
// 2022", "in 2019", "Q3 2021", "as of December 31, 2020") and the period a
// chunk declares in its metadata (EDGAR's fiscal year, FRED's observation
// date, a JSONL or files chunk's own "period").
//
// Everything here is deterministic: a question gives the same Period on every
// machine and every run, so a pack that used one replays. The parser's
// identity (Version) goes into the fingerprint of every pack that used it.
//
// Entry points: [Parse] (a question), [ParseCanonical] (an explicit request
// field, or a chunk's "period" metadata), [Period.NamedBy] (a chunk's
// metadata against an asked period).
package period

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Version names the parser and the matching rules. It changes whenever a
// question could parse differently or a chunk could match differently.
const Version = "period/1"

// ErrBadPeriod is returned for an explicit period that is not one of the
// canonical forms.
var ErrBadPeriod = errors.New("period: bad period")

// Kind says how precisely a period was named.
type Kind uint8

// The kinds, least precise first.
const (
	KindYear    Kind = iota + 1 // "in 2019": a calendar year
	KindFiscal                  // "FY2018", "fiscal 2022": a fiscal year
	KindQuarter                 // "Q3 2021", "Q2 of FY2023"
	KindDay                     // "as of December 31, 2020", "2020-12-31"
)

// Period is an asked-about or declared period. The zero value is no period.
type Period struct {
	Kind    Kind
	Year    int  // the calendar or fiscal year
	Quarter int  // 1 to 4 for KindQuarter
	Month   int  // 1 to 12 for KindDay
	Day     int  // 1 to 31 for KindDay
	Fiscal  bool // a fiscal year or quarter (KindFiscal always)
}

// IsZero reports whether p names no period.
func (p Period) IsZero() bool { return p.Kind == 0 }

// String returns p's canonical form: "2019", "FY2018", "2021-Q3",
// "FY2023-Q2" or "2020-12-31"; "" for the zero period.
func (p Period) String() string {
	fy := ""
	if p.Fiscal {
		fy = "FY"
	}
	switch p.Kind {
	case KindYear:
		return strconv.Itoa(p.Year)
	case KindFiscal:
		return "FY" + strconv.Itoa(p.Year)
	case KindQuarter:
		return fmt.Sprintf("%s%d-Q%d", fy, p.Year, p.Quarter)
	case KindDay:
		return fmt.Sprintf("%04d-%02d-%02d", p.Year, p.Month, p.Day)
	}
	return ""
}

var canonicalRE = regexp.MustCompile(`^(FY)?(\d{4})(?:-Q([1-4])|-(\d{2})-(\d{2}))?$`)

// ParseCanonical reads a period in one of the forms String writes ("2019",
// "FY2018", "2021-Q3", "FY2023-Q2", "2020-12-31"). Anything else, a day that
// does not exist included, is an error wrapping ErrBadPeriod.
func ParseCanonical(s string) (Period, error) {
	m := canonicalRE.FindStringSubmatch(s)
	if m == nil {
		return Period{}, fmt.Errorf("%w: %q: want YYYY, FYYYYY, YYYY-QN, FYYYYY-QN or YYYY-MM-DD", ErrBadPeriod, s)
	}
	year, _ := strconv.Atoi(m[2])
	p := Period{Year: year, Fiscal: m[1] != ""}
	switch {
	case m[3] != "":
		p.Kind, p.Quarter = KindQuarter, int(m[3][0]-'0')
	case m[4] != "":
		if p.Fiscal {
			return Period{}, fmt.Errorf("%w: %q: a day is not fiscal", ErrBadPeriod, s)
		}
		p.Kind = KindDay
		p.Month, _ = strconv.Atoi(m[4])
		p.Day, _ = strconv.Atoi(m[5])
		if !validDay(p.Year, p.Month, p.Day) {
			return Period{}, fmt.Errorf("%w: %q: no such day", ErrBadPeriod, s)
		}
	case p.Fiscal:
		p.Kind = KindFiscal
	default:
		p.Kind = KindYear
	}
	if p.Year < 1000 {
		return Period{}, fmt.Errorf("%w: %q: year before 1000", ErrBadPeriod, s)
	}
	return p, nil
}

func validDay(y, m, d int) bool {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return t.Year() == y && int(t.Month()) == m && t.Day() == d
}

// A year in a question: 1900 to 2099, as four digits.
const yearPat = `((?:19|20)\d\d)`

// fyYear also takes two digits ("FY22"), read as 2000 to 2049 or 1950 to 1999.
const fyYear = `'?((?:19|20)\d\d|\d\d)`

var months = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

const monthPat = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

var ordinals = map[string]int{"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}

// rule is one phrasing; read turns its submatches into a period (false when
// they name none, a 31 February say).
type rule struct {
	re   *regexp.Regexp
	read func(m []string) (Period, bool)
}

// The phrasings, each bounded by non-alphanumerics so that "2019" inside a
// longer number or word is never read. A bare year counts only after a word
// that points at a time ("in", "for", "as of", ...): "Regulations 2015" or
// "Resolution No. 10 of 2019" name a law, not the period asked about.
var rules = []rule{
	// Days: "December 31, 2020", "Dec. 31 2020", "1st July 2022", "2020-12-31".
	{re(monthPat + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+` + yearPat), func(m []string) (Period, bool) {
		return day(atoi(m[3]), months[strings.ToLower(m[1][:3])], atoi(m[2]))
	}},
	{re(`(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthPat + `,?\s+` + yearPat), func(m []string) (Period, bool) {
		return day(atoi(m[3]), months[strings.ToLower(m[2][:3])], atoi(m[1]))
	}},
	{re(yearPat + `-(\d\d)-(\d\d)`), func(m []string) (Period, bool) {
		return day(atoi(m[1]), atoi(m[2]), atoi(m[3]))
	}},
	// Quarters: "Q3 2021", "Q2 of FY2023", "Q2 FY23", "2021 Q1", "second
	// fiscal quarter of 2023", "third quarter of fiscal 2022".
	{re(`q([1-4])\s*(?:of\s+)?(fy\s*|fiscal\s+(?:year\s+)?)?` + fyYear), func(m []string) (Period, bool) {
		return quarter(m[3], atoi(m[1]), m[2] != "")
	}},
	{re(`(fy\s*)?` + yearPat + `\s*q([1-4])`), func(m []string) (Period, bool) {
		return quarter(m[2], atoi(m[3]), m[1] != "")
	}},
	{re(`(first|second|third|fourth|1st|2nd|3rd|4th)\s+(fiscal\s+)?quarter\s+(?:of\s+)?(?:the\s+)?(fy\s*|fiscal\s+(?:year\s+)?)?` + yearPat), func(m []string) (Period, bool) {
		return quarter(m[4], ordinals[strings.ToLower(m[1])], m[2] != "" || m[3] != "")
	}},
	// Fiscal years: "FY2018", "FY 2023", "FY22", "fiscal 2022", "fiscal year 2021".
	{re(`fy\s*` + fyYear), func(m []string) (Period, bool) { return fiscal(m[1]) }},
	{re(`fiscal\s+(?:year\s+)?` + yearPat), func(m []string) (Period, bool) { return fiscal(m[1]) }},
	// Years after a word that points at a time, and "July 2022".
	{re(`(?:in|during|for|as\s+of|from|since|by|between|and|to|through|until|year|end\s+of|year-end|calendar)\s+` + yearPat), func(m []string) (Period, bool) {
		return Period{Kind: KindYear, Year: atoi(m[1])}, true
	}},
	{re(monthPat + `,?\s+` + yearPat), func(m []string) (Period, bool) {
		return Period{Kind: KindYear, Year: atoi(m[2])}, true
	}},
}

// re compiles a case-insensitive phrasing bounded by word boundaries (zero
// width, so that "FY2021/FY2022" yields both).
func re(p string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b` + p + `\b`)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func day(y, m, d int) (Period, bool) {
	if !validDay(y, m, d) {
		return Period{}, false
	}
	return Period{Kind: KindDay, Year: y, Month: m, Day: d}, true
}

func fullYear(s string) int {
	n := atoi(s)
	if len(s) == 2 {
		if n < 50 {
			return 2000 + n
		}
		return 1900 + n
	}
	return n
}

func quarter(y string, q int, fiscal bool) (Period, bool) {
	return Period{Kind: KindQuarter, Year: fullYear(y), Quarter: q, Fiscal: fiscal}, q >= 1 && q <= 4
}

func fiscal(y string) (Period, bool) {
	return Period{Kind: KindFiscal, Year: fullYear(y), Fiscal: true}, true
}

// Parse returns the period question asks about, and false when it names
// none. When it names several ("from FY2021 to FY2022", "FY2023 vs FY2022"),
// the latest year wins: a filing reports its year and the years before it,
// so the latest year's filing holds them all. At the same year the most
// precise phrasing wins (a day, then a quarter, then a fiscal year, then a
// year), then the first in the question.
func Parse(question string) (Period, bool) {
	var found []Period
	for _, r := range rules {
		for _, m := range r.re.FindAllStringSubmatch(question, -1) {
			if p, ok := r.read(m); ok {
				found = append(found, p)
			}
		}
	}
	if len(found) == 0 {
		return Period{}, false
	}
	// Stable: at the same year and kind the rule and position order holds.
	slices.SortStableFunc(found, func(a, b Period) int {
		if a.Year != b.Year {
			return b.Year - a.Year
		}
		return int(b.Kind) - int(a.Kind)
	})
	return found[0], true
}

// MetaKeys are the metadata keys a chunk declares its period under:
// "period" (any canonical form, declared by a JSONL or files chunk),
// "fiscal_year" (EDGAR: the year of the filing's period of report;
// FinanceBench: the document's fiscal year) and "observation_date" (FRED).
// Statutes declare none.
var MetaKeys = []string{"period", "fiscal_year", "observation_date"}

// NamedBy reports whether a chunk with metadata meta declares p's year: one
// of MetaKeys holds the year, "FY" and the year, or either followed by "-"
// (a quarter or a day of it). Only years are compared: a quarter or a day
// asked about matches every chunk of its year, because the filing that
// reports a quarter or a day is chosen by its year. The lexical index runs
// the same rule as a clause (MetaTerms).
func (p Period) NamedBy(meta map[string]string) bool {
	if p.IsZero() {
		return false
	}
	y := strconv.Itoa(p.Year)
	for _, k := range MetaKeys {
		v, ok := meta[k]
		if !ok {
			continue
		}
		v = strings.TrimPrefix(v, "FY")
		if v == y || strings.HasPrefix(v, y+"-") {
			return true
		}
	}
	return false
}

// MetaTerms returns the metadata terms ("key=value", as the lexical index
// holds them) and term prefixes that declare year under one of MetaKeys, in
// a fixed order: NamedBy's rule as index clauses.
func MetaTerms(year int) (terms, prefixes []string) {
	y := strconv.Itoa(year)
	for _, k := range MetaKeys {
		terms = append(terms, k+"="+y, k+"=FY"+y)
		prefixes = append(prefixes, k+"="+y+"-", k+"=FY"+y+"-")
	}
	return terms, prefixes
}

// TextForms returns the words a text names year with: "2018" and "FY2018"
// (the caller analyzes them with its index's analyzer).
func TextForms(year int) []string {
	y := strconv.Itoa(year)
	return []string{y, "FY" + y}
}
