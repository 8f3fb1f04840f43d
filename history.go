package evpack

import "github.com/evpack/evpack/internal/state"

// What each commit did, tenant by tenant: the index's history as a person
// reads it (evpack history), and the commits Diff names as the causes of a
// change.

// Commit describes one committed generation of the index: its commit time
// and, per tenant, what it did (see Engine.History).
type Commit = state.Commit

// TenantCommit is what one commit did to one tenant's evidence (see
// Engine.History and Commit.Tenants).
type TenantCommit = state.TenantCommit

// MetaPosition is the metadata key a connector sets to a chunk's 0-based
// place in its document (a decimal integer), when the chunk ID does not
// already sort in document order.
const MetaPosition = state.MetaPosition
