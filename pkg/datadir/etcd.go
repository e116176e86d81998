package datadir

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"regexp"
	"strconv"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// EtcdSnapshotInfo is what `etcdutl snapshot status` shows for a snapshot taken from etcd, with
// its JSON names: the result of ReadStatus for such a file, distinct from clusterd's
// SnapshotInfo, which describes a membership rather than a key space.
type EtcdSnapshotInfo struct {
	// Hash is etcdutl's: the CRC-32 (Castagnoli) of every bucket's name, keys and values in
	// order, not a checksum of the file.
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"` // the main revision of the last key in the key bucket
	TotalKey  int    `json:"totalKey"` // the keys alive at Revision
	TotalSize int64  `json:"totalSize"`
	Version   string `json:"version"` // the storage version (etcd 3.6 on); empty before
}

// EtcdSnapshotError is an etcd snapshot given where a clusterd one is needed (snapshot restore):
// clusterd's restore does not read etcd's key space, and etcdutl restores etcd's.
type EtcdSnapshotError struct{ Path string }

func (e *EtcdSnapshotError) Error() string {
	return fmt.Sprintf("snapshot file %s was taken from etcd: clusterctl restores clusterd snapshots; restore an etcd snapshot with etcdutl snapshot restore", e.Path)
}

// storageVersion is the form etcd writes its storage version in (a semantic version); anything
// else is not shown, as etcdutl shows nothing for what it cannot parse.
var storageVersion = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// etcdStatus computes what etcdutl 3.7 snapshot status shows, as it computes it: the hash over
// every bucket, the revision of the last key in the key bucket, and the number of keys alive at
// that revision (a tombstone revision deletes its key). A key bucket entry etcd could not read
// either makes the file unusable.
func etcdStatus(tx *bolt.Tx) (*EtcdSnapshotInfo, error) {
	info := &EtcdSnapshotInfo{TotalSize: tx.Size()}
	if v := tx.Bucket([]byte("meta")).Get([]byte("storageVersion")); storageVersion.Match(v) {
		info.Version = string(v)
	}
	h := crc32.New(castagnoli())
	alive := map[string]bool{}
	c := tx.Cursor()
	for name, _ := c.First(); name != nil; name, _ = c.Next() {
		b := tx.Bucket(name)
		if b == nil {
			return nil, fmt.Errorf("%q at the top level is not a bucket", name)
		}
		h.Write(name)
		isKey := string(name) == "key"
		err := b.ForEach(func(k, v []byte) error {
			h.Write(k)
			h.Write(v)
			if !isKey {
				return nil
			}
			// The main revision (8 bytes, big-endian), '_', the sub revision (8 bytes), and a
			// trailing 't' on a tombstone.
			if (len(k) != 17 && len(k) != 18) || k[8] != '_' {
				return fmt.Errorf("key bucket: %q is not a revision", k)
			}
			main, tombstone := int64(binary.BigEndian.Uint64(k[:8])), len(k) == 18 && k[17] == 't'
			kv := &mvccpb.KeyValue{}
			if proto.Unmarshal(v, kv) != nil {
				return fmt.Errorf("key bucket: revision %d holds no key-value", main)
			}
			info.Revision = main
			if tombstone {
				delete(alive, string(kv.GetKey()))
			} else {
				alive[string(kv.GetKey())] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	info.TotalKey = len(alive)
	info.Hash = h.Sum32()
	return info, nil
}

// etcdBackend is what etcd's backend (bbolt) says of the membership.
type etcdBackend struct {
	Cluster         *membership.Cluster
	ConfState       *raftpb.ConfState // nil before etcd 3.5
	ConsistentIndex uint64
}

// readEtcdBackend reads etcd's members, members_removed and meta buckets in tx.
func readEtcdBackend(tx *bolt.Tx) (*etcdBackend, error) {
	meta := tx.Bucket([]byte("meta"))
	if meta == nil {
		return nil, storage.ErrNotBootstrapped
	}
	b := &etcdBackend{Cluster: membership.NewCluster(0, nil)}
	if v := meta.Get([]byte("consistent_index")); len(v) == 8 {
		b.ConsistentIndex = binary.BigEndian.Uint64(v)
	}
	if v := meta.Get([]byte("confState")); v != nil {
		b.ConfState = &raftpb.ConfState{}
		// etcd writes it with encoding/json (its generated struct's tags), not protojson.
		if err := json.Unmarshal(v, b.ConfState); err != nil {
			return nil, fmt.Errorf("%s: meta confState: %v", etcdBackendPath, err)
		}
	}
	err := forEachID(tx, "members", func(id membership.ID, v []byte) error {
		m := &membership.Member{}
		if err := json.Unmarshal(v, m); err != nil {
			return fmt.Errorf("%s: members: member %s: %v", etcdBackendPath, id, err)
		}
		m.ID = id
		// etcd's backend has no started flag: a member that published its name has started.
		m.Started = m.Name != ""
		b.Cluster.Members[id] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.Cluster.Removed = membership.NewIDSet() // b's own: filled in place
	err = forEachID(tx, "members_removed", func(id membership.ID, _ []byte) error {
		b.Cluster.Removed[id] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// forEachID calls f with each key of etcd's bucket name, read as the member ID it is (hex), and
// its value; a bucket that is not there has none.
func forEachID(tx *bolt.Tx, name string, f func(membership.ID, []byte) error) error {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		id, err := strconv.ParseUint(string(k), 16, 64)
		if err != nil {
			return fmt.Errorf("%s: %s: key %q is not a member ID", etcdBackendPath, name, k)
		}
		return f(membership.ID(id), v)
	})
}
