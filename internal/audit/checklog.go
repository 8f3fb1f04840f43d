package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/storage"
)

// errStop ends a Read at the index's generation.
var errStop = errors.New("audit: read far enough")

// CheckLog compares the history of an index (its manifest m) with the log
// it follows: each generation's chain sum, the link to the one before and
// the commit time must be the log entry's, and the log must hold every
// generation the index does. It returns the problems found; an error only
// when the log cannot be read.
func CheckLog(ctx context.Context, l evlog.Log, m *storage.Manifest) ([]string, error) {
	var problems []string
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head.Generation < m.Generation {
		problems = append(problems, fmt.Sprintf("the index is at generation %d, the log only at %d", m.Generation, head.Generation))
	}
	if m.Generation == 0 || head.Generation == 0 {
		return problems, nil
	}
	err = l.Read(ctx, 1, func(e evlog.Entry) error {
		if e.Generation > m.Generation {
			return errStop
		}
		b := m.Batches[e.Generation-1]
		prev := ""
		if e.Generation > 1 {
			prev = m.Batches[e.Generation-2].ChainSum()
		}
		at, _ := time.Parse(time.RFC3339, b.CommittedAt)
		switch {
		case e.Sum != b.ChainSum():
			problems = append(problems, fmt.Sprintf("generation %d: the log's entry sums to %s, the index's batch %s to %s", e.Generation, e.Sum, b.File, b.ChainSum()))
		case e.Prev != prev:
			problems = append(problems, fmt.Sprintf("generation %d: the log's entry links to %s, the index's to %s", e.Generation, e.Prev, prev))
		case !e.CommittedAt.Equal(at):
			problems = append(problems, fmt.Sprintf("generation %d: committed at %s in the log, %s in the index", e.Generation, e.CommittedAt.UTC().Format(time.RFC3339), b.CommittedAt))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return problems, nil
}

// RecordApplied records in a the audit row of replica for generation gen,
// just applied to the index in dir: the checksum of its MANIFEST.json as
// it is on disk and that of m's checkpoint.
func RecordApplied(ctx context.Context, a evlog.Auditor, replica string, gen int64, dir string, m *storage.Manifest) error {
	raw, err := os.ReadFile(filepath.Join(dir, storage.ManifestName))
	if err != nil {
		return err
	}
	return a.RecordApplied(ctx, evlog.Applied{Replica: replica, Generation: gen, ManifestSum: evidence.Sum(raw), CheckpointSum: m.CheckpointSum})
}
