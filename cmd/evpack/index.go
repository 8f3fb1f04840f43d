package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func cmdIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ingest", stderr)
	dir := fs.String("index", "", "index directory (created if absent)")
	conn := fs.String("connector", "", "jsonl or statute")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(paths) == 0 {
		return usageErr("need --index DIR and at least one PATH")
	}
	var c connectors.Connector
	switch *conn {
	case "jsonl":
		c = connectors.NewJSONL(paths...)
	case "statute":
		c = connectors.NewStatute(paths...)
	default:
		return usageErr("--connector %q: want jsonl or statute", *conn)
	}
	eng, err := evpack.Open(*dir, evpack.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := eng.Ingest(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "read %d records: %d added, %d unchanged, %d flagged; generation %d\n",
		rep.Read, rep.Added, rep.Unchanged, len(rep.Flagged), rep.Generation)
	for _, f := range rep.Flagged {
		fmt.Fprintf(stdout, "flagged %s: %s\n", f.ChunkID, f.Reason)
	}
	return nil
}

func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query", stderr)
	dir := fs.String("index", "", "index directory")
	asOf := fs.String("as-of", "", "the day the answer is as of, YYYY-MM-DD")
	tenant := fs.String("tenant", "", "tenant whose evidence may be cited")
	k := fs.Int("k", 0, "citations (default 10)")
	format := fs.String("format", "text", "json (the canonical bytes) or text")
	var filters multiFlag
	fs.Var(&filters, "filter", "KEY=VALUE metadata restriction (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) == 0 {
		return usageErr("need --index DIR, --as-of DATE and a QUESTION")
	}
	day, err := asof.ParseDate(*asOf)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--as-of: %w", err)}
	}
	req := evpack.Request{Question: strings.Join(pos, " "), AsOf: day, Tenant: *tenant, K: *k}
	for _, f := range filters {
		key, val, ok := strings.Cut(f, "=")
		if !ok || key == "" {
			return usageErr("--filter %q: want KEY=VALUE", f)
		}
		if req.Filters == nil {
			req.Filters = map[string]string{}
		}
		req.Filters[key] = val
	}
	if *format != "json" && *format != "text" {
		return usageErr("--format %q: want json or text", *format)
	}
	eng, err := openExisting(*dir)
	if err != nil {
		return err
	}
	defer eng.Close()
	p, err := eng.Query(ctx, req)
	if err != nil {
		return err
	}
	if *format == "json" {
		_, err = stdout.Write(p.Bytes())
		return err
	}
	_, err = io.WriteString(stdout, p.Text())
	return err
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	dir := fs.String("index", "", "index directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 1 {
		return usageErr("need --index DIR and one PACK.json")
	}
	raw, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	eng, err := openExisting(*dir)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := eng.Verify(ctx, raw)
	if err != nil {
		return err
	}
	if rep.OK() {
		fmt.Fprintf(stdout, "ok: %s replays byte-identically\n", rep.Hash)
		return nil
	}
	fmt.Fprintf(stdout, "FAILED: %s (replay gives %s)\n", rep.Hash, rep.ReplayHash)
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "- %s\n", p)
	}
	return &exitError{code: 1, err: fmt.Errorf("pack %s does not verify: %d problems", pos[0], len(rep.Problems))}
}

// openExisting opens an index that must already exist.
func openExisting(dir string) (*evpack.Engine, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--index %s: %w", dir, err)
	}
	return evpack.Open(dir, evpack.Options{})
}
