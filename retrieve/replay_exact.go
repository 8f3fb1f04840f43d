//go:build amd64 && !amd64.v3

package retrieve

// exactReplay: the compiler emits no fused multiply-add here (amd64 below
// v3), so the pruned search's term scores are bleve's bits.
const exactReplay = true
