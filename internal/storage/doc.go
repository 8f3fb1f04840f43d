// Package storage owns an evpack index directory: who may open it, which
// files make up a committed generation, and how a commit is made and undone.
// The engine wires it to the lexical and dense indexes; nothing here knows
// bleve.
//
// Why a package of its own: every promise that "nothing committed is ever
// lost" and "an edited file is refused" rests on a few rules that must hold
// together, and they are easier to check in one place.
//
// Layout of an index directory:
//
//	LOCK                      flock()ed by the one process that has the index open
//	MANIFEST.json             the commit point, sealed: generation, totals, every batch and its checksum
//	PENDING.json              present only while a commit runs (or after a crash in one), sealed
//	chunks/NNNNNNNN.jsonl     one sealed batch of chunks per generation, chained to the one before
//	dense-NNNNNNNN.bin, graph-NNNNNNNN.bin   stored vectors and graph, when the index keeps them
//	state-NNNNNNNN.bin        the generation's checkpoint: what Open reads instead of every batch (internal/checkpoint)
//	lexical/                  the bleve index (package retrieve)
//
// The file log (filelog.go, [FileLog]: evlog.Log and evlog.Fence over one
// directory, meant to be chunks/; the engine does not use it yet) keeps its
// bodies as the batch files above, same names, same bytes, and adds:
//
//	NNNNNNNN.entry.json       entry N's record (evpack-log-entry/1, sealed): prev, sum, commit time, epoch, tenants, the body's checksum, a purge's rewrites; its rename commits the append
//	WRITER                    the writer's lease (evpack-log-writer/1, sealed): epoch, holder, expiry
//	LOG.LOCK                  flock()ed for the length of one append or lease change
//
// Entry points: [Open] takes the lock and reads the manifest; [Dir.Begin]
// starts a commit, [Commit.Write] and [Commit.Adopt] (of a file written
// ahead, [Dir.WriteAhead]) place its files, [Commit.Prepare] makes their
// names durable and stages the manifest, [Commit.Publish] renames it into
// place, [Commit.Abort] undoes it; [Dir.Recover] finishes or undoes a
// commit that a crash interrupted; [Dir.ReadBatch] and [Dir.ReadFile]
// return stored bytes only after checking them against the manifest;
// [OpenLog] opens a directory as a log.
//
// Invariant: a generation exists iff MANIFEST.json names it; every file the
// manifest names hashes to the checksum it records, but the checkpoint,
// whose recorded checksum is its head's (internal/checkpoint checks the rest of
// it block by block, against checksums in the head).
//
// Invariant: Open deletes nothing except what PENDING.json proves an
// unfinished commit wrote; anything else it cannot explain is ErrCorrupt
// naming the file.
//
// Invariant (the file log): entry g exists iff its record does; a record is
// renamed into place only after every body it names is whole and synced, and
// the bodies a purge replaced are removed only after its record is.
//
// Invariant: one process at a time has an index open (an OS lock on LOCK,
// taken before the manifest is read); a second Open waits at most
// Options.LockWait and then fails with ErrLocked.
package storage
