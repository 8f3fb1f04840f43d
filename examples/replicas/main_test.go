package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evpack/evpack/internal/pgtest"
)

// TestReplicasExample runs the example against a PostgreSQL server of its
// own: three lines with one pack hash, and both replicas verifying the
// writer's pack.
func TestReplicasExample(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	var out bytes.Buffer
	if err := run(context.Background(), srv.DSN, t.TempDir(), filepath.Join("..", "..", "testdata", "corpus"), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("output:\n%s", out.String())
	}
	if lines[0] != "writer: statute: 11 added, 0 unchanged; generation 1" || !strings.HasSuffix(lines[1], "; generation 2") {
		t.Fatalf("the writer's commits:\n%s", out.String())
	}
	hash := regexp.MustCompile(`blake3:[0-9a-f]{64}`)
	want := hash.FindString(lines[2])
	for _, l := range lines[3:] {
		if hash.FindString(l) != want || !strings.HasSuffix(l, "(generation 2; the writer's pack verifies here: true)") {
			t.Fatalf("a replica differs from the writer %s:\n%s", want, out.String())
		}
	}
}
