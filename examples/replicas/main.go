// Replicas: one writer and two replicas of an index, sharing its history
// through a PostgreSQL log. The writer leads the log (each commit appended
// under its lease, then applied); each replica follows it into a directory
// of its own and answers with the writer's pack bytes; a replica that must
// read the writer's latest commit asks for it (Request.MinGeneration).
//
//	go run ./examples/replicas -dsn postgres://evpack@127.0.0.1:54329/evpack   # see README.md for a server
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL DSN of the log (a database of its own)")
	dir := flag.String("dir", "", "where the three index directories go (default: a new temporary directory)")
	corpus := flag.String("corpus", filepath.Join("testdata", "corpus"), "the directory holding records-act.json and guidance.jsonl")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("need -dsn (README.md, \"Past one machine\", starts a server)")
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "evpack-replicas-")
		if err != nil {
			log.Fatal(err)
		}
		*dir = d
	}
	if err := run(context.Background(), *dsn, *dir, *corpus, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run ingests the demo corpus through a writer that leads the log in dsn,
// has two replicas follow it, and prints each one's pack hash.
func run(ctx context.Context, dsn, dir, corpus string, out io.Writer) error {
	open := func(name string) (*evpack.Engine, *evpack.PostgresLog, error) {
		eng, err := evpack.Open(filepath.Join(dir, name), evpack.Options{K: 3})
		if err != nil {
			return nil, nil, err
		}
		l, err := evpack.OpenPostgresLog(ctx, dsn)
		if err != nil {
			eng.Close()
			return nil, nil, err
		}
		return eng, l, nil
	}
	writer, wlog, err := open("writer")
	if err != nil {
		return err
	}
	defer writer.Close()
	defer wlog.Close()
	if err := writer.Lead(ctx, wlog, "example-writer", 30*time.Second); err != nil {
		return err
	}
	defer writer.Resign(context.WithoutCancel(ctx))
	for _, c := range []connectors.Connector{
		connectors.NewStatute(filepath.Join(corpus, "records-act.json")),
		connectors.NewJSONL(filepath.Join(corpus, "guidance.jsonl")),
	} {
		rep, err := writer.Ingest(ctx, c, evpack.IngestOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "writer: %s: %d added, %d unchanged; generation %d\n", c.Name(), rep.Added, rep.Unchanged, rep.Generation)
	}
	head := writer.AppliedGeneration()
	req := evpack.Request{Question: "How long must a licensed firm retain records of client transactions?",
		AsOf: asof.MustDate("2026-01-15"), MinGeneration: head}
	p, err := writer.Query(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "writer:  %s\n", p.Hash())
	for _, name := range []string{"replica-1", "replica-2"} {
		eng, l, err := open(name)
		if err != nil {
			return err
		}
		defer eng.Close()
		defer l.Close()
		if err := eng.Follow(ctx, l, evpack.FollowOptions{Until: head, Replica: name}); err != nil {
			return err
		}
		rp, err := eng.Query(ctx, req) // MinGeneration: the writer's latest commit, applied here
		if err != nil {
			return err
		}
		v, err := eng.Verify(ctx, p.Bytes())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s (generation %d; the writer's pack verifies here: %v)\n", name, rp.Hash(), eng.AppliedGeneration(), v.OK())
	}
	return nil
}
