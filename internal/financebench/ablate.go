package financebench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/period"
)

// Bootstrap settings of the ledger: the project's (cmd/evpack eval ablate).
const (
	Resamples = 10000
	Seed      = 1
)

// Layer is one step of the ledger: a change to the winning configuration
// when the layer arrives (so a step that did not win is not kept under the
// next one).
type Layer struct {
	Name string
	Step func(o *evpack.Options, a *Ask)
	// Reference marks a layer compared with the winner but never made the
	// winner (the hard year filters: they cannot answer a question that
	// needs two years, and they read the year off the question by filter).
	Reference bool
}

// Layers are the year leg's ledger, in order. boost is the year boost's
// percent, depth the year list's.
func Layers(boost, depth int) []Layer {
	periods := func(o *evpack.Options) {
		o.QuestionPeriods = true
		if o.PeriodList == 0 {
			o.PeriodList = -1
		}
		if o.PeriodBoost == 0 {
			o.PeriodBoost = -1
		}
	}
	return []Layer{
		{Name: "none (no filter, names kept)", Step: func(o *evpack.Options, a *Ask) { o.KeepEntityNames = true }},
		{Name: "company filter (cik)", Step: func(o *evpack.Options, a *Ask) { a.CompanyFilter = true }},
		{Name: "+ name strip", Step: func(o *evpack.Options, a *Ask) { o.KeepEntityNames = false }},
		{Name: fmt.Sprintf("+ year boost %d%%", boost), Step: func(o *evpack.Options, a *Ask) { periods(o); o.PeriodBoost = boost }},
		{Name: fmt.Sprintf("+ year list %d deep", depth), Step: func(o *evpack.Options, a *Ask) { periods(o); o.PeriodList = depth }},
		{Name: "the year boost's other choice (with the list)", Step: func(o *evpack.Options, a *Ask) {
			periods(o)
			if o.PeriodBoost > 0 {
				o.PeriodBoost = -1
			} else {
				o.PeriodBoost = boost
			}
		}},
		{Name: "reference: hard filter on the parsed year", Reference: true, Step: func(o *evpack.Options, a *Ask) {
			o.QuestionPeriods, o.PeriodList, o.PeriodBoost, a.YearFilter = false, 0, 0, "parsed"
		}},
		{Name: "reference: hard filter on the gold year", Reference: true, Step: func(o *evpack.Options, a *Ask) {
			o.QuestionPeriods, o.PeriodList, o.PeriodBoost, a.YearFilter = false, 0, 0, "gold"
		}},
	}
}

// Row is one line of the ledger.
type Row struct {
	Layer     string  `json:"layer"`
	Recall    float64 `json:"recall@10"`
	MAP       float64 `json:"map@10"`
	WrongYear float64 `json:"wrong_year@10"`
	Against   string  `json:"against"`
	DRecall   string  `json:"delta_recall"`
	DMAP      string  `json:"delta_map"`
	DWrong    string  `json:"delta_wrong_year"`
	McNemar   string  `json:"mcnemar_hit@10"`
	Verdict   string  `json:"verdict"`
	Config    string  `json:"config"` // what the layer ran
	// The year list's layer is also judged against the hard filter on
	// the parsed year (the goal: beat it).
	VsHardYear string `json:"vs_hard_year,omitempty"`
}

// Ledger is the ablation's outcome.
type Ledger struct {
	Questions int
	Rows      []Row
	Winner    string
	Reports   []*Report // per layer, in Rows order
}

// ParsedYear is the year package period reads in a question.
func ParsedYear(q Question) (int, bool) {
	p, ok := period.Parse(q.Text)
	return p.Year, ok
}

// Ablate answers qs (each with gold) through views of eng, one per layer,
// and judges each layer against the winner when it arrives: paired
// bootstrap of recall@10 and AP@10 (and of the wrong-year indicator, for
// the record), McNemar on hit@10; a layer wins if one of recall and MAP won
// and the other did not lose (cmd/evpack eval ablate's rule).
func Ablate(ctx context.Context, eng *evpack.Engine, qs []Question, layers []Layer, progress io.Writer) (*Ledger, error) {
	l := &Ledger{Questions: len(qs)}
	var best *Report
	bestName := ""
	var bestOpts evpack.Options
	var bestAsk Ask
	var hard *Report
	for _, layer := range layers {
		o, a := bestOpts, bestAsk
		layer.Step(&o, &a)
		v, err := eng.View(o)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", layer.Name, err)
		}
		rep, err := Evaluate(ctx, v, qs, a, ParsedYear)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", layer.Name, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "%s: recall@10 %.4f map@10 %.4f\n", layer.Name, rep.Summary.Recall, rep.Summary.MAP)
		}
		row := Row{Layer: layer.Name, Recall: rep.Summary.Recall, MAP: rep.Summary.MAP, WrongYear: rep.WrongYearShare(), Verdict: "baseline"}
		if best != nil {
			verdict, err := judge(best, rep, &row)
			if err != nil {
				return nil, err
			}
			row.Against, row.Verdict = bestName, string(verdict)
			if layer.Reference {
				row.Verdict = "reference (" + row.Verdict + ")"
			}
		}
		if !layer.Reference && (best == nil || row.Verdict == string(eval.Won)) {
			best, bestName, bestOpts, bestAsk = rep, layer.Name, o, a
		}
		row.Config = describe(o, a)
		if a.YearFilter == "parsed" {
			hard = rep
		}
		l.Rows = append(l.Rows, row)
		l.Reports = append(l.Reports, rep)
	}
	// The winner against the hard year filter.
	if hard != nil && best != nil {
		var row Row
		verdict, err := judge(hard, best, &row)
		if err != nil {
			return nil, err
		}
		for i := range l.Rows {
			if l.Rows[i].Layer == bestName {
				l.Rows[i].VsHardYear = fmt.Sprintf("Δrecall %s, Δmap %s, mcnemar %s: %s", row.DRecall, row.DMAP, row.McNemar, verdict)
			}
		}
	}
	l.Winner = bestName
	return l, nil
}

// describe says what a layer ran.
func describe(o evpack.Options, a Ask) string {
	var parts []string
	if a.CompanyFilter {
		parts = append(parts, "filter cik")
	}
	if a.YearFilter != "" {
		parts = append(parts, "filter fiscal_year ("+a.YearFilter+")")
	}
	if !o.KeepEntityNames {
		parts = append(parts, "names stripped")
	}
	if o.QuestionPeriods {
		if o.PeriodBoost > 0 {
			parts = append(parts, fmt.Sprintf("boost %d%%", o.PeriodBoost))
		}
		if o.PeriodList > 0 {
			parts = append(parts, fmt.Sprintf("list %d", o.PeriodList))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// judge compares rep with the winner best and fills row's deltas.
func judge(best, rep *Report, row *Row) (eval.Verdict, error) {
	var ra, rb, ma, mb, wa, wb []float64
	var ha, hb []bool
	for i := range best.Per {
		ra, rb = append(ra, best.Per[i].Recall), append(rb, rep.Per[i].Recall)
		ma, mb = append(ma, best.Per[i].AP), append(mb, rep.Per[i].AP)
		wa, wb = append(wa, b2f(best.WrongYear[i])), append(wb, b2f(rep.WrongYear[i]))
		ha, hb = append(ha, best.Per[i].Hit), append(hb, rep.Per[i].Hit)
	}
	br, err := eval.Bootstrap(ra, rb, Resamples, Seed)
	if err != nil {
		return "", err
	}
	bm, err := eval.Bootstrap(ma, mb, Resamples, Seed)
	if err != nil {
		return "", err
	}
	bw, err := eval.Bootstrap(wa, wb, Resamples, Seed)
	if err != nil {
		return "", err
	}
	mc, err := eval.McNemar(ha, hb)
	if err != nil {
		return "", err
	}
	iv := func(b eval.BootstrapResult) string { return fmt.Sprintf("%+.4f [%+.4f, %+.4f]", b.Diff, b.Lo, b.Hi) }
	row.DRecall, row.DMAP, row.DWrong = iv(br), iv(bm), iv(bw)
	row.McNemar = fmt.Sprintf("%d/%d, p=%.2g", mc.OnlyA, mc.OnlyB, mc.P)
	switch {
	case (br.Verdict == eval.Won && bm.Verdict != eval.Lost) || (bm.Verdict == eval.Won && br.Verdict != eval.Lost):
		return eval.Won, nil
	case br.Verdict == eval.Lost || bm.Verdict == eval.Lost:
		return eval.Lost, nil
	}
	return eval.Tied, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Write prints the ledger as a table.
func (l *Ledger) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "layer\tran\trecall@10\tmap@10\twrong year@10\tΔrecall [95%]\tΔmap [95%]\tΔwrong year [95%]\tmcnemar hit@10\tverdict\tagainst")
	for _, r := range l.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Layer, r.Config, r.Recall, r.MAP, r.WrongYear, r.DRecall, r.DMAP, r.DWrong, r.McNemar, r.Verdict, r.Against)
	}
	for i, r := range l.Rows {
		rep := l.Reports[i]
		hits := 0
		for _, p := range rep.Per {
			if p.Hit {
				hits++
			}
		}
		fmt.Fprintf(tw, "%s: the right filing in the top 10 for %.3f of the questions, an evidence page for %.3f\n", r.Layer, rep.FilingHitShare(), float64(hits)/float64(len(rep.Per)))
	}
	fmt.Fprintf(tw, "winner: %s (paired bootstrap over %d questions, %d resamples, seed %d)\n", l.Winner, l.Questions, Resamples, Seed)
	for _, r := range l.Rows {
		if r.VsHardYear != "" {
			fmt.Fprintf(tw, "winner against the hard filter on the parsed year: %s\n", r.VsHardYear)
		}
	}
	return tw.Flush()
}
