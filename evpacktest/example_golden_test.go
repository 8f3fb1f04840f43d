package evpacktest_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/evpacktest"
)

// reporter stands in for a test's *testing.T so that an Example can show
// what Golden reports: it prints the first line of each report.
type reporter struct {
	testing.TB // only Helper, Errorf and Logf are called
}

func (reporter) Helper() {}

func (reporter) Errorf(format string, args ...any) {
	first, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	fmt.Println("reported:", first)
}

func (reporter) Logf(string, ...any) {} // -update's "wrote FILE"

// retentionPack answers the retention question of ../testdata/corpus as of
// day.
func retentionPack(day string) (*evidence.Pack, error) {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, connectors.NewStatute("../testdata/corpus/records-act.json"), evpack.IngestOptions{}); err != nil {
		return nil, err
	}
	return eng.Query(ctx, evpack.Request{
		Question: "How long must a licensed firm retain records of client transactions?",
		AsOf:     asof.MustDate(day),
	})
}

// Golden pins a pack's canonical bytes in a file from a test:
//
//	func TestRetentionPack(t *testing.T) {
//		pack, err := eng.Query(ctx, req)
//		if err != nil {
//			t.Fatal(err)
//		}
//		evpacktest.Golden(t, "testdata/golden/retention.json", pack)
//	}
//
// Run the test once with -update to record the file, review it, commit it.
// From then on a pack whose bytes move fails the test, and the report says
// which field moved. Here a reporter stands in for the test's t.
func ExampleGolden() {
	pack, err := retentionPack("2020-06-30")
	if err != nil {
		log.Fatal(err)
	}
	var t reporter
	evpacktest.Golden(t, "testdata/golden/retention-2020.json", pack) // recorded with -update: holds, no report
	fmt.Println("pinned:", pack.Hash())
	// Output:
	// pinned: blake3:e6e6bb3dab9989483f15db517684b04efd066dcac0fb6b7946a3c07f6c798060
}

// Diff is what Golden reports on a mismatch: a field-by-field diff of the two
// parsed packs (its layout is go-cmp's, for a person to read, so only its
// first line is printed here), or why either side is not a pack.
func ExampleDiff() {
	then, err := retentionPack("2020-06-30")
	if err != nil {
		log.Fatal(err)
	}
	now, err := retentionPack("2026-01-15")
	if err != nil {
		log.Fatal(err)
	}
	first, _, _ := strings.Cut(evpacktest.Diff(then.Bytes(), now.Bytes()), "\n")
	fmt.Println(first)
	fmt.Printf("%q\n", evpacktest.Diff(then.Bytes(), then.Bytes()))
	fmt.Println(evpacktest.Diff([]byte("{}"), now.Bytes()))
	// Output:
	// diff (-golden +got):
	// ""
	// the golden bytes are not a pack: evidence: malformed pack: format "", this build reads "evpack-pack/2" and "evpack-pack/1"
}
