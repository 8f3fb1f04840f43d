// Package fred reads FRED/ALFRED series with all their vintages.
//
// FRED's observation_date is the period a number describes, often months
// before anyone could see it. ALFRED's realtime_start is the day a value
// became known. This connector anchors every chunk at realtime_start and never
// at observation_date: a value for March published in May is not citable as
// of April. A revised value is a new version of the same observation, valid
// from its own realtime_start.
//
// A vintage with a realtime_end is valid until the day after it; when the
// vintage that replaced it (same observation date, realtime_start that day)
// is in the same response, the record names it in By, so that ingest records
// the end as a supersession.
//
// Input: one directory per series holding series.json (the fred/series
// response) and observations.json (fred/series/observations requested with
// all vintages: realtime_start=1776-07-04, realtime_end=9999-12-31).
package fred

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// AnchorField is the field that dates FRED chunks.
const AnchorField = "realtime_start"

// openEnd is ALFRED's "still current" realtime_end.
const openEnd = "9999-12-31"

// Connector reads series directories.
type Connector struct {
	dirs      []string
	retrieved time.Time
}

// New returns a connector over series directories, stamping retrieved as
// the retrieval time of every chunk.
func New(retrieved time.Time, dirs ...string) *Connector {
	return &Connector{dirs: dirs, retrieved: retrieved}
}

// Name implements connectors.Connector.
func (*Connector) Name() string { return "fred" }

// AnchorField implements connectors.Connector.
func (*Connector) AnchorField() string { return AnchorField }

// Series is the part of the fred/series response evpack uses.
type Series struct {
	Series []struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		Units     string `json:"units"`
		Frequency string `json:"frequency"`
	} `json:"seriess"`
}

// Observations is the fred/series/observations response.
type Observations struct {
	Observations []Observation `json:"observations"`
}

// Observation is one value of one vintage. Value is a decimal number, or
// "." where FRED has none (skipped); anything else is refused.
type Observation struct {
	RealtimeStart string `json:"realtime_start"`
	RealtimeEnd   string `json:"realtime_end"`
	Date          string `json:"date"`
	Value         string `json:"value"`
}

// Read implements connectors.Connector. A series.json or observations.json
// that is not a regular file (a FIFO) is an error naming it, never waited on.
func (c *Connector) Read(ctx context.Context) ([]connectors.Record, error) {
	var out []connectors.Record
	for _, dir := range c.dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sraw, err := fsutil.ReadRegular(filepath.Join(dir, "series.json"))
		if err != nil {
			return nil, fmt.Errorf("fred: %w", err)
		}
		oraw, err := fsutil.ReadRegular(filepath.Join(dir, "observations.json"))
		if err != nil {
			return nil, fmt.Errorf("fred: %w", err)
		}
		recs, err := Parse(filepath.Join(dir, "series.json"), sraw, filepath.Join(dir, "observations.json"), oraw, c.retrieved)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// Parse turns one series' JSON into records. It is the fuzzed entry point:
// any input gives records or an error naming the file and position, never a
// panic.
func Parse(seriesPath string, seriesJSON []byte, obsPath string, obsJSON []byte, retrieved time.Time) ([]connectors.Record, error) {
	var s Series
	if err := json.Unmarshal(seriesJSON, &s); err != nil {
		return nil, connectors.SyntaxError(seriesPath, seriesJSON, err)
	}
	if len(s.Series) != 1 || strings.TrimSpace(s.Series[0].ID) == "" {
		return nil, &evidence.ChunkError{Where: seriesPath, Err: fmt.Errorf("%w: want exactly one series with an id", connectors.ErrField)}
	}
	meta := s.Series[0]
	var o Observations
	if err := json.Unmarshal(obsJSON, &o); err != nil {
		return nil, connectors.SyntaxError(obsPath, obsJSON, err)
	}
	type vintage struct{ date, start asof.Date }
	// The chunk of each vintage read, so that an ended vintage can name the
	// one that replaced it; looked up only, never ranged over.
	ids := map[vintage]string{}
	var out []connectors.Record
	var dates []asof.Date // observation date of each record of out
	for i, ob := range o.Observations {
		where := fmt.Sprintf("%s: observations[%d]", obsPath, i)
		if ob.Value == "." { // FRED's missing value: nothing to cite
			continue
		}
		// A value is a decimal number: an empty or non-numeric one would be a
		// citable chunk with no number, superseding the vintage before it.
		if x, err := strconv.ParseFloat(ob.Value, 64); err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, connectors.FieldError(where, "", "value", fmt.Errorf("%q is not a number (nor \".\", missing)", ob.Value))
		}
		date, err := asof.ParseDate(ob.Date)
		if err != nil {
			return nil, connectors.FieldError(where, "", "date", err)
		}
		start, err := asof.ParseDate(ob.RealtimeStart)
		if err != nil {
			return nil, connectors.FieldError(where, "", "realtime_start", err)
		}
		valid := asof.Interval{From: start}
		if ob.RealtimeEnd != openEnd {
			end, err := asof.ParseDate(ob.RealtimeEnd)
			if err != nil {
				return nil, connectors.FieldError(where, "", "realtime_end", err)
			}
			// realtime_end is the last day the value was current: inclusive.
			valid.To = asof.DateFromDays(end.Days() + 1)
		}
		if err := valid.Validate(); err != nil {
			return nil, connectors.FieldError(where, "", "realtime_end", err)
		}
		id := fmt.Sprintf("fred/%s/%s@%s", meta.ID, date, start)
		ids[vintage{date, start}] = id
		text := fmt.Sprintf("%s (%s), observation for %s: %s %s. Vintage published %s.",
			meta.Title, meta.ID, date, ob.Value, meta.Units, start)
		dates = append(dates, date)
		out = append(out, connectors.Record{Where: where, Chunk: evidence.Chunk{
			ID: id, DocID: "fred/" + meta.ID, Version: start.String(), Text: text,
			SourceURL: "https://alfred.stlouisfed.org/series?seid=" + url.QueryEscape(meta.ID),
			Connector: "fred", RetrievedAt: retrieved,
			Anchor: asof.ResolveAnchor(AnchorField, start.Start(), retrieved),
			Valid:  valid,
			Meta: map[string]string{"series": meta.ID, "observation_date": date.String(),
				"frequency": meta.Frequency},
		}})
	}
	// The next vintage starts the day this one ended; a vintage the response
	// lacks (or one whose value is missing) is no chunk to name.
	for i := range out {
		if end := out[i].Chunk.Valid.To; !end.IsZero() {
			out[i].By = ids[vintage{dates[i], end}]
		}
	}
	return out, nil
}
