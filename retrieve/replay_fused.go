//go:build !amd64 || amd64.v3

package retrieve

// exactReplay is false where Go may fuse x*y+z into one instruction (arm64,
// amd64 v3): the pruned search's term scores and bleve's may then differ in
// their last bits, as they may across CPUs, so every question is treated as
// one whose sums differ (see nearBoundary).
const exactReplay = false
