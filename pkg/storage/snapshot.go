package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A raft snapshot's data is the membership as applied at its index, encoded as JSON. It lives
// here, beside the rest of what a member writes, so that writing a data dir offline (a
// bootstrap, `clusterctl snapshot restore`) needs this package and not the Ready loop's.
//
// The membership history comes first, written and read here by hand: `{"history":{"deflated":
// "<base64>","dropped":N,"events":K},` then the rest of the membership's JSON. It is the same
// JSON that encoding/json writes and reads (older members read it, ignoring the history or, for
// the versions that knew the deflated field, reading it whole), but encoding/json scans every byte
// of a value, and the history of a long-lived cluster is what a new member receives on its way
// to being ready: cut out here, it costs a base64 pass over the compressed records. They are the
// compressed blocks the history keeps (membership.History.AppendDeflated), copied, not
// compressed again, and the member that receives them keeps them as they came, counted by
// "events", to inflate them when the history is read. Snapshots of the history's earlier
// versions hold the records as one DEFLATE stream without "events" (read and inflated), or
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
	deflated, events, dropped := c.History.AppendDeflated(nil)
	b := make([]byte, 0, len(historyPrefix)+base64.StdEncoding.EncodedLen(len(deflated))+len(rest)+64)
	b = append(b, historyPrefix...)
	b = base64.StdEncoding.AppendEncode(b, deflated)
	b = append(b, `","dropped":`...)
	b = strconv.AppendUint(b, dropped, 10)
	b = append(b, `,"events":`...)
	b = strconv.AppendInt(b, int64(events), 10)
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
// membership's JSON as an object of its own; ok is false for data that does not start so. Of
// the current version's history it checks only the framing: its records are inflated and
// checked when read (membership.History.Read).
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
	dropped, tail, err := cutNumber(tail)
	if err != nil {
		return h, nil, false
	}
	events := uint64(0)
	counted := false
	if t, found := bytes.CutPrefix(tail, []byte(`,"events":`)); found && deflated {
		if events, tail, err = cutNumber(t); err != nil || events > math.MaxInt32 {
			return h, nil, false
		}
		counted = true
	}
	if !bytes.HasPrefix(tail, []byte("},")) {
		return h, nil, false
	}
	records, err := base64.StdEncoding.AppendDecode(nil, after[:end])
	switch {
	case err != nil:
	case counted:
		h, err = membership.HistoryFromDeflated(records, int(events), dropped)
	case deflated:
		if records, err = membership.InflateRecords(records); err == nil {
			h, err = membership.HistoryFromRecords(records, dropped)
		}
	default:
		h, err = membership.HistoryFromRecords(records, dropped)
	}
	if err != nil {
		return h, nil, false
	}
	rest = append([]byte{'{'}, tail[2:]...)
	return h, rest, true
}

// cutNumber reads the decimal number b starts with, and returns what follows it.
func cutNumber(b []byte) (uint64, []byte, error) {
	digits := 0
	for digits < len(b) && b[digits] >= '0' && b[digits] <= '9' {
		digits++
	}
	n, err := strconv.ParseUint(string(b[:digits]), 10, 64)
	return n, b[digits:], err
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
