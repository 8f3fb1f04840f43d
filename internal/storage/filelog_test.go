package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/evlog/logtest"
	"github.com/evpack/evpack/internal/fsutil"
)

// expireLease rewrites dir's WRITER so that its lease ended a second ago,
// as if its time had run out.
func expireLease(t *testing.T, dir string) {
	t.Helper()
	name := filepath.Join(dir, WriterName)
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := decodeWriter(name, raw)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	text := strings.Replace(string(raw[:len(raw)-fsutil.TextSealLen]), `"expires": "`+w.Expires+`"`, `"expires": "`+past+`"`, 1)
	if err := fsutil.WriteAtomic(name, fsutil.SealText([]byte(text))); err != nil {
		t.Fatal(err)
	}
}

func openLog(t *testing.T, dir string, opts LogOptions) *FileLog {
	t.Helper()
	l, err := OpenLog(dir, opts)
	if err != nil {
		t.Fatalf("OpenLog(%s): %v", dir, err)
	}
	return l
}

// TestFileLogConforms runs the log conformance suite on the file log, one
// directory per case.
func TestFileLogConforms(t *testing.T) {
	logtest.Run(t, func(t *testing.T) logtest.Harness {
		dir := t.TempDir()
		l := openLog(t, dir, LogOptions{})
		return logtest.Harness{Log: l, Fence: l, Expire: func(t *testing.T) { expireLease(t, dir) }}
	})
}

var errCrash = errors.New("crash")

// fill appends entries 1..n of logtest.Entry under a new lease of
// "writer-a".
func fill(t *testing.T, l *FileLog, n int) (int64, []evlog.Entry) {
	t.Helper()
	ctx := context.Background()
	epoch, err := l.Acquire(ctx, "writer-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var out []evlog.Entry
	prev := ""
	for g := int64(1); g <= int64(n); g++ {
		e := logtest.Entry(g, prev, epoch)
		if err := l.Append(ctx, e); err != nil {
			t.Fatalf("Append(%d): %v", g, err)
		}
		out = append(out, e)
		prev = e.Sum
	}
	return epoch, out
}

func readLog(t *testing.T, l *FileLog, from int64) []evlog.Entry {
	t.Helper()
	var got []evlog.Entry
	if err := l.Read(context.Background(), from, func(e evlog.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatalf("Read(%d): %v", from, err)
	}
	return got
}

func headGen(t *testing.T, l *FileLog) int64 {
	t.Helper()
	h, err := l.Head(context.Background())
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h.Generation
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func sameEntry(t *testing.T, what string, got, want evlog.Entry) {
	t.Helper()
	if got.Generation != want.Generation || got.Prev != want.Prev || got.Sum != want.Sum ||
		!got.CommittedAt.Equal(want.CommittedAt) || got.Clamped != want.Clamped || got.Epoch != want.Epoch ||
		!slices.Equal(got.Tenants, want.Tenants) || string(got.Body) != string(want.Body) || got.RedactedBy != want.RedactedBy {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestFileLogStoresTodaysBatchFiles appends a sealed batch as an index
// commits it and checks every file the log wrote, byte for byte: the body is
// the batch file under its name, and the record and the lease are the
// formats pinned here.
func TestFileLogStoresTodaysBatchFiles(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	l := openLog(t, dir, LogOptions{Now: func() time.Time { return clock }})
	ctx := context.Background()
	epoch, err := l.Acquire(ctx, "writer-a", time.Hour)
	if err != nil || epoch != 1 {
		t.Fatalf("Acquire = %d, %v; want epoch 1", epoch, err)
	}
	body, err := EncodeBatch(BatchHeader{Generation: 1, CommittedAt: "2026-03-01T12:00:00Z"},
		Contents{Chunks: []*evidence.Chunk{testChunk(t, "a", "Records are kept for ten years.")}})
	if err != nil {
		t.Fatal(err)
	}
	e := evlog.Entry{Generation: 1, Sum: evidence.Sum(body), CommittedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Epoch: epoch, Tenants: []string{"acme"}, Body: body}
	if err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"00000001.entry.json", "00000001.jsonl", "LOG.LOCK", "WRITER"}) {
		t.Errorf("the log's directory holds %q", got)
	}
	raw, err := os.ReadFile(filepath.Join(dir, BatchName(1)))
	if err != nil || string(raw) != string(body) {
		t.Fatalf("%s is not the batch byte for byte (%v)", BatchName(1), err)
	}
	wantRecord := `{
  "format": "evpack-log-entry/1",
  "generation": 1,
  "prev": "",
  "sum": "` + evidence.Sum(body) + `",
  "body": "` + evidence.Sum(body) + `",
  "committed_at": "2026-03-01T12:00:00Z",
  "clamped": false,
  "epoch": 1,
  "tenants": [
    "acme"
  ]
}
`
	raw, err = os.ReadFile(filepath.Join(dir, LogEntryName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(fsutil.SealText([]byte(wantRecord))) {
		t.Errorf("%s =\n%s\nwant\n%s", LogEntryName(1), raw, fsutil.SealText([]byte(wantRecord)))
	}
	wantWriter := "{\n  \"format\": \"evpack-log-writer/1\",\n  \"epoch\": 1,\n  \"holder\": \"writer-a\",\n  \"expires\": \"2026-03-01T13:00:00.0000005Z\"\n}\n"
	raw, err = os.ReadFile(filepath.Join(dir, WriterName))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(fsutil.SealText([]byte(wantWriter))) {
		t.Errorf("%s =\n%s\nwant\n%s", WriterName, raw, fsutil.SealText([]byte(wantWriter)))
	}
	got := readLog(t, l, 1)
	if len(got) != 1 {
		t.Fatalf("Read gave %d entries", len(got))
	}
	sameEntry(t, "entry 1", got[0], e)
}

// TestFileLogCrashBeforeRecord stops an append after its body was written
// and before its record, as a kill -9 would: the body is on disk, but the
// head has not moved (for this FileLog and for one opened afresh), and the
// next append of that generation, with another body, writes over it.
func TestFileLogCrashBeforeRecord(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, LogOptions{})
	epoch, have := fill(t, l, 1)
	ctx := context.Background()
	lost := logtest.Entry(2, have[0].Sum, epoch)
	l.hooks.afterBodies = func() error { return errCrash }
	if err := l.Append(ctx, lost); !errors.Is(err, errCrash) {
		t.Fatalf("Append with the crash hook: %v", err)
	}
	l.hooks.afterBodies = nil
	if raw, err := os.ReadFile(filepath.Join(dir, BatchName(2))); err != nil || string(raw) != string(lost.Body) {
		t.Fatalf("the crash should leave body 2 on disk: %q, %v", raw, err)
	}
	if _, err := os.Stat(filepath.Join(dir, LogEntryName(2))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the crash left a record of generation 2: %v", err)
	}
	again := openLog(t, dir, LogOptions{})
	for _, c := range []struct {
		name string
		fl   *FileLog
	}{{"the crashed FileLog", l}, {"a fresh OpenLog", again}} {
		name, fl := c.name, c.fl
		if g := headGen(t, fl); g != 1 {
			t.Errorf("%s: head %d after the crash, want 1", name, g)
		}
		if got := readLog(t, fl, 1); len(got) != 1 {
			t.Errorf("%s: Read gave %d entries, want 1", name, len(got))
		}
	}
	// The lease is the directory's, not a FileLog's: another FileLog may
	// append under the epoch the first took.
	if err := again.Append(ctx, lost); err != nil {
		t.Fatalf("appending generation 2 after the crash: %v", err)
	}
	// That append (same generation, same body) landed; now one with
	// another body at generation 3 after a second crash.
	l.hooks.afterBodies = func() error { return errCrash }
	third := logtest.Entry(3, lost.Sum, epoch)
	if err := l.Append(ctx, third); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	l.hooks.afterBodies = nil
	third.Body = []byte("{\"format\":\"evpack-chunks/2\",\"generation\":3,\"another\":true}\n")
	if err := again.Append(ctx, third); err != nil {
		t.Fatalf("append over a crashed body: %v", err)
	}
	got := readLog(t, l, 3)
	if len(got) != 1 {
		t.Fatalf("Read(3) gave %d entries", len(got))
	}
	sameEntry(t, "entry 3 written over the crashed body", got[0], third)
	if raw, _ := os.ReadFile(filepath.Join(dir, BatchName(3))); string(raw) != string(third.Body) {
		t.Errorf("%s holds %q, want the second append's body", BatchName(3), raw)
	}
}

// TestFileLogRefusesEditedFiles edits a body and a record on disk: Read of
// the entry and OpenLog are ErrCorrupt naming the file, and the entries
// before and after an edited body still read.
func TestFileLogRefusesEditedFiles(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, LogOptions{})
	fill(t, l, 3)
	name := filepath.Join(dir, BatchName(2))
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-3] ^= 1
	if err := os.WriteFile(name, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	err = l.Read(context.Background(), 1, func(evlog.Entry) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Errorf("Read over an edited body: %v, want ErrCorrupt naming %s", err, name)
	}
	if got := readLog(t, l, 3); len(got) != 1 || got[0].Generation != 3 {
		t.Errorf("Read(3) past the edited body gave %v", got)
	}
	n := 0
	l.Read(context.Background(), 1, func(evlog.Entry) error { n++; return nil })
	if n != 1 {
		t.Errorf("Read(1) gave %d entries before the edited one, want 1", n)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := l.Read(context.Background(), 2, func(evlog.Entry) error { return nil }); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Errorf("Read of a missing body: %v, want ErrCorrupt naming %s", err, name)
	}

	rec := filepath.Join(dir, LogEntryName(1))
	raw, err = os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `"epoch": 1`, `"epoch": 2`, 1)
	if edited == string(raw) {
		t.Fatal("the record holds no epoch 1")
	}
	if err := os.WriteFile(rec, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(dir, LogOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), rec) {
		t.Errorf("OpenLog over an edited record: %v, want ErrCorrupt naming %s", err, rec)
	}
	// An edit resealed passes the seal, not the record's own checks: entry
	// 1 names no prev.
	body := strings.Replace(string(raw[:len(raw)-fsutil.TextSealLen]), `"prev": ""`, `"prev": "blake3:00"`, 1)
	if err := os.WriteFile(rec, fsutil.SealText([]byte(body)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(dir, LogOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), rec) {
		t.Errorf("OpenLog over a resealed record of generation 1 with a prev: %v, want ErrCorrupt naming %s", err, rec)
	}
}

// TestFileLogRecordPastAGap removes the record of generation 2 of 3:
// OpenLog is ErrCorrupt naming record 3, which no chain reaches.
func TestFileLogRecordPastAGap(t *testing.T) {
	dir := t.TempDir()
	fill(t, openLog(t, dir, LogOptions{}), 3)
	if err := os.Remove(filepath.Join(dir, LogEntryName(2))); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, LogEntryName(3))
	if _, err := OpenLog(dir, LogOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), rec) {
		t.Errorf("OpenLog with record 2 missing: %v, want ErrCorrupt naming %s", err, rec)
	}
}

// TestFileLogTwoHandles opens two FileLogs on one directory, as two
// processes would (flock locks belong to the open file, so they exclude
// each other as processes do): each sees the other's appends, Wait sees
// them by polling, a lease held by one is refused to the other, a stale
// epoch is refused once the other takes an expired lease, and of two
// racing appends of one generation through the two, exactly one lands.
func TestFileLogTwoHandles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := openLog(t, dir, LogOptions{})
	b := openLog(t, dir, LogOptions{Poll: time.Millisecond})
	ea, have := fill(t, a, 2)
	if g := headGen(t, b); g != 2 {
		t.Fatalf("the second FileLog's head is %d, want 2", g)
	}
	got := readLog(t, b, 1)
	if len(got) != 2 {
		t.Fatalf("the second FileLog reads %d entries", len(got))
	}
	for i := range got {
		sameEntry(t, fmt.Sprintf("entry %d through the second FileLog", i+1), got[i], have[i])
	}
	if _, err := b.Acquire(ctx, "writer-b", time.Hour); !errors.Is(err, evlog.ErrLeaseHeld) {
		t.Errorf("Acquire through the second FileLog while the first's lease runs: %v, want ErrLeaseHeld", err)
	}

	waited := make(chan evlog.Head, 1)
	werr := make(chan error, 1)
	go func() {
		h, err := b.Wait(ctx, 2)
		waited <- h
		werr <- err
	}()
	e3 := logtest.Entry(3, have[1].Sum, ea)
	if err := a.Append(ctx, e3); err != nil {
		t.Fatal(err)
	}
	if h := <-waited; h.Generation != 3 || h.Sum != e3.Sum {
		t.Errorf("the second FileLog's Wait(2) returned %+v, want generation 3", h)
	}
	if err := <-werr; err != nil {
		t.Errorf("Wait: %v", err)
	}

	expireLease(t, dir)
	eb, err := b.Acquire(ctx, "writer-b", time.Hour)
	if err != nil || eb != ea+1 {
		t.Fatalf("Acquire of the expired lease: %d, %v; want epoch %d", eb, err, ea+1)
	}
	if err := a.Append(ctx, logtest.Entry(4, e3.Sum, ea)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the first writer's append after the second took the lease: %v, want ErrStaleEpoch", err)
	}
	if err := a.Renew(ctx, ea, time.Hour); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the first writer's renew: %v, want ErrStaleEpoch", err)
	}
	e4 := logtest.Entry(4, e3.Sum, eb)
	if err := b.Append(ctx, e4); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, a, 4); len(got) != 1 || got[0].Epoch != eb {
		t.Errorf("the first FileLog reads entry 4 as %+v, want it under epoch %d", got, eb)
	}

	// Both handles append generation 5 under the current epoch at once:
	// only LOG.LOCK stands between them.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, fl := range []*FileLog{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := logtest.Entry(5, e4.Sum, eb)
			e.Body = fmt.Appendf(nil, "handle %d\n", i)
			errs[i] = fl.Append(ctx, e)
		}()
	}
	wg.Wait()
	landed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			landed++
		case !errors.Is(err, evlog.ErrFork):
			t.Errorf("handle %d: %v, want nil or ErrFork", i, err)
		}
	}
	if landed != 1 {
		t.Errorf("%d of 2 racing appends landed, want 1", landed)
	}
	if ga, gb := headGen(t, a), headGen(t, b); ga != 5 || gb != 5 {
		t.Errorf("heads %d and %d, want 5", ga, gb)
	}
}

// TestFileLogPurgeRollsForward stops a purge after its record (the commit
// point) and before the bodies it replaced were removed: the next OpenLog
// removes them and reads the rewritten bodies, every other field of the
// redacted entries kept. A purge stopped before its record leaves the log
// as it was, and OpenLog removes the rewritten bodies it wrote.
func TestFileLogPurgeRollsForward(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLog(t, dir, LogOptions{})
	epoch, have := fill(t, l, 3)
	r1 := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":1}\n{\"redacted\":1}\n")
	r2 := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":2}\n{\"redacted\":2}\n")
	p := logtest.Entry(4, have[2].Sum, epoch)
	p.Redactions = []evlog.Redaction{{Generation: 2, Body: r2}, {Generation: 1, Body: r1}}

	// Stopped before the record: nothing happened.
	l.hooks.afterBodies = func() error { return errCrash }
	if err := l.Append(ctx, p); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	l.hooks.afterBodies = nil
	for _, n := range []string{RedactedName(1, 4), RedactedName(2, 4), BatchName(4)} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("the stopped purge should have left %s: %v", n, err)
		}
	}
	l = openLog(t, dir, LogOptions{})
	if g := headGen(t, l); g != 3 {
		t.Fatalf("head %d after a purge stopped before its record, want 3", g)
	}
	want := []string{"00000001.entry.json", "00000001.jsonl", "00000002.entry.json", "00000002.jsonl",
		"00000003.entry.json", "00000003.jsonl", "00000004.jsonl", "LOG.LOCK", "WRITER"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Errorf("after OpenLog the directory holds\n %q\nwant\n %q", got, want)
	}
	got := readLog(t, l, 1)
	for i := range have {
		sameEntry(t, fmt.Sprintf("entry %d after the stopped purge", i+1), got[i], have[i])
	}

	// Stopped after the record: the old bodies are still there.
	l.hooks.afterRecord = func() error { return errCrash }
	if err := l.Append(ctx, p); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	for _, n := range []string{BatchName(1), BatchName(2), RedactedName(1, 4), RedactedName(2, 4), LogEntryName(4)} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("the crash after the record should have left %s: %v", n, err)
		}
	}
	again := openLog(t, dir, LogOptions{})
	for _, n := range []string{BatchName(1), BatchName(2)} {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OpenLog left the replaced body %s: %v", n, err)
		}
	}
	got = readLog(t, again, 1)
	if len(got) != 4 {
		t.Fatalf("Read gave %d entries, want 4", len(got))
	}
	w1, w2 := have[0], have[1]
	w1.Body, w1.RedactedBy = r1, 4
	w2.Body, w2.RedactedBy = r2, 4
	sameEntry(t, "entry 1 rolled forward", got[0], w1)
	sameEntry(t, "entry 2 rolled forward", got[1], w2)
	sameEntry(t, "entry 3", got[2], have[2])
	p.Redactions = nil
	sameEntry(t, "the purge", got[3], p)

	// A second purge of entry 1 replaces the first's rewrite, and removes it.
	r1b := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":1}\n{\"redacted\":\"again\"}\n")
	q := logtest.Entry(5, p.Sum, epoch)
	q.Redactions = []evlog.Redaction{{Generation: 1, Body: r1b}}
	if err := again.Append(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, RedactedName(1, 4))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second purge left the first's rewrite %s: %v", RedactedName(1, 4), err)
	}
	// The crashed FileLog catches up on its next Read, rolling forward too.
	got = readLog(t, l, 1)
	w1.Body, w1.RedactedBy = r1b, 5
	sameEntry(t, "entry 1 after the second purge, through the crashed FileLog", got[0], w1)
	sameEntry(t, "entry 2 after the second purge", got[1], w2)
}

// TestFileLogNames checks the log's file names against those of an index:
// each parses back, and none is taken for another.
func TestFileLogNames(t *testing.T) {
	for _, g := range []int64{1, 42, 99999999, 100000000} {
		if got, ok := parseLogEntryName(LogEntryName(g)); !ok || got != g {
			t.Errorf("parseLogEntryName(%q) = %d, %v", LogEntryName(g), got, ok)
		}
		if a, p, ok := parseRedactedName(RedactedName(g, g+1)); !ok || a != g || p != g+1 {
			t.Errorf("parseRedactedName(%q) = %d, %d, %v", RedactedName(g, g+1), a, p, ok)
		}
	}
	for _, n := range []string{"1.entry.json", "00000000.entry.json", "-0000001.entry.json", "00000001.entry.json.tmp-1",
		BatchName(1), AnalysisName(1), RedactedName(1, 2), CheckpointName(1), WriterName, LogLockName, ".00000001.entry.json.tmp-5"} {
		if _, ok := parseLogEntryName(n); ok {
			t.Errorf("parseLogEntryName(%q) took it for a record", n)
		}
	}
	for _, n := range []string{"1.p2.jsonl", "00000001.p00000002.json", BatchName(1), LogEntryName(1), "00000001.p00000002.jsonl.tmp-3"} {
		if _, _, ok := parseRedactedName(n); ok {
			t.Errorf("parseRedactedName(%q) took it for a rewritten body", n)
		}
	}
	for _, n := range []string{LogEntryName(7), WriterName, LogLockName, BatchName(7), RedactedName(7, 8), AnalysisName(7), LockName} {
		if want := n == LogEntryName(7) || n == WriterName || n == LogLockName; IsLogFile(n) != want {
			t.Errorf("IsLogFile(%q) = %v, want %v", n, !want, want)
		}
	}
}

// TestFileLogReadAcrossAPurge commits a purge through another FileLog in
// the middle of a Read: the body the Read was to read next is gone, and it
// reads the purge's rewrite of it instead of failing.
func TestFileLogReadAcrossAPurge(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := openLog(t, dir, LogOptions{})
	epoch, have := fill(t, a, 3)
	b := openLog(t, dir, LogOptions{})
	rewrite := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":2}\n{\"redacted\":2}\n")
	var got []evlog.Entry
	err := b.Read(ctx, 1, func(e evlog.Entry) error {
		if e.Generation == 1 {
			p := logtest.Entry(4, have[2].Sum, epoch)
			p.Redactions = []evlog.Redaction{{Generation: 2, Body: rewrite}}
			if err := a.Append(ctx, p); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(dir, BatchName(2))); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("the purge left %s: %v", BatchName(2), err)
			}
		}
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Read across a purge: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("Read gave %d entries, want the 3 of its head", len(got))
	}
	w2 := have[1]
	w2.Body, w2.RedactedBy = rewrite, 4
	sameEntry(t, "entry 2, purged during the Read", got[1], w2)
	sameEntry(t, "entry 3", got[2], have[2])
}

// roundEntry is the entry both racers append at generation g: the same
// chain, the body naming who wrote it.
func roundEntry(who string, g, epoch int64) evlog.Entry {
	sum := func(g int64) string { return fmt.Sprintf("blake3:%064x", g) }
	e := evlog.Entry{Generation: g, Sum: sum(g), Epoch: epoch,
		CommittedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g) * time.Second),
		Body:        fmt.Appendf(nil, "%s %d\n", who, g)}
	if g > 1 {
		e.Prev = sum(g - 1)
	}
	return e
}

// TestFileLogAcrossProcesses races this process and a child (the test
// binary run again) on one directory, round by round: in each, both append
// the same generation at once, with different bodies, after a handshake
// over the child's stdin and stdout. In every round exactly one lands and
// the other is ErrFork, the log holds the winner's body, and the chain
// links: only LOG.LOCK's flock stands between the two processes.
func TestFileLogAcrossProcesses(t *testing.T) {
	const rounds = 60
	ctx := context.Background()
	if dir := os.Getenv("EVPACK_FILELOG_CHILD"); dir != "" {
		var epoch int64
		fmt.Sscan(os.Getenv("EVPACK_FILELOG_EPOCH"), &epoch)
		l := openLog(t, dir, LogOptions{})
		in := bufio.NewReader(os.Stdin)
		for {
			var g int64
			if _, err := fmt.Fscan(in, &g); err != nil {
				return // the parent closed stdin: done
			}
			fmt.Println("go")
			switch err := l.Append(ctx, roundEntry("child", g, epoch)); {
			case err == nil:
				fmt.Println("landed")
			case errors.Is(err, evlog.ErrFork):
				fmt.Println("fork")
			default:
				fmt.Printf("error %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
			}
		}
	}
	dir := t.TempDir()
	l := openLog(t, dir, LogOptions{})
	epoch, err := l.Acquire(ctx, "parent", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestFileLogAcrossProcesses$", "-test.count=1")
	child.Env = append(os.Environ(), "EVPACK_FILELOG_CHILD="+dir, fmt.Sprintf("EVPACK_FILELOG_EPOCH=%d", epoch))
	var stderr strings.Builder
	child.Stderr = &stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := child.Wait(); err != nil {
			t.Errorf("the child failed: %v\n%s", err, stderr.String())
		}
	}()
	lines := bufio.NewReader(stdout)
	line := func() string {
		s, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the child: %v\n%s", err, stderr.String())
		}
		return strings.TrimSuffix(s, "\n")
	}
	wins := map[string]int{}
	for g := int64(1); g <= rounds; g++ {
		fmt.Fprintln(stdin, g)
		if got := line(); got != "go" {
			t.Fatalf("round %d: the child said %q", g, got)
		}
		mine := l.Append(ctx, roundEntry("parent", g, epoch))
		if mine != nil && !errors.Is(mine, evlog.ErrFork) {
			t.Fatalf("round %d: parent: %v", g, mine)
		}
		theirs := line()
		winner := "parent"
		switch {
		case mine == nil && theirs == "fork":
		case mine != nil && theirs == "landed":
			winner = "child"
		default:
			t.Fatalf("round %d: the parent's append gave %v, the child's %q: want exactly one landed, the other ErrFork", g, mine, theirs)
		}
		wins[winner]++
		got := readLog(t, l, g)
		if len(got) != 1 || string(got[0].Body) != fmt.Sprintf("%s %d\n", winner, g) {
			t.Fatalf("round %d: the log holds %+v, want %s's body", g, got, winner)
		}
	}
	t.Logf("of %d rounds the parent won %d, the child %d", rounds, wins["parent"], wins["child"])
	got := readLog(t, l, 1)
	if len(got) != rounds {
		t.Fatalf("the log holds %d entries, want %d", len(got), rounds)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Prev != got[i-1].Sum {
			t.Errorf("entry %d names prev %q, entry %d is %q", got[i].Generation, got[i].Prev, got[i-1].Generation, got[i-1].Sum)
		}
	}
}
