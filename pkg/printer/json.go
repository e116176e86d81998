package printer

import (
	"encoding/json"
	"io"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// The JSON schema (docs/output.md). Field names follow etcdctl's where etcdctl has the field,
// so jq filters written for etcdctl keep working; IDs are strings. Never rename a field.

type headerJSON struct {
	ClusterID string `json:"cluster_id"`
	MemberID  string `json:"member_id"`
	RaftTerm  uint64 `json:"raft_term"`
}

type memberJSON struct {
	ID         string   `json:"ID"`
	Name       string   `json:"name"`
	Started    bool     `json:"started"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
	IsLeader   bool     `json:"isLeader"`
}

type listJSON struct {
	Header  headerJSON   `json:"header"`
	Members []memberJSON `json:"members"`
}

type changeJSON struct {
	Header  headerJSON   `json:"header"`
	ID      string       `json:"ID"`
	Members []memberJSON `json:"members"`
}

type addJSON struct {
	changeJSON
	Member memberJSON  `json:"member"`
	Env    environment `json:"env"`
}

func toJSONHeader(h client.Header) headerJSON {
	return headerJSON{ClusterID: client.FormatID(h.ClusterID), MemberID: client.FormatID(h.MemberID), RaftTerm: h.RaftTerm}
}

func toJSONMember(m client.Member) memberJSON {
	return memberJSON{
		ID:         client.FormatID(m.ID),
		Name:       m.Name,
		Started:    m.Started,
		PeerURLs:   nonNil(m.PeerURLs),
		ClientURLs: nonNil(m.ClientURLs),
		IsLearner:  m.IsLearner,
		IsLeader:   m.IsLeader,
	}
}

func toJSONMembers(ms []client.Member) []memberJSON {
	out := make([]memberJSON, len(ms))
	for i, m := range ms {
		out[i] = toJSONMember(m)
	}
	return out
}

func toJSONChange(r *client.ChangeResult) changeJSON {
	return changeJSON{Header: toJSONHeader(r.Header), ID: client.FormatID(r.ID), Members: toJSONMembers(r.Members)}
}

// nonNil makes a missing list print as [] rather than null: every field is always there.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	// One line, like etcdctl, so the output can be appended to a log or split by lines; URLs
	// keep their & and < as they are rather than as \u0026.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
