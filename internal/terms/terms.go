// Package terms is the one word splitter shared by the arithmetic reranker and
// the corpus statistics it reads: lower case, letters and digits only, English
// stop words removed, Porter-stemmed. Changing it changes rankings, so its
// identity (Version) is part of every pack fingerprint that uses it.
package terms

import (
	"strings"
	"unicode"

	porter "github.com/blevesearch/go-porterstemmer"
)

// Version names this tokenizer in fingerprints.
const Version = "terms/1"

// Split returns the stemmed non-stop terms of s in text order; a term's
// position is its index.
func Split(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if stop[w] {
			continue
		}
		out = append(out, porter.StemString(w))
	}
	return out
}

// Distinct returns the distinct terms of ts in first-seen order.
func Distinct(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
	before being below between both but by can could did do does doing down during each few for from further had
	has have having he her here hers herself him himself his how i if in into is it its itself just me more most my
	myself no nor not of off on once only or other our ours ourselves out over own same she should so some such than
	that the their theirs them themselves then there these they this those through to too under until up very was we
	were what when where which while who whom why will with would you your yours yourself yourselves s t`) {
		m[w] = true
	}
	return m
}()
