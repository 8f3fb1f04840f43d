package evpack

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/evpack/evpack/evidence"
)

// EntityFilterKey is the metadata key whose filter names one company. When a
// request filters on it, the company's names (the "company" and "ticker"
// metadata of its chunks) are removed from the text used for ranking: within
// one company's filings its name is in every boilerplate paragraph and says
// nothing about which passage answers the question.
const EntityFilterKey = "cik"

var corporateSuffix = regexp.MustCompile(`(?i)[,\s]+(inc\.?|incorporated|corp\.?|corporation|co\.?|company|ltd\.?|limited|plc|llc|l\.p\.|n\.v\.|s\.a\.|ag|holdings?)$`)

// entityNames returns the names under which c's company may appear in a
// question, longest first.
func entityNames(c *evidence.Chunk) []string {
	var names []string
	if n := strings.TrimSpace(c.Meta["company"]); n != "" {
		names = append(names, n)
		if short := strings.TrimSpace(corporateSuffix.ReplaceAllString(n, "")); short != "" && short != n {
			names = append(names, short)
		}
	}
	if t := strings.TrimSpace(c.Meta["ticker"]); t != "" {
		names = append(names, t)
	}
	return names
}

// entityName is a company name and the generation that first recorded it.
type entityName struct {
	name string
	gen  int64
}

// entityKey keys a company's names per tenant: a request sees the names its
// scope's chunks gave, nothing another tenant wrote.
func entityKey(tenant, value string) string { return tenant + "\x00" + value }

// addEntityNames records c's names under its tenant and EntityFilterKey
// value, with the generation gen that committed c.
func (s *state) addEntityNames(c *evidence.Chunk, gen int64) {
	v, ok := c.Meta[EntityFilterKey]
	if !ok {
		return
	}
	key := entityKey(c.Tenant, v)
	// A copy: the slice may be shared with the state this one extends,
	// which queries still read.
	names := slices.Clone(s.entities[key])
	for _, n := range entityNames(c) {
		if !slices.ContainsFunc(names, func(e entityName) bool { return e.name == n }) {
			names = append(names, entityName{name: n, gen: gen})
		}
	}
	s.entities[key] = names
}

// entityNamesIn returns the names of company value known to scope sc at its
// generation, longest first, ties in byte order.
func (sc scope) entityNamesIn(value string) []string {
	var out []string
	for _, tenant := range sc.names {
		for _, e := range sc.st.entities[entityKey(tenant, value)] {
			if e.gen <= sc.gen && !slices.Contains(out, e.name) {
				out = append(out, e.name)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return out
}

// rankingText removes the names of any company a filter restricts to from
// question, and says what it removed.
func (sc scope) rankingText(question string, filters []evidence.Filter) (string, []string) {
	var steps []string
	for _, f := range filters {
		if f.Key != EntityFilterKey {
			continue
		}
		for _, name := range sc.entityNamesIn(f.Value) {
			re := regexp.MustCompile(`(?i)(^|[^\pL\pN])` + regexp.QuoteMeta(name) + `(?:'s|’s)?($|[^\pL\pN])`)
			if !re.MatchString(question) {
				continue
			}
			question = re.ReplaceAllString(question, "$1 $2")
			steps = append(steps, fmt.Sprintf("ranking text: removed %q (filter %s=%s)", name, f.Key, f.Value))
		}
	}
	return strings.Join(strings.Fields(question), " "), steps
}
