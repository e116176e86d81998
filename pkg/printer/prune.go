package printer

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// The reasons member prune removes a member for. In the JSON schema: never rename.
const (
	PruneUnreachable = "unreachable"
	PruneUnstarted   = "unstarted"
	// PruneLive is a started member a dry run keeps, printed with its evidence.
	PruneLive = "live"
)

// Pruned is one member member prune removed, or with --dry-run would remove.
type Pruned struct {
	ClusterID uint64
	Member    client.Member
	// Reason is PruneUnreachable or PruneUnstarted; For is how long the command saw it so.
	Reason string
	For    time.Duration
	// Evidence is what each source said of a started member (client.Liveness.Evidence).
	Evidence string
	DryRun   bool
}

// Prune prints one line for one member member prune removed (or would remove), or, in a dry
// run, keeps: in simple, what and why; in json, one object a line.
func (p Printer) Prune(w io.Writer, r Pruned) error {
	j := prunedJSON{DryRun: r.DryRun, ClusterID: client.FormatID(r.ClusterID), Member: toJSONMember(r.Member),
		Reason: r.Reason, For: r.For.String(), Evidence: r.Evidence}
	return p.print(w, p.CheckFor(MemberPrune, r.DryRun), j, func(b *bytes.Buffer) {
		verb := "pruned"
		switch {
		case r.Reason == PruneLive:
			verb = "would keep"
		case r.DryRun:
			verb = "would prune"
		}
		why := fmt.Sprintf("no answer for %s: %s", r.For, r.Evidence)
		switch r.Reason {
		case PruneUnstarted:
			why = fmt.Sprintf("not started after %s, peer URLs %s", r.For, strings.Join(r.Member.PeerURLs, ","))
		case PruneLive:
			why = r.Evidence
		}
		fmt.Fprintf(b, "%s %s (%s): %s, %s\n", verb, orDash(r.Member.Name), client.FormatID(r.Member.ID), role(r.Member), why)
	})
}

// member prune's JSON schema (docs/output.md): never rename a field.
type prunedJSON struct {
	DryRun    bool       `json:"dryRun"`
	ClusterID string     `json:"cluster_id"`
	Member    memberJSON `json:"member"`
	Reason    string     `json:"reason"`
	For       string     `json:"for"`
	// Evidence is what each source said of a started member, in words; absent for an unstarted
	// one.
	Evidence string `json:"evidence,omitempty"`
}
