// Package oldformat writes what versions of clusterd before the membership history wrote, so
// that tests can replay it with this version: conf-change entries without the leader's time or
// the origin of the change, and member databases without the history bucket.
package oldformat

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// ConfChangeEntry is a conf-change entry at index and term as versions before the history wrote
// it: its proposal has the change's kind and member, and no time or origin.
func ConfChangeEntry(index, term uint64, ch membership.Change, typ raftpb.ConfChangeType) (*raftpb.Entry, error) {
	change, err := json.Marshal(struct {
		Kind   membership.Kind   `json:"kind"`
		Member membership.Member `json:"member"`
	}{ch.Kind, ch.Member})
	if err != nil {
		return nil, err
	}
	cc, err := proto.Marshal(&raftpb.ConfChange{Type: typ.Enum(), NodeId: proto.Uint64(uint64(ch.Member.ID)),
		Context: fmt.Appendf(nil, `{"requestID":%d,"term":%d,"change":%s}`, index, term, change)})
	if err != nil {
		return nil, err
	}
	return &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(index), Term: proto.Uint64(term), Data: cc}, nil
}

// DropHistory makes the member database in dataDir what versions before the history wrote: no
// history bucket, no count of dropped events, and the stored snapshot's data the membership as
// encoding/json wrote it, without a history (the names are stored ones, pkg/storage/storage.go).
func DropHistory(dataDir string) error {
	db, err := bolt.Open(filepath.Join(dataDir, storage.FileName), 0o600, storage.BoltOptions())
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("history")); err != nil {
			return err
		}
		meta := tx.Bucket([]byte("meta"))
		if err := meta.Delete([]byte("history_dropped")); err != nil {
			return err
		}
		v := meta.Get([]byte("snapshot"))
		if v == nil {
			return nil
		}
		snap := &raftpb.Snapshot{}
		if err := proto.Unmarshal(v, snap); err != nil {
			return err
		}
		c, err := storage.SnapshotCluster(snap)
		if err != nil {
			return err
		}
		if snap.Data, err = json.Marshal(&membership.Cluster{ID: c.ID, Members: c.Members, Removed: c.Removed}); err != nil {
			return err
		}
		if v, err = proto.Marshal(snap); err != nil {
			return err
		}
		return meta.Put([]byte("snapshot"), v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
