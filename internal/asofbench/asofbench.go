// Package asofbench derives an as-of benchmark from ObliQA, which has no
// dates of its own. It gives a share of gold passages an amendment history
// (near-identical versions that differ in a figure, a year or a sentence),
// each version valid over an interval and published shortly before it enters
// into force, and asks each passage's question on a day inside one version's
// interval; the gold is that version.
//
// It then measures version-level recall@10 for four ways of handling time:
// current text only; every version, no date; every version, date applied
// after ranking; every version, date applied inside the index query (evpack).
// The generator is seeded: the same seed gives the same corpus and questions.
package asofbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/obliqa"
)

// Dates of the synthetic history.
var (
	firstInForce = asof.MustDate("2019-01-01")
	lastAsOf     = asof.MustDate("2025-12-31")
	retrieved    = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
)

// publishLead is how long before entering into force a version is published.
const publishLead = 30

// Version is one version of a passage.
type Version struct {
	ChunkID string
	Text    string
	Change  string // what changed from the previous version
	Valid   asof.Interval
	Anchor  asof.Anchor
}

// History is the versions of one passage, oldest first.
type History struct {
	PassageID string
	Versions  []Version
}

// Question asks an ObliQA question as of a day; Gold is the version in force.
type Question struct {
	ID        string
	Text      string
	AsOf      asof.Date
	Gold      string // chunk ID of the version in force on AsOf
	PassageID string
}

// Bench is a generated benchmark.
type Bench struct {
	Seed      uint64
	Histories []History
	Questions []Question
	passages  []eval.Passage // the corpus, empty passages left out
	versioned map[string]int // passage ID -> index in Histories
}

var (
	reNumber = regexp.MustCompile(`\b[0-9]+\b`)
	reYear   = regexp.MustCompile(`\b(?:19|20)[0-9]{2}\b`)
	addenda  = []string{
		"This requirement does not apply to an Exempt Person.",
		"The Regulator may extend this period by notice in writing.",
		"A Relevant Person must keep a record of its compliance with this Rule.",
		"This Rule applies only to Authorised Persons conducting Investment Business.",
	}
)

// Generate builds a benchmark of up to n histories from o with seed.
func Generate(o *eval.ObliQA, n int, seed uint64) *Bench {
	rng := rand.New(rand.NewPCG(seed, 0x61736f66))
	b := &Bench{Seed: seed, versioned: map[string]int{}}
	text := map[string]string{}
	for _, p := range o.Passages {
		if strings.TrimSpace(p.Text) != "" {
			b.passages = append(b.passages, p)
			text[p.ID] = p.Text
		}
	}
	order := rng.Perm(len(o.Questions))
	for _, qi := range order {
		if len(b.Histories) == n {
			break
		}
		q := o.Questions[qi]
		if len(q.Gold) == 0 {
			continue
		}
		pid := q.Gold[0]
		if _, done := b.versioned[pid]; done || text[pid] == "" {
			continue
		}
		h := history(rng, pid, text[pid])
		b.versioned[pid] = len(b.Histories)
		b.Histories = append(b.Histories, h)
		vi := rng.IntN(len(h.Versions))
		v := h.Versions[vi]
		to := lastAsOf.Days() + 1
		if !v.Valid.To.IsZero() {
			to = v.Valid.To.Days()
		}
		day := asof.DateFromDays(v.Valid.From.Days() + rng.Int64N(to-v.Valid.From.Days()))
		b.Questions = append(b.Questions, Question{ID: q.ID, Text: q.Text, AsOf: day, Gold: v.ChunkID, PassageID: pid})
	}
	return b
}

// history makes 2 to 4 versions, each one change away from the last.
func history(rng *rand.Rand, pid, text string) History {
	h := History{PassageID: pid}
	n := 2 + rng.IntN(3)
	from := firstInForce
	cur, change := text, "original"
	for i := 0; i < n; i++ {
		if i > 0 {
			cur, change = amend(rng, cur)
		}
		v := Version{ChunkID: fmt.Sprintf("%s@v%d", pid, i), Text: cur, Change: change, Valid: asof.Interval{From: from},
			Anchor: asof.Anchor{At: asof.DateFromDays(from.Days() - publishLead).Start(), Field: "published"}}
		if i < n-1 {
			// The next version enters into force 200 to 800 days later.
			next := asof.DateFromDays(from.Days() + 200 + rng.Int64N(600))
			v.Valid.To = next
			from = next
		}
		h.Versions = append(h.Versions, v)
	}
	return h
}

// amend changes one thing: a year, a figure, or a sentence.
func amend(rng *rand.Rand, text string) (string, string) {
	years := reYear.FindAllStringIndex(text, -1)
	nums := reNumber.FindAllStringIndex(text, -1)
	switch k := rng.IntN(3); {
	case k == 0 && len(years) > 0:
		loc := years[rng.IntN(len(years))]
		y, _ := strconv.Atoi(text[loc[0]:loc[1]])
		ny := strconv.Itoa(y + 1 + rng.IntN(3))
		return text[:loc[0]] + ny + text[loc[1]:], "year " + text[loc[0]:loc[1]] + " -> " + ny
	case k <= 1 && len(nums) > 0:
		loc := nums[rng.IntN(len(nums))]
		x, _ := strconv.Atoi(text[loc[0]:loc[1]])
		nx := strconv.Itoa(x + 1 + rng.IntN(9))
		return text[:loc[0]] + nx + text[loc[1]:], "figure " + text[loc[0]:loc[1]] + " -> " + nx
	default:
		add := addenda[rng.IntN(len(addenda))]
		return text + " " + add, "sentence added"
	}
}

// Digest names the generated corpus and questions, to check reproducibility.
func (b *Bench) Digest() string {
	h := blake3.New()
	for _, hist := range b.Histories {
		for _, v := range hist.Versions {
			fmt.Fprintf(h, "%s\t%s\t%s\t%s\t%s\n", v.ChunkID, v.Valid.From, v.Valid.To, asof.FormatInstant(v.Anchor.At), v.Text)
		}
	}
	for _, q := range b.Questions {
		fmt.Fprintf(h, "%s\t%s\t%s\n", q.ID, q.AsOf, q.Gold)
	}
	return fmt.Sprintf("blake3:%x", h.Sum(nil))
}

// corpus is which chunks an index holds and whether they carry dates.
type corpus int

const (
	currentOnly corpus = iota // the latest version of each passage, undated
	allUndated                // every version, no dates
	allDated                  // every version with its anchor and validity
)

func (b *Bench) records(c corpus) []connectors.Record {
	var recs []connectors.Record
	add := func(id, text string, v *Version) {
		ch := obliqaChunk(id, text)
		if v != nil && c == allDated {
			ch.Anchor, ch.Valid = v.Anchor, v.Valid
		}
		recs = append(recs, connectors.Record{Chunk: ch, Where: id})
	}
	for _, p := range b.passages {
		i, ok := b.versioned[p.ID]
		if !ok {
			base := Version{Anchor: asof.Anchor{At: asof.DateFromDays(firstInForce.Days() - publishLead).Start(), Field: "published"},
				Valid: asof.Interval{From: firstInForce}}
			add(p.ID, p.Text, &base)
			continue
		}
		vs := b.Histories[i].Versions
		if c == currentOnly {
			add(vs[len(vs)-1].ChunkID, vs[len(vs)-1].Text, nil)
			continue
		}
		for j := range vs {
			add(vs[j].ChunkID, vs[j].Text, &vs[j])
		}
	}
	return recs
}

func obliqaChunk(id, text string) evidence.Chunk {
	return evidence.Chunk{ID: id, DocID: id, Text: text, SourceURL: "obliqa-asof://" + id, Connector: "obliqa-asof",
		RetrievedAt: retrieved, Anchor: asof.Anchor{At: obliqa.Retrieved, Field: asof.RetrievedAtField}}
}

// eligible reports whether chunk id may be cited as of day.
func (b *Bench) eligible(id string, day asof.Date) bool {
	pid, _, ok := strings.Cut(id, "@v")
	if !ok {
		return day.Days() >= firstInForce.Days()
	}
	h := b.Histories[b.versioned[pid]]
	for _, v := range h.Versions {
		if v.ChunkID == id {
			return asof.Eligible(v.Anchor, v.Valid, day)
		}
	}
	return false
}

// Row is one configuration's result.
type Row struct {
	Config     string  `json:"config"`
	Recall     float64 `json:"version_recall@10"`
	PassageHit float64 `json:"passage_recall@10"` // any version of the right passage
	Ineligible int     `json:"cited_outside_eligibility"`
	Citations  int     `json:"citations"`
}

// Run measures the four configurations, in the order the issue lists them.
func (b *Bench) Run(ctx context.Context, progress func()) ([]Row, error) {
	type config struct {
		name      string
		corpus    corpus
		dated     bool // ask with the question's as-of day
		postCheck bool // drop ineligible citations after ranking
	}
	configs := []config{
		{"current text only", currentOnly, false, false},
		{"every version, no date", allUndated, false, false},
		{"every version, date applied after ranking", allUndated, false, true},
		{"every version, date inside the index query", allDated, true, false},
	}
	engines := map[corpus]*evpack.Engine{}
	defer func() {
		for _, c := range []corpus{currentOnly, allUndated, allDated} {
			if e := engines[c]; e != nil {
				e.Close()
			}
		}
	}()
	var rows []Row
	for _, cfg := range configs {
		eng := engines[cfg.corpus]
		if eng == nil {
			var err error
			if eng, err = evpack.OpenMemory(evpack.Options{}); err != nil {
				return nil, err
			}
			engines[cfg.corpus] = eng
			if _, err := eng.Ingest(ctx, connectors.Records(b.records(cfg.corpus)), evpack.IngestOptions{}); err != nil {
				return nil, err
			}
		}
		row := Row{Config: cfg.name}
		for _, q := range b.Questions {
			day := lastAsOf
			if cfg.dated {
				day = q.AsOf
			}
			p, err := eng.Query(ctx, evpack.Request{Question: q.Text, AsOf: day, K: 10})
			if err != nil {
				return nil, fmt.Errorf("question %s: %w", q.ID, err)
			}
			var ranked []string
			for _, c := range p.Citations {
				if cfg.postCheck && !b.eligible(c.ChunkID, q.AsOf) {
					continue
				}
				ranked = append(ranked, c.ChunkID)
			}
			for _, id := range ranked {
				row.Citations++
				if !b.eligible(id, q.AsOf) {
					row.Ineligible++
				}
			}
			row.Recall += eval.Score(ranked, []string{q.Gold}, 10).Recall
			if slices.ContainsFunc(ranked, func(id string) bool { return strings.HasPrefix(id, q.PassageID+"@v") }) {
				row.PassageHit++
			}
			if progress != nil {
				progress()
			}
		}
		if n := float64(len(b.Questions)); n > 0 {
			row.Recall /= n
			row.PassageHit /= n
		}
		rows = append(rows, row)
	}
	return rows, nil
}
