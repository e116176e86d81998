package datadir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A raft term past storage.MaxTerm is absurd: no cluster reaches it by elections, a forged peer
// message put it there (one MsgHeartbeat of term 2^64-1 does it to etcd 3.7.1 and did it to
// clusterd before it refused such messages), and raft panics at the member's next campaign,
// every restart and --force-new-cluster included. ResetTerm is the recovery etcd does not offer.

// checkTerm records a HardState term past storage.MaxTerm as a problem of member id.
func (r *CheckResult) checkTerm(id membership.ID, where string, term uint64) {
	if term > storage.MaxTerm {
		r.Problems = append(r.Problems, Problem{MemberID: id, Text: fmt.Sprintf(
			"%s holds term %d, past any term a cluster reaches (2^63): raft panics at its next election; "+
				"recover with clusterctl datadir reset-term %s", where, term, r.Path)})
	}
}

// resetMargin is how far above the highest term of its log a reset puts a member's term. Above
// it: the member may have voted in terms after its last entry (elections that made no leader it
// heard from), and must never vote twice in one term. Below storage.MaxTermStep: its peers take
// the new term from its messages, and it takes theirs.
const resetMargin = storage.MaxTermStep / 2

// ResetResult is what ResetTerm did.
type ResetResult struct {
	Dir      string
	Kind     string // KindClusterd or KindEtcd
	MemberID membership.ID
	// From and To are the HardState's term before and after; LogTerm is the highest term in the
	// log (its entries and snapshot), from which To is counted.
	From, To, LogTerm uint64
	// Backup is the copy of the file rewritten, made before it was.
	Backup string
}

// ErrTermSound refuses to reset a term that is not past storage.MaxTerm: a sound member's term
// is raft's, and lowering it could make it vote twice in one term.
var ErrTermSound = errors.New("the stored term is not past 2^63: nothing to reset")

// ResetTerm gives a stopped member whose stored term is past storage.MaxTerm a term it can
// campaign from: the highest term of its log plus resetMargin, with no vote. The log and the
// commit index are kept, so nothing committed is lost. The file rewritten is first copied into
// a directory beside dir, named in the result: clusterd's member.db, or etcd's last WAL file, to
// which a HardState record is appended as etcd itself appends one. A running member's directory
// is an *InUseError; a sound term is ErrTermSound.
func ResetTerm(dir string) (*ResetResult, error) {
	st, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if st.Term <= storage.MaxTerm {
		return nil, ErrTermSound
	}
	res := &ResetResult{Dir: dir, Kind: st.Kind, MemberID: st.MemberID, From: st.Term}
	backup := fmt.Sprintf("%s.before-reset-term.%d", filepath.Clean(dir), time.Now().Unix())
	reset := resetEtcd
	if st.Kind == KindClusterd {
		reset = resetClusterd
	}
	if err := reset(dir, backup, res); err != nil {
		return nil, err
	}
	return res, nil
}

// newTerm is the HardState a reset gives a log whose highest term is logTerm, committed up to
// commit, once file, the one it rewrites, is copied into backup.
func newTerm(res *ResetResult, logTerm, commit uint64, backup, file string) (hs *raftpb.HardState, err error) {
	if logTerm > storage.MaxTerm-resetMargin {
		return nil, fmt.Errorf("the log holds an entry of term %d, past any term a cluster reaches: restore the member from a snapshot instead", logTerm)
	}
	res.LogTerm, res.To = logTerm, logTerm+resetMargin
	if res.Backup, err = copyInto(backup, file); err != nil {
		return nil, err
	}
	return &raftpb.HardState{Term: proto.Uint64(res.To), Vote: proto.Uint64(0), Commit: proto.Uint64(commit)}, nil
}

func resetClusterd(dir, backup string, res *ResetResult) error {
	store, err := storage.Open(dir)
	if err != nil {
		return err
	}
	defer store.Close()
	st, err := store.Load()
	if err != nil {
		return err
	}
	logTerm := st.Snapshot.GetMetadata().GetTerm()
	for _, e := range st.Entries {
		logTerm = max(logTerm, e.GetTerm())
	}
	hs, err := newTerm(res, logTerm, st.HardState.GetCommit(), backup, filepath.Join(dir, storage.FileName))
	if err != nil {
		return err
	}
	return store.Save(storage.Update{HardState: hs})
}

func resetEtcd(dir, backup string, res *ResetResult) error {
	w, err := readWAL(filepath.Join(dir, etcdWALDir))
	if err != nil {
		return err
	}
	if w.TornTail {
		return fmt.Errorf("the last WAL file ends in a torn record: start etcd once with --force-new-cluster on a copy, or restore from a snapshot")
	}
	var logTerm uint64
	for _, s := range w.Snapshots {
		logTerm = max(logTerm, s.Term)
	}
	for _, e := range w.Entries {
		logTerm = max(logTerm, e.Term)
	}
	hs, err := newTerm(res, logTerm, w.HardState.GetCommit(), backup, w.tailFile)
	if err != nil {
		return err
	}
	return appendWALState(w, hs)
}

// appendWALState writes hs as a state record after the last record of the WAL's last file, with
// etcd's framing: the CRC chained over every record's data, an 8-byte length whose top byte
// holds the padding to 8 bytes, then the record padded with zeros.
func appendWALState(w *walLog, hs *raftpb.HardState) error {
	data, err := proto.Marshal(hs)
	if err != nil {
		return err
	}
	rec, err := proto.Marshal(&walpb.Record{Type: proto.Int64(walState), Crc: proto.Uint32(crc32.Update(w.crc, castagnoli(), data)), Data: data})
	if err != nil {
		return err
	}
	length, pad := uint64(len(rec)), (8-len(rec)%8)%8
	if pad != 0 {
		length |= uint64(0x80|pad) << 56
	}
	buf := binary.LittleEndian.AppendUint64(nil, length)
	buf = append(append(buf, rec...), make([]byte, pad)...)
	f, err := os.OpenFile(w.tailFile, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(buf, w.tailEnd)
	return closeSynced(f, err)
}

// copyInto copies file into dir, made for it, and returns the copy's path.
func copyInto(dir, file string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	to := filepath.Join(dir, filepath.Base(file))
	in, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	return to, closeSynced(out, err)
}

// closeSynced ends a write to f that ended with err: it syncs f unless the write failed, and
// closes it; the first error is the one returned.
func closeSynced(f *os.File, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
