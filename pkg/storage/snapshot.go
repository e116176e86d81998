package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A raft snapshot's data is the membership as applied at its index, history included: a
// clusterd.v2.MembershipSnapshot (pkg/wire/clusterdpb), the generated message that declares it.
// It lives here, beside the rest of what a member writes, so that writing a data dir offline (a
// bootstrap, `clusterctl snapshot restore`) needs this package and not the Ready loop's.
//
// The history is the compressed blocks it keeps (membership.History.DeflatedBlocks), shared, not
// compressed again (the oldest whole, with the count of its events dropped), and the member that
// receives them keeps each as it came, to inflate it when the history is read: a long-lived
// cluster's history is most of what a new member receives on its way to being ready, and
// recording the next change at the bound drops from the oldest block alone. history_events
// counts the events kept, so that data cut between two blocks is refused. The message's first
// version carried the blocks end to end as one DEFLATE stream (history), which is read as one
// block.
//
// Earlier versions wrote JSON, which always starts with '{' and which a protobuf message of
// these fields never does (its first byte is a field's tag): `{"history":{"deflated":"<base64>",
// "dropped":N,"events":K},` then the rest of the membership as encoding/json wrote it, or, from
// the history's first versions, the records as one DEFLATE stream without "events", or
// uncompressed (`{"history":{"records":"`), or no history at all. Those are read as before, so
// that a data dir or a snapshot file of an earlier version still opens.

// historyPrefix starts the data of an earlier version's snapshot whose membership has a history;
// recordsPrefix the data of one the history's first version wrote.
const (
	historyPrefix = `{"history":{"deflated":"`
	recordsPrefix = `{"history":{"records":"`
)

// SnapshotData encodes a membership as a snapshot's data.
func SnapshotData(c *membership.Cluster) ([]byte, error) {
	s := &pb.MembershipSnapshot{Cluster: wire.ClusterToProto(c)}
	if !c.History.IsZero() {
		blocks, dropped := c.History.DeflatedBlocks()
		s.HistoryDropped = dropped
		for _, b := range blocks {
			s.HistoryEvents += uint64(b.Events - b.Skip)
			s.HistoryBlocks = append(s.HistoryBlocks, &pb.HistoryBlock{Events: uint32(b.Events), Skip: uint32(b.Skip), Deflated: b.Deflated})
		}
	}
	return proto.Marshal(s)
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
	if len(data) > 0 && data[0] == '{' {
		return jsonSnapshotCluster(data)
	}
	s := &pb.MembershipSnapshot{}
	if err := proto.Unmarshal(data, s); err != nil {
		return nil, err
	}
	if s.GetCluster() == nil {
		return nil, errors.New("no membership: not a snapshot's data, or cut short")
	}
	c := wire.ClusterFromProto(s.GetCluster())
	h, err := snapshotHistoryOf(s)
	if err != nil {
		return nil, err
	}
	c.History = h
	return c, nil
}

// snapshotHistoryOf reads the history of a MembershipSnapshot: its blocks, or the one stream
// the message's first version carried.
func snapshotHistoryOf(s *pb.MembershipSnapshot) (membership.History, error) {
	events := s.GetHistoryEvents()
	if events > math.MaxInt32 {
		return membership.History{}, fmt.Errorf("history of %d events", events)
	}
	if s.GetHistory() != nil {
		return membership.HistoryFromDeflated(s.GetHistory(), int(events), s.GetHistoryDropped())
	}
	blocks := make([]membership.DeflatedBlock, len(s.GetHistoryBlocks()))
	sum := uint64(0)
	for i, b := range s.GetHistoryBlocks() {
		blocks[i] = membership.DeflatedBlock{Events: int(b.GetEvents()), Skip: int(b.GetSkip()), Deflated: b.GetDeflated()}
		// A skip of more than the block holds is refused below (HistoryFromBlocks).
		sum += uint64(b.GetEvents()) - min(uint64(b.GetSkip()), uint64(b.GetEvents()))
	}
	if sum != events {
		return membership.History{}, fmt.Errorf("history of %d events in blocks of %d: cut short", events, sum)
	}
	return membership.HistoryFromBlocks(blocks, s.GetHistoryDropped())
}

// snapshotHistory is the history that the data of a stored snapshot holds, in any version's
// form: none for no snapshot, or for data that does not decode, which the member's own
// membership does not come from and which datadir check reports.
func snapshotHistory(data []byte) membership.History {
	c, err := snapshotCluster(data)
	if err != nil {
		return membership.History{}
	}
	return c.History
}

// jsonSnapshotCluster decodes the JSON data of an earlier version's snapshot.
func jsonSnapshotCluster(data []byte) (*membership.Cluster, error) {
	c := &membership.Cluster{}
	h, rest, ok := cutHistory(data)
	if !ok {
		// Written by encoding/json (a version before the history was cut out by hand), or
		// not ours: the history, if any, is read by its UnmarshalJSON.
		return c, json.Unmarshal(data, c)
	}
	if err := json.Unmarshal(rest, c); err != nil {
		return nil, err
	}
	c.History = h
	return c, nil
}

// cutHistory reads the history an earlier version's SnapshotData wrote first, and returns it
// with the rest of the membership's JSON as an object of its own; ok is false for data that does
// not start so. Of a counted history it checks only the framing: its records are inflated and
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
