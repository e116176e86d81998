package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A raft snapshot's data is the membership as applied at its index, encoded as JSON. It lives
// here, beside the rest of what a member writes, so that writing a data dir offline (a
// bootstrap, `clusterctl snapshot restore`) needs this package and not the Ready loop's.
//
// The membership history comes first, written and read here by hand: `{"history":{"deflated":
// "<base64>","dropped":N},` then the rest of the membership's JSON. It is the same JSON that
// encoding/json writes and reads (older members read it, ignoring the history), but encoding/json
// scans every byte of a value, and the history of a long-lived cluster is what a new member
// receives on its way to being ready: cut out here, it costs a base64 pass over the compressed
// records (membership.DeflateRecords), whose size every step of the way (sending, reading,
// writing) is in proportion to. Snapshots of the history's first version hold the records
// uncompressed (`{"history":{"records":"`), and are read as well.

// historyPrefix starts the data of a snapshot whose membership has a history; recordsPrefix
// the data of one the history's first version wrote.
const (
	historyPrefix = `{"history":{"deflated":"`
	recordsPrefix = `{"history":{"records":"`
)

// SnapshotData encodes a membership as a snapshot's data.
func SnapshotData(c *membership.Cluster) ([]byte, error) {
	rest, err := json.Marshal(&membership.Cluster{ID: c.ID, Members: c.Members, Removed: c.Removed})
	if err != nil || c.History.IsZero() {
		return rest, err
	}
	deflated := membership.DeflateRecords(c.History.AppendRecords(nil))
	b := make([]byte, 0, len(historyPrefix)+base64.StdEncoding.EncodedLen(len(deflated))+len(rest)+32)
	b = append(b, historyPrefix...)
	b = base64.StdEncoding.AppendEncode(b, deflated)
	b = append(b, `","dropped":`...)
	b = strconv.AppendUint(b, c.History.Dropped(), 10)
	b = append(b, "},"...)
	return append(b, rest[1:]...), nil
}

// SnapshotCluster decodes the membership a snapshot holds.
func SnapshotCluster(s *raftpb.Snapshot) (*membership.Cluster, error) {
	c, err := snapshotCluster(s.GetData())
	if err != nil {
		return nil, fmt.Errorf("snapshot at %d: %w", s.GetMetadata().GetIndex(), err)
	}
	return c, nil
}

func snapshotCluster(data []byte) (*membership.Cluster, error) {
	c := &membership.Cluster{}
	h, rest, ok := cutHistory(data)
	if !ok {
		// Written by encoding/json (a snapshot of an older version), or not ours: the history,
		// if any, is read by its UnmarshalJSON.
		return c, json.Unmarshal(data, c)
	}
	if err := json.Unmarshal(rest, c); err != nil {
		return nil, err
	}
	c.History = h
	return c, nil
}

// cutHistory reads the history SnapshotData wrote first, and returns it with the rest of the
// membership's JSON as an object of its own; ok is false for data that does not start so.
func cutHistory(data []byte) (h membership.History, rest []byte, ok bool) {
	after, deflated := bytes.CutPrefix(data, []byte(historyPrefix))
	if !deflated {
		var found bool
		if after, found = bytes.CutPrefix(data, []byte(recordsPrefix)); !found {
			return h, nil, false
		}
	}
	end := bytes.IndexByte(after, '"')
	if end < 0 {
		return h, nil, false
	}
	tail, found := bytes.CutPrefix(after[end:], []byte(`","dropped":`))
	if !found {
		return h, nil, false
	}
	digits := 0
	for digits < len(tail) && tail[digits] >= '0' && tail[digits] <= '9' {
		digits++
	}
	dropped, err := strconv.ParseUint(string(tail[:digits]), 10, 64)
	if err != nil || !bytes.HasPrefix(tail[digits:], []byte("},")) {
		return h, nil, false
	}
	records, err := base64.StdEncoding.AppendDecode(nil, after[:end])
	if err == nil && deflated {
		records, err = membership.InflateRecords(records)
	}
	if err != nil {
		return h, nil, false
	}
	if h, err = membership.HistoryFromRecords(records, dropped); err != nil {
		return h, nil, false
	}
	rest = append([]byte{'{'}, tail[digits+2:]...)
	return h, rest, true
}

// ConfState is raft's configuration for a membership: its voters and learners.
func ConfState(c *membership.Cluster) *raftpb.ConfState {
	cs := &raftpb.ConfState{}
	for _, id := range c.Voters() {
		cs.Voters = append(cs.Voters, uint64(id))
	}
	for _, id := range c.Learners() {
		cs.Learners = append(cs.Learners, uint64(id))
	}
	return cs
}
