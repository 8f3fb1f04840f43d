package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/evpack/evpack"
)

// cmdDiff says what changed since a pack was made: it verifies the pack at
// its own generation and runs its request at the latest one
// (evpack.Engine.Diff). Exit 0 when the pack verifies, every citation is
// unchanged and nothing is new; 1 when something changed or the pack does
// not verify at its generation.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("diff", stderr)
	dir := fs.String("index", "", "index directory")
	format := fs.String("format", "text", "text (one line per citation) or json")
	dense := rerankerFlag(fs, denseFlags(fs))
	model := modelFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 1 {
		return usageErr("need --index DIR and one PACK.json")
	}
	if *format != "json" && *format != "text" {
		return usageErr("--format %q: want text or json", *format)
	}
	raw, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	eng, closeModel, err := openWithModel(*dir, dense, model)
	if err != nil {
		return err
	}
	defer closeModel()
	defer eng.Close()
	rep, err := eng.Diff(ctx, raw)
	if err != nil {
		return packErr(pos[0], err)
	}
	if *format == "json" {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return err
		}
	} else if _, err := io.WriteString(stdout, rep.String()); err != nil {
		return err
	}
	switch {
	case rep.Unchanged():
		return nil
	case !rep.Verify.OK():
		return &exitError{code: 1, err: fmt.Errorf("pack %s does not verify at its generation %d: %d problems", pos[0], rep.Generation, len(rep.Verify.Problems))}
	}
	changed := 0
	for _, c := range rep.Citations {
		if c.Status != evpack.DiffUnchanged {
			changed++
		}
	}
	return &exitError{code: 1, err: fmt.Errorf("pack %s: %d of %d citations changed%s and %d new since generation %d (latest %d)",
		pos[0], changed, len(rep.Citations), rep.CauseCounts(), len(rep.New), rep.Generation, rep.LatestGeneration)}
}
