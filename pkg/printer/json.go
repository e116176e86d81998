package printer

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// The JSON schema (docs/output.md). Field names follow etcdctl's where etcdctl has the field,
// so jq filters written for etcdctl keep working; IDs are strings. Never rename a field. A
// result this package defines carries its schema in its own tags; a result of package client
// has one JSON type here, made by one function.

// ID is a member or cluster ID in a result this package defines: 16 hex digits in every format,
// JSON included, where it is a string because JSON numbers above 2^53 are rounded by jq and
// JavaScript.
type ID uint64

func (id ID) String() string { return client.FormatID(uint64(id)) }

// MarshalText makes an ID a JSON string.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// list is a list that prints as [] rather than null when empty: every field is always there.
type list[T any] []T

func (l list[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return marshal([]T(l))
}

// memberList is members in JSON, each as memberJSON.
type memberList []client.Member

func (ms memberList) MarshalJSON() ([]byte, error) { return marshal(each(ms, toJSONMember)) }

type headerJSON struct {
	ClusterID string `json:"cluster_id"`
	MemberID  string `json:"member_id"`
	RaftTerm  uint64 `json:"raft_term"`
}

type memberJSON struct {
	ID         string       `json:"ID"`
	Name       string       `json:"name"`
	Started    bool         `json:"started"`
	PeerURLs   list[string] `json:"peerURLs"`
	ClientURLs list[string] `json:"clientURLs"`
	IsLearner  bool         `json:"isLearner"`
	IsLeader   bool         `json:"isLeader"`
}

type listJSON struct {
	Header  headerJSON `json:"header"`
	Members memberList `json:"members"`
}

type changeJSON struct {
	Header  headerJSON `json:"header"`
	ID      string     `json:"ID"`
	Members memberList `json:"members"`
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
	return memberJSON{ID: client.FormatID(m.ID), Name: m.Name, Started: m.Started, PeerURLs: m.PeerURLs,
		ClientURLs: m.ClientURLs, IsLearner: m.IsLearner, IsLeader: m.IsLeader}
}

func toJSONChange(r *client.ChangeResult) changeJSON {
	return changeJSON{Header: toJSONHeader(r.Header), ID: client.FormatID(r.ID), Members: r.Members}
}

// each is f of every item, [] rather than null for none.
func each[T, U any](items []T, f func(T) U) []U {
	out := make([]U, len(items))
	for i, item := range items {
		out[i] = f(item)
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	// One line, like etcdctl, so the output can be appended to a log or split by lines; URLs
	// keep their & and < as they are rather than as \u0026.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// marshal is v as writeJSON writes it, for a MarshalJSON method: the encoder that calls the
// method drops the line's end.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := writeJSON(&b, v)
	return b.Bytes(), err
}
