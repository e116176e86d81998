package datadir

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// CheckResult is what Check found in one data directory or snapshot file.
type CheckResult struct {
	Path string
	Kind string // KindClusterd or KindEtcd
	// Snapshot says Path is a snapshot file rather than a data directory.
	Snapshot bool
	// Compared names each pair of places that were compared, in order, as the docs name them.
	Compared []string
	// Problems are the disagreements, one per member and place; none when sound.
	Problems []Problem
}

// Sound reports whether nothing disagreed.
func (r *CheckResult) Sound() bool { return len(r.Problems) == 0 }

// Problem is one disagreement about one member.
type Problem struct {
	MemberID membership.ID
	Text     string // names both sides
}

func (p Problem) String() string { return fmt.Sprintf("member %s: %s", p.MemberID, p.Text) }

// UnsoundError is a check that found disagreements in Paths of the paths it was given: the
// membership stored is not the one raft believes, or breaks a rule every membership keeps.
type UnsoundError struct {
	Problems, Paths int
}

func (e *UnsoundError) Error() string {
	return fmt.Sprintf("the stored membership is unsound: %d %s in %d %s",
		e.Problems, plural(e.Problems, "disagreement"), e.Paths, plural(e.Paths, "path"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Check checks the membership stored in a stopped member's data directory or in a snapshot
// file, clusterd's or etcd's, against raft's configuration stored in the same place, and the
// rules every membership keeps (no removed ID listed as a member, peer URLs for every member,
// one name per member). It writes nothing into the directory; a snapshot file's database is
// read from a temporary copy, as snapshot status reads it. Errors are ReadDir's for a
// directory and ReadStatus's for a file; disagreements are not errors but Problems.
func Check(path string) (*CheckResult, error) {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		return checkSnapshot(path)
	}
	st, err := ReadDir(path)
	if err != nil {
		return nil, err
	}
	return st.Check, nil
}

// checkSnapshot checks the database of a snapshot file (clusterd's or etcd's snapshot save).
func checkSnapshot(path string) (*CheckResult, error) {
	var b *etcdBackend
	st, _, _, err := readSnapshotDB(path, func(tx *bolt.Tx) (err error) {
		b, err = readEtcdBackend(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := &CheckResult{Path: path, Kind: KindEtcd}
	if b != nil {
		checkEtcdBackend(r, b)
	} else {
		r = checkClusterd(path, st)
	}
	r.Snapshot = true
	return r, nil
}

// checkClusterd checks a clusterd member's state. clusterd stores raft's configuration only in
// its snapshot, beside the membership of the same index; after it, raft's configuration is by
// construction the applied membership's (raftnode's invariant), so the applied membership is
// compared with it only when nothing was applied since the snapshot.
func checkClusterd(path string, st *storage.State) *CheckResult {
	r := &CheckResult{Path: path, Kind: KindClusterd}
	r.checkTerm(st.MemberID, "the HardState", st.HardState.GetTerm())
	snap := st.Snapshot
	at := snap.GetMetadata().GetIndex()
	if snap != nil {
		where := fmt.Sprintf("the snapshot's configuration (index %d)", at)
		if sc, err := storage.SnapshotCluster(snap); err != nil {
			r.Problems = append(r.Problems, Problem{Text: "the snapshot's membership does not decode: " + err.Error()})
		} else {
			r.compare("the snapshot's membership", storage.ConfState(sc), where, snap.GetMetadata().GetConfState())
		}
		if st.Applied == at {
			r.compare("the members bucket", storage.ConfState(st.Cluster), where, snap.GetMetadata().GetConfState())
		}
	}
	r.rules("the members bucket", st.Cluster)
	return r
}

// checkEtcd checks an etcd member's backend, WAL and newest snap file.
func checkEtcd(path string, b *etcdBackend, w *walLog, snap *raftpb.SnapshotMetadata, snapName string) *CheckResult {
	r := &CheckResult{Path: path, Kind: KindEtcd}
	r.checkTerm(membership.ID(w.NodeID), "the WAL's HardState", w.HardState.GetTerm())
	checkEtcdBackend(r, b)
	if cs, ok := w.confStateAt(b.ConsistentIndex); ok {
		r.compare("the members bucket", storage.ConfState(b.Cluster), fmt.Sprintf("the WAL's configuration at index %d", b.ConsistentIndex), cs)
	}
	if snap != nil {
		if cs, ok := w.confStateAt(snap.GetIndex()); ok {
			r.compare(fmt.Sprintf("snap file %s", snapName), snap.GetConfState(),
				fmt.Sprintf("the WAL's configuration at index %d", snap.GetIndex()), cs)
		}
	}
	return r
}

// checkEtcdBackend checks etcd's members and members_removed buckets against its meta
// confState, and the rules.
func checkEtcdBackend(r *CheckResult, b *etcdBackend) {
	if b.ConfState != nil {
		r.compare("the members bucket", storage.ConfState(b.Cluster), fmt.Sprintf("the backend's confState (index %d)", b.ConsistentIndex), b.ConfState)
	}
	r.rules("the members bucket", b.Cluster)
}

// confRoles is each ID's role in raft's configuration: "voter" or "learner".
func confRoles(cs *raftpb.ConfState) map[membership.ID]string {
	out := map[membership.ID]string{}
	for _, id := range cs.GetVoters() {
		out[membership.ID(id)] = "voter"
	}
	for _, id := range cs.GetLearners() {
		out[membership.ID(id)] = "learner"
	}
	return out
}

// compare records every member whose role in raft's configuration a (held in place side: a
// membership's is storage.ConfState's) differs from its role in b (held in place other).
func (r *CheckResult) compare(side string, a *raftpb.ConfState, other string, b *raftpb.ConfState) {
	r.Compared = append(r.Compared, side+" with "+other)
	ra, rb := confRoles(a), confRoles(b)
	all := maps.Clone(ra)
	maps.Copy(all, rb)
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if ra[id] != rb[id] {
			r.Problems = append(r.Problems, Problem{MemberID: id,
				Text: fmt.Sprintf("%s says %s, %s says %s", side, cmp.Or(ra[id], "no such member"), other, cmp.Or(rb[id], "no such member"))})
		}
	}
	if len(b.GetVotersOutgoing()) > 0 || len(b.GetLearnersNext()) > 0 {
		r.Problems = append(r.Problems, Problem{Text: other + " is a joint configuration, which neither clusterd nor etcd makes"})
	}
}

// rules records the members of c that break a rule every membership keeps.
func (r *CheckResult) rules(side string, c *membership.Cluster) {
	names := map[string][]membership.ID{}
	for _, m := range c.List() {
		if c.IsRemoved(m.ID) {
			r.Problems = append(r.Problems, Problem{MemberID: m.ID,
				Text: side + " lists it as a member, the removed IDs list it as removed"})
		}
		if len(m.PeerURLs) == 0 {
			r.Problems = append(r.Problems, Problem{MemberID: m.ID, Text: side + " gives it no peer URLs"})
		}
		if m.Name != "" {
			names[m.Name] = append(names[m.Name], m.ID)
		}
	}
	for _, m := range c.List() {
		if others := names[m.Name]; len(others) > 1 {
			var list []string
			for _, id := range others {
				if id != m.ID {
					list = append(list, id.String())
				}
			}
			r.Problems = append(r.Problems, Problem{MemberID: m.ID,
				Text: fmt.Sprintf("%s names it %q, as it names %s", side, m.Name, strings.Join(list, ", "))})
		}
	}
}

// apply applies one conf change to cs as raft does for etcd's (never joint) changes.
func apply(cs *raftpb.ConfState, cc *raftpb.ConfChange) {
	id, t := cc.GetNodeId(), cc.GetType()
	if id == 0 || t != raftpb.ConfChangeAddNode && t != raftpb.ConfChangeAddLearnerNode && t != raftpb.ConfChangeRemoveNode {
		return
	}
	is := func(x uint64) bool { return x == id }
	cs.Voters, cs.Learners = slices.DeleteFunc(cs.Voters, is), slices.DeleteFunc(cs.Learners, is)
	switch t {
	case raftpb.ConfChangeAddNode:
		cs.Voters = append(cs.Voters, id)
	case raftpb.ConfChangeAddLearnerNode:
		cs.Learners = append(cs.Learners, id)
	}
}
