package evpack

// What each commit did, tenant by tenant: the index's history as a person
// reads it (evpack history), and the commits Diff names as the causes of a
// change.

// inScope reports whether a commit's tenants touch the scope of tenant (its
// own evidence and the shared corpus).
func inScope(tcs []TenantCommit, tenant string) bool {
	for _, tc := range tcs {
		if tc.Tenant == "" || tc.Tenant == tenant {
			return true
		}
	}
	return false
}
