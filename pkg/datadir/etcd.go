package datadir

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"regexp"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
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

// isEtcd reports whether a bbolt database is etcd's: it has etcd's key and meta buckets.
// clusterd's database never has a key bucket.
func isEtcd(tx *bolt.Tx) bool {
	return tx.Bucket([]byte("key")) != nil && tx.Bucket([]byte("meta")) != nil
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
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
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
			main, tombstone, ok := etcdRevision(k)
			if !ok {
				return fmt.Errorf("key bucket: %q is not a revision", k)
			}
			key, ok := etcdKey(v)
			if !ok {
				return fmt.Errorf("key bucket: revision %d holds no key-value", main)
			}
			info.Revision = main
			if tombstone {
				delete(alive, string(key))
			} else {
				alive[string(key)] = true
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

// etcdRevision reads a key of etcd's key bucket: the main revision (8 bytes, big-endian), '_',
// the sub revision (8 bytes), and a trailing 't' on a tombstone.
func etcdRevision(k []byte) (main int64, tombstone, ok bool) {
	if (len(k) != 17 && len(k) != 18) || k[8] != '_' {
		return 0, false, false
	}
	return int64(binary.BigEndian.Uint64(k[:8])), len(k) == 18 && k[17] == 't', true
}

// etcdKey is the key of an mvccpb.KeyValue (its field 1), read without etcd's API module.
func etcdKey(v []byte) (key []byte, ok bool) {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return nil, false
		}
		v = v[n:]
		if num == 1 && typ == protowire.BytesType {
			key, n = protowire.ConsumeBytes(v)
			if n < 0 {
				return nil, false
			}
			v = v[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, v); n < 0 {
			return nil, false
		}
		v = v[n:]
	}
	return key, true
}
