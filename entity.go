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

// addEntityNames records c's names under its EntityFilterKey value.
func (s *state) addEntityNames(c *evidence.Chunk) {
	v, ok := c.Meta[EntityFilterKey]
	if !ok {
		return
	}
	// A copy: the slice may be shared with the state this one extends,
	// which queries still read.
	names := slices.Clone(s.entities[v])
	for _, n := range entityNames(c) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	s.entities[v] = names
	slices.SortFunc(names, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}

// rankingText removes the names of any company a filter restricts to from
// question, and says what it removed.
func (s *state) rankingText(question string, filters []evidence.Filter) (string, []string) {
	var steps []string
	for _, f := range filters {
		if f.Key != EntityFilterKey {
			continue
		}
		for _, name := range s.entities[f.Value] {
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
