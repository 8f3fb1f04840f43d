// Package terms is the one word splitter shared by the arithmetic reranker and
// the corpus statistics it reads: lower case, letters and digits only, English
// stop words removed, Porter-stemmed. Changing it changes rankings, so its
// identity (Version) is part of every pack fingerprint that uses it.
package terms

import (
	"slices"
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
	words(s, func(w string) {
		if t, ok := term(w); ok {
			out = append(out, t)
		}
	})
	return out
}

// Splitter splits texts exactly as Split does, remembering what each word
// it met became, so that a word met again is neither lowercased nor stemmed
// again (ingest splits every chunk of a batch, and stemming was most of
// the cost). Not safe for concurrent use; the zero value is ready.
type Splitter struct {
	memo    map[string]word
	scratch []string
}

// word is what Splitter remembers of a word: its term, or that it is a
// stop word.
type word struct {
	term string
	stop bool
}

// Split returns Split(s). The slice is the caller's; its strings may be
// shared with earlier results.
func (sp *Splitter) Split(s string) []string {
	if sp.memo == nil {
		sp.memo = map[string]word{}
	}
	out := sp.scratch[:0]
	words(s, func(w string) {
		got, ok := sp.memo[w]
		if !ok {
			got.term, ok = term(w)
			got.stop = !ok
			// A copy: the key must not keep the whole text alive.
			sp.memo[strings.Clone(w)] = got
		}
		if !got.stop {
			out = append(out, got.term)
		}
	})
	sp.scratch = out
	if len(out) == 0 {
		return nil // as Split: no terms, no slice
	}
	return slices.Clone(out) // exact length: the state keeps it
}

// words calls f with each maximal run of letters and digits in s, in order
// (strings.FieldsFunc's fields, without the slice of them).
func words(s string, f func(w string)) {
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		f(s[start:])
	}
}

// term returns the term of word w, or false for a stop word.
func term(w string) (string, bool) {
	w = strings.ToLower(w)
	if stop[w] {
		return "", false
	}
	return porter.StemString(w), true
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
