package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/files"
	"github.com/evpack/evpack/connectors/fred"
)

func cmdIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ingest", stderr)
	dir := fs.String("index", "", "index directory (created if absent)")
	conn := fs.String("connector", "", "jsonl, statute, edgar, fred or files")
	retrievedAt := fs.String("retrieved-at", "", "retrieval time stamped on edgar and fred chunks (RFC 3339; default now)")
	dense := denseFlags(fs)
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(paths) == 0 {
		return usageErr("need --index DIR and at least one PATH")
	}
	retrieved := time.Now().UTC().Truncate(time.Second)
	if *retrievedAt != "" {
		if retrieved, err = asof.ParseInstant(*retrievedAt); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--retrieved-at: %w", err)}
		}
	}
	var c connectors.Connector
	switch *conn {
	case "jsonl":
		c = connectors.NewJSONL(paths...)
	case "statute":
		c = connectors.NewStatute(paths...)
	case "fred":
		c = fred.New(retrieved, paths...)
	case "edgar", "files":
		if len(paths) != 1 {
			return usageErr("--connector %s takes one directory", *conn)
		}
		if *conn == "edgar" {
			c = edgar.New(paths[0], retrieved)
		} else {
			c = files.New(paths[0])
		}
	default:
		return usageErr("--connector %q: want jsonl, statute, edgar, fred or files", *conn)
	}
	opts, err := dense()
	if err != nil {
		return err
	}
	eng, err := evpack.Open(*dir, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	var bar *progressbar.ProgressBar
	rep, err := eng.IngestWith(ctx, c, evpack.IngestOptions{Progress: func(done, total int) {
		if total < 1000 { // a bar only on long runs
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("ingest"),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
		}
		bar.Set(done)
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "read %d records: %d added (%d documents, %d versions), %d unchanged, %d flagged; generation %d\n",
		rep.Read, rep.Added, rep.Documents, rep.Versions, rep.Unchanged, len(rep.Flagged), rep.Generation)
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
	dense := rerankerFlag(fs, denseFlags(fs))
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
	eng, err := openExisting(*dir, dense)
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
	dense := rerankerFlag(fs, denseFlags(fs))
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
	eng, err := openExisting(*dir, dense)
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

// openExisting opens an index that must already exist, with the options
// the dense flags name.
func openExisting(dir string, dense func() (evpack.Options, error)) (*evpack.Engine, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--index %s: %w", dir, err)
	}
	opts, err := dense()
	if err != nil {
		return nil, err
	}
	return evpack.Open(dir, opts)
}

// rerankerFlag adds --reranker to fs and sets it in the options opts makes.
// A pack verifies only with the reranker that ranked it.
func rerankerFlag(fs *flag.FlagSet, opts func() (evpack.Options, error)) func() (evpack.Options, error) {
	rr := fs.String("reranker", "arithmetic", "arithmetic, none, smoothed, learned[:MODEL] or cross-encoder:MODEL_DIR (verify needs the one that ranked the pack)")
	return func() (evpack.Options, error) {
		o, err := opts()
		if err != nil {
			return o, err
		}
		if o.Reranker, err = rerankerNamed(*rr); err != nil {
			return o, err
		}
		return o, nil
	}
}
