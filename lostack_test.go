package evpack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/evlog"
)

// lyingLog is a log whose Append may fail after it appended (an
// acknowledgement lost with the connection), or whose Head may fail: what
// a writer sees of a log it cannot trust to answer.
type lyingLog struct {
	*evlog.Memory
	loseAck bool // Append appends, then reports failure
	noHead  bool // Head fails
	refuse  bool // Append fails without appending
}

var (
	errLostAck = errors.New("test: connection lost after the append")
	errNoHead  = errors.New("test: head unreadable")
)

func (l *lyingLog) Append(ctx context.Context, e evlog.Entry) error {
	if l.refuse {
		return errLostAck
	}
	if err := l.Memory.Append(ctx, e); err != nil {
		return err
	}
	if l.loseAck {
		return errLostAck
	}
	return nil
}

func (l *lyingLog) Head(ctx context.Context) (evlog.Head, error) {
	if l.noHead {
		return evlog.Head{}, errNoHead
	}
	return l.Memory.Head(ctx)
}

// TestAppendWhoseOutcomeIsUnknown: a writer's Append fails, and the log
// may hold the entry all the same. The writer reads the head back: holding
// its entry, the commit stands and is applied (a generation in the log the
// writer did not apply would leave it behind its own log, refusing every
// later append); below it, nothing was appended and the writer goes on;
// unreadable, it cannot know, and stops (ErrBroken) until reopened to
// follow the log. Each case ends with a replica that follows the log
// holding the writer's files byte for byte.
func TestAppendWhoseOutcomeIsUnknown(t *testing.T) {
	cases := []struct {
		name, reason            string
		loseAck, noHead, refuse bool
		wantErr                 error // nil: the ingest succeeds
		wantGen                 int64 // the writer's generation after the ingest
	}{
		{name: "acknowledgement lost", reason: "the head holds the entry: the commit stands",
			loseAck: true, wantGen: 2},
		{name: "refused", reason: "the head is below the entry: nothing was appended, the writer goes on",
			refuse: true, wantErr: errLostAck, wantGen: 1},
		{name: "acknowledgement lost, head unreadable", reason: "the outcome is unknown: the writer stops",
			loseAck: true, noHead: true, wantErr: ErrBroken, wantGen: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			log := &lyingLog{Memory: evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })}
			wdir := t.TempDir()
			w := mustOpen(t, wdir)
			require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
			_, err := w.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
			require.NoError(t, err)

			log.loseAck, log.noHead, log.refuse = tc.loseAck, tc.noHead, tc.refuse
			_, err = w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
			log.loseAck, log.noHead, log.refuse = false, false, false
			if tc.wantErr == nil {
				require.NoError(t, err, tc.reason)
			} else {
				require.ErrorIs(t, err, tc.wantErr, tc.reason)
			}
			require.Equal(t, tc.wantGen, w.AppliedGeneration(), tc.reason)

			if errors.Is(err, ErrBroken) {
				_, err := w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
				require.ErrorIs(t, err, ErrBroken, "a stopped writer commits nothing")
				require.NoError(t, w.Close())
				w = mustOpen(t, wdir)
				require.NoError(t, w.Lead(ctx, log, "writer", time.Hour), "reopened, it follows the log it leads")
				require.Equal(t, int64(2), w.AppliedGeneration(), "the entry the log holds is applied")
			} else if tc.wantGen == 1 {
				_, err := w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
				require.NoError(t, err, "the same batch again commits")
			}
			_, err = w.Ingest(ctx, connectors.Records(replicaRecords(3)), IngestOptions{})
			require.NoError(t, err, "the writer goes on after it")
			head, err := log.Head(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(3), head.Generation)

			rdir := t.TempDir()
			r := mustOpen(t, rdir)
			require.NoError(t, r.Follow(ctx, log, FollowOptions{Until: 3}))
			requireSameFiles(t, wdir, rdir, tc.name)
		})
	}
}
