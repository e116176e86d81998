package printer

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

type quorumRow struct {
	label string
	value func(*client.QuorumReport) int
}

// quorumRows are the rows of the before/after table, in the order printed; the labels are a
// documented contract (docs/output.md) that scripts may match.
var quorumRows = []quorumRow{
	{"voters", func(q *client.QuorumReport) int { return q.Voters }},
	{"learners", func(q *client.QuorumReport) int { return q.Learners }},
	{"started voters", func(q *client.QuorumReport) int { return q.StartedVoters }},
	{"connected voters", func(q *client.QuorumReport) int { return q.ConnectedVoters }},
	{"quorum", func(q *client.QuorumReport) int { return q.Quorum }},
	{"fault tolerance", func(q *client.QuorumReport) int { return q.FaultTolerance }},
}

// verdict is the last line of a dry run's simple output, err being the refusal: one line a
// script can test with tail -n1.
func verdict(err error) string {
	if err != nil {
		return "would be refused: " + oneLine(err.Error())
	}
	return "would be accepted"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func role(m client.Member) string {
	if m.IsLearner {
		return "learner"
	}
	return "voter"
}

func simpleDryRun(b *bytes.Buffer, k Kind, r *client.DryRun) {
	line := func(label, value string) { fmt.Fprintf(b, "%-18s%s\n", label+":", value) }
	fmt.Fprintf(b, "Dry run of %s: nothing was changed\n", k)
	id := client.FormatID(r.Member.ID)
	if r.ProvisionalID {
		id += " (provisional: the add itself assigns another ID)"
	}
	line("member", id)
	// For a member the cluster does not have, only the ID asked for is known.
	known := r.Exists || k == MemberAdd
	name, memberRole, peers := "-", "-", "-"
	if known {
		name, memberRole, peers = orDash(r.Member.Name), role(r.Member), orDash(strings.Join(r.Member.PeerURLs, ","))
	}
	if k == MemberUpdate {
		peers += " -> " + strings.Join(r.PeerURLs, ",")
	}
	line("name", name)
	line("role", memberRole)
	line("peer URLs", peers)
	line("cluster", client.FormatID(r.ClusterID))
	b.WriteByte('\n')
	fmt.Fprintf(b, "%-18s%7s%7s\n", "", "before", "after")
	for _, row := range quorumRows {
		fmt.Fprintf(b, "%-18s%7s%7s\n", row.label, count(r.Before, row.value), count(r.After, row.value))
	}
	b.WriteString("\n" + verdict(r.Err) + "\n")
}

// count is one cell of the before/after table: "-" where the server did not count.
func count(q *client.QuorumReport, value func(*client.QuorumReport) int) string {
	if q == nil {
		return "-"
	}
	return strconv.Itoa(value(q))
}

// The dry run's JSON schema (docs/output.md): never rename a field. The quorum figures are
// client.QuorumReport's own.

type dryRunJSON struct {
	DryRun        bool                 `json:"dryRun"`
	Change        string               `json:"change"`
	ClusterID     string               `json:"cluster_id"`
	ID            string               `json:"ID"`
	ProvisionalID bool                 `json:"provisionalID"`
	Exists        bool                 `json:"exists"`
	Member        memberJSON           `json:"member"`
	PeerURLs      list[string]         `json:"peerURLs"`
	Before        *client.QuorumReport `json:"before"`
	After         *client.QuorumReport `json:"after"`
	Accepted      bool                 `json:"accepted"`
	Refusal       string               `json:"refusal"`
}

func toDryRunJSON(k Kind, r *client.DryRun) dryRunJSON {
	return dryRunJSON{
		DryRun:        true,
		Change:        strings.TrimPrefix(k.String(), "member "), // add, remove, update, promote
		ClusterID:     client.FormatID(r.ClusterID),
		ID:            client.FormatID(r.Member.ID),
		ProvisionalID: r.ProvisionalID,
		Exists:        r.Exists,
		Member:        toJSONMember(r.Member),
		PeerURLs:      r.PeerURLs,
		Before:        r.Before,
		After:         r.After,
		Accepted:      r.Err == nil,
		Refusal:       refusal(r.Err),
	}
}
