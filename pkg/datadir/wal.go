package datadir

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap/snappb"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// etcd's write-ahead log (server/storage/wal), read with etcd's own record types (walpb) but not
// its storage/wal package, which would add zap and Prometheus to clusterctl, a package init every
// command pays for (docs/benchmarks.md). What is read is the framing and five record types; every
// number below is etcd's on-disk format: never change.
const (
	walMetadata = 1 // etcdserverpb.Metadata
	walEntry    = 2 // raftpb.Entry
	walState    = 3 // raftpb.HardState
	walCRC      = 4 // the CRC of everything before, at the start of each file
	walSnapshot = 5 // walpb.Snapshot
)

// castagnoli is etcd's CRC table: the WAL's, chained over the data of every record of every file,
// and a snapshot's hash. crc32 builds it on the first call, not at every start of clusterctl.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// walEntryInfo is what is kept of an entry: its place, and its data only when it changes the
// configuration (the other entries hold the key space, which may be large).
type walEntryInfo struct {
	Index, Term uint64
	ConfChange  *raftpb.ConfChange // nil unless the entry is a conf change
}

// walSnapshotInfo is a snapshot record: the WAL restarts from it.
type walSnapshotInfo struct {
	Index, Term uint64
	ConfState   *raftpb.ConfState // nil before etcd 3.5
}

// walLog is what an etcd member's WAL holds, as etcd's ReadAll would read it from its first
// snapshot record on.
type walLog struct {
	NodeID, ClusterID uint64
	HardState         *raftpb.HardState
	Snapshots         []walSnapshotInfo
	Entries           []walEntryInfo // consecutive indexes, a later entry replacing the log from its index on
	// TornTail says the last file ended in a record that was cut short or fails its CRC: etcd
	// drops it on its next start (a torn write), and so is it here.
	TornTail bool
	// tailFile and tailEnd are the last file and the offset just past its last record; crc is
	// the CRC chained up to there: where and how the next record is written (appendWALState).
	tailFile string
	tailEnd  int64
	crc      uint32
}

// WALError is an etcd WAL that cannot be read: a record that fails its CRC or does not decode
// before the end of the last file, or two files with different member IDs.
type WALError struct {
	File   string
	Reason string
}

func (e *WALError) Error() string { return fmt.Sprintf("WAL file %s: %s", e.File, e.Reason) }

// readWAL reads every WAL file in dir in etcd's order (their names: sequence-index.wal; os.ReadDir
// sorts by name), reading nothing past the first zero length in a file (etcd preallocates its
// files with zeros).
func readWAL(dir string) (*walLog, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, de := range des {
		if !de.IsDir() && strings.HasSuffix(de.Name(), ".wal") {
			files = append(files, filepath.Join(dir, de.Name()))
		}
	}
	if len(files) == 0 {
		return nil, &WALError{File: dir, Reason: "no .wal file"}
	}
	w := &walLog{HardState: &raftpb.HardState{}}
	for i, f := range files {
		// Only the last file may end torn: the loop ends with it.
		if err := w.readFile(f, i == len(files)-1); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// readFile decodes the records of one file, carrying the CRC on from the file before. A record
// that is cut short or fails its CRC ends the log when the file is the last (etcd's torn write);
// anywhere else it is a *WALError.
func (w *walLog) readFile(path string, last bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	br := bufio.NewReader(f)
	for off := int64(0); ; {
		var lenField [8]byte
		if _, err := io.ReadFull(br, lenField[:]); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return w.bad(name, last, "a record's length is cut short")
		}
		l := binary.LittleEndian.Uint64(lenField[:])
		if l == 0 {
			return nil // preallocated space
		}
		size, pad := int64(l&^(0xff<<56)), int64(0)
		if l>>63 == 1 {
			pad = int64((l >> 56) & 0x7)
		}
		off += 8
		if size+pad > fi.Size()-off {
			return w.bad(name, last, fmt.Sprintf("a record of %d bytes at offset %d runs past the end of the file", size, off-8))
		}
		buf := make([]byte, size+pad)
		if _, err := io.ReadFull(br, buf); err != nil {
			return w.bad(name, last, "a record is cut short")
		}
		off += size + pad
		if err := w.record(buf[:size]); err != nil {
			return w.bad(name, last, fmt.Sprintf("the record ending at offset %d: %v", off, err))
		}
		w.tailFile, w.tailEnd = path, off
	}
}

// bad ends the log at a damaged record of the last file, or refuses one of an earlier file.
func (w *walLog) bad(name string, last bool, reason string) error {
	if last {
		w.TornTail = true
		return nil
	}
	return &WALError{File: name, Reason: reason}
}

// record decodes one walpb.Record, checks its CRC and keeps what it says.
func (w *walLog) record(b []byte) error {
	rec := &walpb.Record{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return err
	}
	typ, crc, data := rec.GetType(), rec.GetCrc(), rec.GetData()
	if typ == walCRC {
		// A new file starts with the CRC of everything before it.
		if w.crc != 0 && crc != w.crc {
			return fmt.Errorf("the file's first CRC %08x is not the previous file's %08x", crc, w.crc)
		}
		w.crc = crc
		return nil
	}
	if crc != crc32.Update(w.crc, castagnoli(), data) {
		return fmt.Errorf("CRC mismatch")
	}
	w.crc = crc
	return w.keep(typ, data)
}

// keep records what one record of type typ says.
func (w *walLog) keep(typ int64, data []byte) error {
	switch typ {
	case walMetadata:
		md := &pb.Metadata{}
		if err := proto.Unmarshal(data, md); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		node, cluster := md.GetNodeID(), md.GetClusterID()
		if w.NodeID != 0 && (node != w.NodeID || cluster != w.ClusterID) {
			return fmt.Errorf("metadata of member %016x in a WAL of member %016x", node, w.NodeID)
		}
		w.NodeID, w.ClusterID = node, cluster
	case walState:
		hs := &raftpb.HardState{}
		if err := proto.Unmarshal(data, hs); err != nil {
			return fmt.Errorf("hard state: %w", err)
		}
		// etcd writes an empty state when nothing changed; it never means a reset.
		if hs.GetTerm() != 0 || hs.GetVote() != 0 || hs.GetCommit() != 0 {
			w.HardState = hs
		}
	case walEntry:
		return w.entry(data)
	case walSnapshot:
		return w.snapshot(data)
	}
	return nil
}

func (w *walLog) entry(data []byte) error {
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(data, e); err != nil {
		return fmt.Errorf("entry: %w", err)
	}
	info := walEntryInfo{Index: e.GetIndex(), Term: e.GetTerm()}
	switch e.GetType() {
	case raftpb.EntryConfChange:
		cc := &raftpb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			return fmt.Errorf("conf change at %d: %w", e.GetIndex(), err)
		}
		info.ConfChange = cc
	case raftpb.EntryConfChangeV2:
		return fmt.Errorf("conf change v2 at %d: etcd never writes one", e.GetIndex())
	}
	if n := len(w.Entries); n > 0 && info.Index > w.Entries[0].Index && info.Index <= w.Entries[n-1].Index+1 {
		// An entry at index i replaces the log from i on (raft overwrote a follower's tail).
		w.Entries = append(w.Entries[:info.Index-w.Entries[0].Index], info)
		return nil
	}
	// The first entry, or one after a gap (the files before were purged): the log starts here.
	w.Entries = append(w.Entries[:0], info)
	return nil
}

func (w *walLog) snapshot(data []byte) error {
	ws := &walpb.Snapshot{}
	if err := proto.Unmarshal(data, ws); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	w.Snapshots = append(w.Snapshots, walSnapshotInfo{Index: ws.GetIndex(), Term: ws.GetTerm(), ConfState: ws.GetConfState()})
	return nil
}

// LastIndex is the index of the log's last entry, or of its last snapshot when no entry follows.
func (w *walLog) LastIndex() uint64 {
	var last uint64
	if n := len(w.Snapshots); n > 0 {
		last = w.Snapshots[n-1].Index
	}
	if n := len(w.Entries); n > 0 {
		last = max(last, w.Entries[n-1].Index)
	}
	return last
}

// termAt is the term of the entry at index i, if the log has it (or a snapshot record at i).
func (w *walLog) termAt(i uint64) (uint64, bool) {
	if e, ok := w.entryAt(i); ok {
		return e.Term, true
	}
	for _, s := range w.Snapshots {
		if s.Index == i {
			return s.Term, true
		}
	}
	return 0, false
}

// confStateAt is raft's configuration after the entry at index i, from the last snapshot record
// at or below i with a configuration and the conf changes after it, applied as raft applies
// them. ok is false when the WAL cannot say: no such snapshot record (written before etcd 3.5),
// or entries missing between it and i. A conf change etcd refused at apply time (it applies it
// with no node) is not told apart here; see docs/commands/datadir-check.md.
func (w *walLog) confStateAt(i uint64) (cs *raftpb.ConfState, ok bool) {
	var from *walSnapshotInfo
	for k := range w.Snapshots {
		s := &w.Snapshots[k]
		if s.Index == 0 && s.ConfState == nil {
			// A new member's WAL starts at index 0, where the configuration is empty: its
			// first entries add the initial members.
			s.ConfState = &raftpb.ConfState{}
		}
		if s.Index <= i && s.ConfState != nil && (from == nil || s.Index >= from.Index) {
			from = s
		}
	}
	if from == nil {
		return nil, false
	}
	cs = &raftpb.ConfState{Voters: slices.Clone(from.ConfState.GetVoters()), Learners: slices.Clone(from.ConfState.GetLearners())}
	for next := from.Index + 1; next <= i; next++ {
		t, has := w.entryAt(next)
		if !has {
			return nil, false
		}
		if t.ConfChange != nil {
			apply(cs, t.ConfChange)
		}
	}
	return cs, true
}

func (w *walLog) entryAt(i uint64) (walEntryInfo, bool) {
	if n := len(w.Entries); n > 0 && i >= w.Entries[0].Index && i <= w.Entries[n-1].Index {
		return w.Entries[i-w.Entries[0].Index], true
	}
	return walEntryInfo{}, false
}

// readSnapFiles reads the newest etcd .snap file in dir (member/snap): a snappb.Snapshot whose
// data is a raftpb.Snapshot; only its metadata is kept. None there is nil, nil. A file that does
// not decode or fails its CRC is a *WALError naming it, as etcd would refuse it too.
func readSnapFile(dir string) (*raftpb.SnapshotMetadata, string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	var newest string
	for _, de := range des {
		if !de.IsDir() && strings.HasSuffix(de.Name(), ".snap") && de.Name() > newest {
			newest = de.Name()
		}
	}
	if newest == "" {
		return nil, "", nil
	}
	b, err := os.ReadFile(filepath.Join(dir, newest))
	if err != nil {
		return nil, "", err
	}
	sp, s := &snappb.Snapshot{}, &raftpb.Snapshot{}
	err = proto.Unmarshal(b, sp)
	if err == nil && crc32.Checksum(sp.GetData(), castagnoli()) != sp.GetCrc() {
		err = errors.New("CRC mismatch")
	}
	if err == nil {
		err = proto.Unmarshal(sp.GetData(), s)
	}
	if err != nil {
		return nil, "", &WALError{File: newest, Reason: err.Error()}
	}
	return s.GetMetadata(), newest, nil
}
