package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/fsync"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// FileName is the database's name inside the data directory.
const FileName = "member.db"

var (
	bucketMeta    = []byte("meta")
	bucketLog     = []byte("log")
	bucketMembers = []byte("members")
	bucketRemoved = []byte("removed")
	// bucketHistory is missing after each snapshot until the next change is recorded: read as
	// empty, made by the first write that records a change.
	bucketHistory = []byte("history")

	keyMemberID  = []byte("member_id")
	keyClusterID = []byte("cluster_id")
	keyName      = []byte("name")
	keyHardState = []byte("hard_state")
	keySnapshot  = []byte("snapshot")
	keyApplied   = []byte("applied_index")
	keyTombstone = []byte("tombstone")
	keyJoinPeers = []byte("join_peers")
	keyDropped   = []byte("history_dropped")
	keyFormat    = []byte("format")
)

// dataFormat is the format of the member.db this version writes and reads, in meta's format
// key. Development builds before the first release wrote none (format 0), and their history in
// other encodings: their databases are refused (FormatError), not read. Stored: a released
// format is read by every later version.
const dataFormat = 1

// FormatError is a member.db in a format this version does not read: one written by a
// development build before the first release, or by a later version. Nothing was written to it.
type FormatError struct {
	Path   string
	Format uint64
}

func (e *FormatError) Error() string { return e.Path + " " + e.Reason() }

// Reason is the error without the file's path.
func (e *FormatError) Reason() string {
	by := "a development build before the first release"
	if e.Format > dataFormat {
		by = "a later version"
	}
	return fmt.Sprintf("is in data format %d, of %s; this version reads format %d only", e.Format, by, dataFormat)
}

// ErrNotBootstrapped is returned by Open on a data directory that holds no member.
var ErrNotBootstrapped = errors.New("data directory holds no member")

// Identity is who this member is, fixed when its data directory is first written.
type Identity struct {
	MemberID  membership.ID
	ClusterID membership.ID
	Name      string
}

// State is everything a member needs to restart.
type State struct {
	Identity
	Removed   bool
	HardState *raftpb.HardState
	Snapshot  *raftpb.Snapshot
	Entries   []*raftpb.Entry
	Applied   uint64
	Cluster   *membership.Cluster
	// JoinPeers is the membership a joining member was shown by the cluster: the peers it can
	// reach before its first snapshot arrives, also after a restart. Not applied state.
	JoinPeers *membership.Cluster
}

// Update is what one pass of the Ready loop makes durable, all in one transaction.
type Update struct {
	Snapshot *raftpb.Snapshot // a snapshot received or taken; nil if none
	ResetLog bool             // a snapshot was received: it replaces the whole log
	// TruncateFrom, when set, deletes the entries from this index on before Entries are written.
	TruncateFrom uint64
	HardState    *raftpb.HardState
	Entries      []*raftpb.Entry // replace any stored entries from Entries[0].Index on
	CompactTo    uint64          // delete entries below this index
	Applied      uint64          // zero leaves the applied index as it is
	// Cluster replaces the stored members. The stored removed IDs only grow: a Cluster that
	// comes with a Snapshot (a new database, a snapshot from the leader) brings its whole removed
	// set; otherwise only the IDs in Removed, those the applied changes removed, are added, so a
	// change costs the same however long the cluster's history.
	Cluster *membership.Cluster
	Removed []membership.ID
	// HistoryAdded is how many events the applied changes added to Cluster's history: only
	// those are written, and those the bound dropped are deleted, so a change costs the same
	// however long the history. A Snapshot holds the history up to it (history.go): with one,
	// only the events after it are kept beside it.
	HistoryAdded int
	Tombstone    bool
	JoinPeers    *membership.Cluster // written once, when a member joins
}

// Store is an open member database.
type Store struct {
	db *bolt.DB
}

// Exists reports whether dir already holds a member's database.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, FileName))
	return err == nil
}

// Create makes dir and a database in it for a new member. The first write happens only here,
// so a refused start leaves no file behind; and the database is built under a temporary name and
// renamed into place once complete, so a start killed half-way leaves no member.db either, and
// the same start can simply run again.
func Create(dir string, id Identity, snap *raftpb.Snapshot, hs *raftpb.HardState, c, joinPeers *membership.Cluster) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, FileName+".tmp")
	// Left behind by a start that was killed before the rename: nothing in it was ever used.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := build(tmp, id, snap, hs, c, joinPeers); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := fsync.Dir(dir); err != nil {
		return nil, err
	}
	return open(dir)
}

// build writes a complete member database at path, and syncs it once, at the end. The file is
// only ever used once it is complete and renamed into place, so bbolt's own syncs of each step
// (growing the file, then the pages, then the meta page, of each transaction) buy nothing here:
// a crash half-way leaves a temporary file the next start discards. bbolt still syncs the empty
// file it starts from.
func build(path string, id Identity, snap *raftpb.Snapshot, hs *raftpb.HardState, c, joinPeers *membership.Cluster) error {
	opts := BoltOptions()
	opts.NoSync, opts.NoGrowSync = true, true
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketLog, bucketMembers, bucketRemoved, bucketHistory} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		for _, kv := range []struct{ k, v []byte }{
			{keyFormat, u64(dataFormat)}, {keyMemberID, u64(uint64(id.MemberID))},
			{keyClusterID, u64(uint64(id.ClusterID))}, {keyName, []byte(id.Name)},
		} {
			if err := tx.Bucket(bucketMeta).Put(kv.k, kv.v); err != nil {
				return err
			}
		}
		return save(tx, Update{Snapshot: snap, HardState: hs, Cluster: c, Applied: snapIndex(snap), JoinPeers: joinPeers})
	})
	if err == nil {
		// Made initialSize long here, where one sync covers it, rather than grown at the
		// member's first commits, each growth with a sync of its own (BoltOptions).
		err = os.Truncate(path, initialSize)
	}
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// Open opens the database of an existing member.
func Open(dir string) (*Store, error) {
	if !Exists(dir) {
		return nil, ErrNotBootstrapped
	}
	return open(dir)
}

func open(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	// Opening for writing rebuilds the free list from every page, in a goroutine whose fault on a
	// damaged page ends the process; and a 0-byte file would become a new empty database, hiding
	// what happened to the old one. So the file is checked first, writing nothing.
	err := CheckFile(path)
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("data directory %s is in use by another process", dir)
	}
	if err != nil {
		return nil, err
	}
	db, err := guard(func() (*bolt.DB, error) { return bolt.Open(path, 0o600, BoltOptions()) })
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("data directory %s is in use by another process", dir)
	}
	if err != nil {
		return nil, &CorruptError{Path: path, Reason: err.Error()}
	}
	return &Store{db: db}, nil
}

// BoltOptions are the options of every member.db; exported so that make bench measures a bbolt
// commit exactly as a member makes one.
func BoltOptions() *bolt.Options {
	return &bolt.Options{
		// A second process on the same data directory must fail rather than wait forever.
		Timeout:        time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		// Mapped at initialSize from the start, as etcd maps its backend large: otherwise
		// bbolt maps 32 KiB and doubles it as the file grows, each time unmapping and
		// mapping again, and each commit past the file's end truncates it longer and
		// fsyncs once more. A new member's first commits are those, with the snapshot it
		// is sent, on its way to being ready.
		InitialMmapSize: initialSize,
	}
}

// initialSize is the size of a new member.db (sparse: bbolt writes only the pages it uses)
// and of its mapping: room for the snapshot a new member receives (most of it a membership
// history at its default bound: docs/benchmarks.md) and the log up to a few snapshots.
const initialSize = 1 << 20

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Load reads the whole state back. A database without a member's buckets, or with damaged
// pages, is a *CorruptError; one of an earlier format a *FormatError.
func (s *Store) Load() (*State, error) {
	var st *State
	_, err := guard(func() (struct{}, error) {
		return struct{}{}, s.db.View(func(tx *bolt.Tx) (err error) {
			st, err = loadTx(tx)
			return err
		})
	})
	return st, loadError(s.db.Path(), err)
}

// loadError is err, met reading the database at path, as a *CorruptError unless it says
// something else already.
func loadError(path string, err error) error {
	var ce *CorruptError
	var fe *FormatError
	if err == nil || errors.Is(err, ErrNotBootstrapped) || errors.Is(err, ErrInUse) || errors.As(err, &ce) || errors.As(err, &fe) {
		return err
	}
	return &CorruptError{Path: path, Reason: err.Error()}
}

// LoadFile reads the whole state of the member database in dir without writing anything: the
// file is checked and opened read-only (ViewFile), no lock file or directory is created, and a
// database another process holds for writing (a running member's) is ErrInUse. It is how
// offline tools read a data directory they must leave exactly as it is.
func LoadFile(dir string) (*State, error) {
	if !Exists(dir) {
		return nil, ErrNotBootstrapped
	}
	path := filepath.Join(dir, FileName)
	var st *State
	// ViewFile guards the read: a fault in loadTx is a *CorruptError too.
	err := ViewFile(path, func(tx *bolt.Tx) (err error) {
		st, err = loadTx(tx)
		return err
	})
	return st, loadError(path, err)
}

// loadTx reads the whole state in one read transaction. A database without a member's
// buckets is a *CorruptError.
func loadTx(tx *bolt.Tx) (*State, error) {
	st := &State{}
	err := func() error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return ErrNotBootstrapped
		}
		for _, b := range [][]byte{bucketLog, bucketMembers, bucketRemoved} {
			if tx.Bucket(b) == nil {
				return &CorruptError{Path: tx.DB().Path(), Reason: fmt.Sprintf("it has no %s bucket: not a member's database", b)}
			}
		}
		if f := getUint(meta, keyFormat); f != dataFormat {
			return &FormatError{Path: tx.DB().Path(), Format: f}
		}
		st.MemberID = membership.ID(getUint(meta, keyMemberID))
		st.ClusterID = membership.ID(getUint(meta, keyClusterID))
		st.Name = string(meta.Get(keyName))
		st.Removed = meta.Get(keyTombstone) != nil
		if v := meta.Get(keyJoinPeers); v != nil {
			st.JoinPeers = &membership.Cluster{}
			if err := json.Unmarshal(v, st.JoinPeers); err != nil {
				return fmt.Errorf("join peers: %w", err)
			}
		}
		st.Applied = getUint(meta, keyApplied)
		st.HardState = &raftpb.HardState{}
		if v := meta.Get(keyHardState); v != nil {
			if err := proto.Unmarshal(v, st.HardState); err != nil {
				return fmt.Errorf("hard state: %w", err)
			}
		}
		if v := meta.Get(keySnapshot); v != nil {
			st.Snapshot = &raftpb.Snapshot{}
			if err := proto.Unmarshal(v, st.Snapshot); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
		err := tx.Bucket(bucketLog).ForEach(func(k, v []byte) error {
			e := &raftpb.Entry{}
			if err := proto.Unmarshal(v, e); err != nil {
				return fmt.Errorf("entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			st.Entries = append(st.Entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		if st.Cluster, err = loadCluster(tx, st.ClusterID); err != nil {
			return err
		}
		st.Cluster.History, err = loadHistory(tx, st.Snapshot.GetData())
		return err
	}()
	return st, err
}

// Save makes u durable in one transaction.
func (s *Store) Save(u Update) error {
	return s.db.Update(func(tx *bolt.Tx) error { return save(tx, u) })
}

func save(tx *bolt.Tx, u Update) error {
	meta := tx.Bucket(bucketMeta)
	if u.Snapshot != nil {
		if err := putProto(meta, keySnapshot, u.Snapshot); err != nil {
			return err
		}
	}
	if err := saveLog(tx.Bucket(bucketLog), u); err != nil {
		return err
	}
	if u.HardState != nil {
		if err := putProto(meta, keyHardState, u.HardState); err != nil {
			return err
		}
	}
	if u.Cluster != nil {
		removed := u.Removed
		if u.Snapshot != nil {
			// A snapshot brings the whole removed set, as large as the cluster's history: written
			// in key order, bbolt fills its pages one after the other instead of splitting them
			// as keys in the set's order would.
			removed = slices.Sorted(u.Cluster.Removed.All())
		}
		if err := saveCluster(tx, u.Cluster, removed); err != nil {
			return err
		}
	}
	if err := saveHistory(tx, u); err != nil {
		return err
	}
	if u.Applied > 0 {
		if err := putUint(meta, keyApplied, u.Applied); err != nil {
			return err
		}
	}
	if u.JoinPeers != nil {
		v, err := json.Marshal(u.JoinPeers)
		if err != nil {
			return err
		}
		if err := meta.Put(keyJoinPeers, v); err != nil {
			return err
		}
	}
	if u.Tombstone {
		if err := meta.Put(keyTombstone, []byte{1}); err != nil {
			return err
		}
	}
	return nil
}

// saveLog applies u's changes to the log, in this order: a received snapshot empties it, a
// truncation cuts it, new entries overwrite it from their first index on, and compaction drops
// what a snapshot taken now covers.
func saveLog(log *bolt.Bucket, u Update) error {
	if u.ResetLog {
		if err := deleteRange(log, 0, 0); err != nil {
			return err
		}
	}
	if u.TruncateFrom > 0 {
		if err := deleteRange(log, u.TruncateFrom, 0); err != nil {
			return err
		}
	}
	if len(u.Entries) > 0 {
		// A new entry at index i overrides whatever the log held from i on.
		if err := deleteRange(log, u.Entries[0].GetIndex(), 0); err != nil {
			return err
		}
		for _, e := range u.Entries {
			if err := putProto(log, u64(e.GetIndex()), e); err != nil {
				return err
			}
		}
	}
	if u.CompactTo > 0 {
		return deleteRange(log, 0, u.CompactTo)
	}
	return nil
}

func putProto(b *bolt.Bucket, k []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(k, v)
}

// deleteRange deletes keys in [from, to); to == 0 means to the end.
func deleteRange(b *bolt.Bucket, from, to uint64) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(u64(from)); k != nil; k, _ = c.Next() {
		if to != 0 && binary.BigEndian.Uint64(k) >= to {
			break
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func snapIndex(s *raftpb.Snapshot) uint64 { return s.GetMetadata().GetIndex() }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func putUint(b *bolt.Bucket, k []byte, v uint64) error { return b.Put(k, u64(v)) }

func getUint(b *bolt.Bucket, k []byte) uint64 {
	if v := b.Get(k); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// Size returns the database's size as etcd reports its backend's: the pages up to bbolt's
// high-water mark, and of them those in use (not free). The file itself is longer
// (initialSize, sparse) until the pages outgrow it.
func (s *Store) Size() (size, inUse int64) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	free := int64(s.db.Stats().FreePageN) * int64(s.db.Info().PageSize)
	return size, max(size-free, 0)
}

// WriteTo writes a consistent copy of the whole database to w and returns its size: a snapshot
// that can be opened as a member database.
func (s *Store) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
