package printer

import (
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
)

// Pruned is one member member prune removed, or with --dry-run would remove.
type Pruned struct {
	ClusterID uint64
	Member    client.Member
	// Reason is PruneUnreachable or PruneUnstarted; For is how long the command saw it so.
	Reason string
	For    time.Duration
	DryRun bool
}

// Prune prints one line for one member member prune removed (or would remove): in simple, what
// and why; in json, one object a line.
func (p Printer) Prune(w io.Writer, r Pruned) error {
	if err := checkFormat(p, MemberPrune, r.DryRun); err != nil {
		return err
	}
	if p.format == JSON {
		return writeJSON(w, prunedJSON{
			DryRun: r.DryRun, ClusterID: client.FormatID(r.ClusterID), Member: toJSONMember(r.Member),
			Reason: r.Reason, For: r.For.String(),
		})
	}
	verb := "pruned"
	if r.DryRun {
		verb = "would prune"
	}
	role := "voter"
	if r.Member.IsLearner {
		role = "learner"
	}
	why := fmt.Sprintf("no answer for %s", r.For)
	if r.Reason == PruneUnstarted {
		why = fmt.Sprintf("not started after %s, peer URLs %s", r.For, strings.Join(r.Member.PeerURLs, ","))
	}
	_, err := fmt.Fprintf(w, "%s %s (%s): %s, %s\n", verb, orDash(r.Member.Name), client.FormatID(r.Member.ID), role, why)
	return err
}

// checkFormat is Check, or CheckDryRun for a dry run.
func checkFormat(p Printer, k Kind, dryRun bool) error {
	if dryRun {
		return p.CheckDryRun(k)
	}
	return p.Check(k)
}

// member prune's JSON schema (docs/output.md): never rename a field.
type prunedJSON struct {
	DryRun    bool       `json:"dryRun"`
	ClusterID string     `json:"cluster_id"`
	Member    memberJSON `json:"member"`
	Reason    string     `json:"reason"`
	For       string     `json:"for"`
}
