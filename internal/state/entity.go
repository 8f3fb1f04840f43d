package state

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// entityNamesOf returns the names chunk c declares for its entity and the
// filter (key=value) under which they apply (connectors.MetaEntityKey and
// MetaEntityNames), or nil.
func entityNamesOf(c *evidence.Chunk) (filter string, names []string) {
	key := c.Meta[connectors.MetaEntityKey]
	value, ok := c.Meta[key]
	if key == "" || !ok {
		return "", nil
	}
	for _, n := range strings.Split(c.Meta[connectors.MetaEntityNames], "|") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return key + "=" + value, names
}

// entityName is a company name and the generation that first recorded it.
type entityName struct {
	name string
	gen  int64
}

// entityKey keys an entity's names per tenant and filter (key=value): a
// request sees the names its scope's chunks gave, nothing another tenant
// wrote.
func entityKey(tenant, filter string) string { return tenant + "\x00" + filter }

// addEntityNames records the names c declares under its tenant and entity
// filter, with the generation gen that committed c.
func (s *State) addEntityNames(c *evidence.Chunk, gen int64) {
	filter, declared := entityNamesOf(c)
	if len(declared) == 0 {
		return
	}
	key := entityKey(c.Tenant, filter)
	// A copy: the slice may be shared with the state this one extends,
	// which queries still read.
	names := slices.Clone(s.Entities[key])
	for _, n := range declared {
		if !slices.ContainsFunc(names, func(e entityName) bool { return e.name == n }) {
			names = append(names, entityName{name: n, gen: gen})
		}
	}
	s.Entities[key] = names
}

// entityNamesIn returns the names declared for the entity of filter
// (key=value) known to scope sc at its generation, longest first, ties in
// byte order.
func (sc Scope) entityNamesIn(filter string) []string {
	var out []string
	for _, tenant := range sc.Names {
		for _, e := range sc.State.Entities[entityKey(tenant, filter)] {
			if e.gen <= sc.Gen && !slices.Contains(out, e.name) {
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

// RankingText removes from question the names declared for any entity a
// filter restricts to, and says what it removed.
func (sc Scope) RankingText(question string, filters []evidence.Filter) (string, []string) {
	var steps []string
	for _, f := range filters {
		for _, name := range sc.entityNamesIn(f.Key + "=" + f.Value) {
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
