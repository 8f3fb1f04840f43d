package retrieve

import (
	"context"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"runtime/debug"

	"github.com/blevesearch/bleve/v2/index/scorch"
	zap "github.com/blevesearch/zapx/v17"
)

// CheckSegments reads each segment file of every partition whole and
// compares it with the CRC-32 that zapx wrote at its end over every byte
// before it. A segment whose bytes changed since they were written is
// ErrDamaged, naming its partition and file: bleve itself never reads the
// checksum, and one flipped bit in a dictionary or a column may change a
// ranking without failing a read. Segments of other zap formats (indexes
// written by older builds) are not checked. It reads every byte of the
// lexical index: Check calls it, and Preload checks each partition the
// same way as it reads its columns.
func (l *Lexical) CheckSegments(ctx context.Context) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverRead(&err, "check segments")
	if err := l.usable(); err != nil {
		return err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	parts, err := l.allParts()
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: check segments: %w", ErrLexical, err)
		}
		err := l.withSnapshot(p, "check segments", func(snap *scorch.IndexSnapshot) error { return checkSegments(snap, p.dir) })
		if err := p.markDamaged(err); err != nil {
			return err
		}
	}
	return nil
}

// checkSegments compares each file segment of snap with its checksum
// (CheckSegments), and hands its pages back once read (releaseSegment).
// Invariant: a zap segment of format 17 ends in the CRC-32 (IEEE) of all
// the bytes before those four (zapx's persistFooter).
func checkSegments(snap *scorch.IndexSnapshot, dir string) error {
	for _, ss := range snap.Segments() {
		z, ok := ss.Segment().(*zap.Segment)
		if !ok || z.Version() != zap.Version {
			continue // in memory, or of another format
		}
		b := z.Data()
		sum := crc32.ChecksumIEEE(b[:max(len(b)-4, 0)])
		releaseSegment(z)
		if len(b) < 4 || sum != z.CRC() {
			return fmt.Errorf("%w: partition %s: segment %s: its bytes do not match its checksum", ErrDamaged, dir, filepath.Base(z.Path()))
		}
	}
	return nil
}
