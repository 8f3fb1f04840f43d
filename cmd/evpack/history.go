package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// historyNames is the most chunk IDs the text of evpack history names for
// one kind of change in one tenant; a bigger commit is counted only.
const historyNames = 3

// cmdHistory lists the index's generations, oldest first: each one's commit
// time and what it added, ended, superseded, retracted or purged per tenant
// (evpack.Engine.History). The commit times are the clock --known-at reads.
func cmdHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("history", stderr)
	dir := fs.String("index", "", "index directory")
	tenant := fs.String("tenant", "", "show only this tenant's scope: its own evidence and the shared corpus")
	asJSON := fs.Bool("json", false, "print a JSON array of the generations, every chunk ID named")
	dense := denseFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 0 {
		return usageErr("need --index DIR and nothing else")
	}
	if err := evidence.CheckTenant(*tenant); err != nil {
		// A name no chunk can carry: the listing showed the shared
		// corpus alone, exit 0, as for a tenant with no evidence.
		return usageErr("--tenant: %w", err)
	}
	eng, err := openExisting(*dir, dense)
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	commits, err := eng.History()
	if err != nil {
		return err
	}
	scoped := func(tcs []evpack.TenantCommit) []evpack.TenantCommit {
		if *tenant == "" {
			return tcs
		}
		var out []evpack.TenantCommit
		for _, tc := range tcs {
			if tc.Tenant == "" || tc.Tenant == *tenant {
				out = append(out, tc)
			}
		}
		return out
	}
	if *asJSON {
		type tenantJSON struct {
			Tenant     string   `json:"tenant"`
			Added      []string `json:"added,omitempty"`
			Superseded []string `json:"superseded,omitempty"`
			Ended      []string `json:"ended,omitempty"`
			Retracted  []string `json:"retracted,omitempty"`
			Purged     []string `json:"purged,omitempty"`
		}
		type commitJSON struct {
			Generation  int64        `json:"generation"`
			CommittedAt string       `json:"committed_at"`
			Tenants     []tenantJSON `json:"tenants"`
		}
		out := make([]commitJSON, 0, len(commits))
		for _, c := range commits {
			cj := commitJSON{Generation: c.Generation, CommittedAt: asof.FormatInstant(c.CommittedAt), Tenants: []tenantJSON{}}
			for _, tc := range scoped(c.Tenants) {
				cj.Tenants = append(cj.Tenants, tenantJSON(tc))
			}
			out = append(out, cj)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	for _, c := range commits {
		var parts []string
		for _, tc := range scoped(c.Tenants) {
			parts = append(parts, tenantLabel(tc.Tenant)+": "+tc.Summary(historyNames))
		}
		what := strings.Join(parts, "; ")
		if what == "" {
			what = "nothing in this scope"
		}
		fmt.Fprintf(stdout, "generation %d committed %s: %s\n", c.Generation, asof.FormatInstant(c.CommittedAt), what)
	}
	if len(commits) == 0 {
		fmt.Fprintln(stdout, "no generation committed")
	}
	return nil
}

// tenantLabel names a tenant for a person: "shared" for the shared corpus.
func tenantLabel(t string) string {
	if t == "" {
		return "shared"
	}
	return fmt.Sprintf("tenant %q", t)
}
