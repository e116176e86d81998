package datadir

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// walFrame encodes one walpb.Record as etcd's encoder frames it: the length, with the padding to
// 8 bytes in its top byte, then the record and the padding.
func walFrame(typ int64, crc uint32, data []byte) []byte {
	rec, _ := proto.Marshal(&walpb.Record{Type: proto.Int64(typ), Crc: proto.Uint32(crc), Data: data})
	pad := (8 - len(rec)%8) % 8
	l := uint64(len(rec))
	if pad > 0 {
		l |= uint64(0x80|pad) << 56
	}
	out := binary.LittleEndian.AppendUint64(nil, l)
	return append(append(out, rec...), make([]byte, pad)...)
}

// A WAL of two files, as etcd cuts one when it reaches its segment size: the second starts with
// the CRC of everything before, then the metadata and the state, then entries. Its entries
// continue the first file's; a CRC record that does not chain, in a file before the last, is
// refused.
func TestReadWALAcrossFiles(t *testing.T) {
	first, err := os.ReadFile(etcdWALFile)
	if err != nil {
		t.Fatal(err)
	}
	// The CRC after the first file, as etcd carries it into the next.
	r := &walLog{HardState: &raftpb.HardState{}}
	if err := r.readFile(etcdWALFile, false); err != nil {
		t.Fatal(err)
	}
	second := func(startCRC uint32) []byte {
		crc := startCRC
		out := walFrame(walCRC, crc, nil)
		add := func(typ int64, data []byte) {
			crc = crc32.Update(crc, castagnoli(), data)
			out = append(out, walFrame(typ, crc, data)...)
		}
		meta, _ := proto.Marshal(&pb.Metadata{NodeID: proto.Uint64(r.NodeID), ClusterID: proto.Uint64(r.ClusterID)})
		add(walMetadata, meta)
		hs, _ := proto.Marshal(&raftpb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(18)})
		add(walState, hs)
		e, _ := proto.Marshal(&raftpb.Entry{Term: proto.Uint64(3), Index: proto.Uint64(18)})
		add(walEntry, e)
		return out
	}
	write := func(files map[string][]byte) string {
		dir := t.TempDir()
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dir := write(map[string][]byte{"0000000000000000-0000000000000000.wal": first, "0000000000000001-0000000000000012.wal": second(r.crc)})
	w, err := readWAL(dir)
	if err != nil || w.LastIndex() != 18 || w.HardState.GetCommit() != 18 || w.TornTail || len(w.Entries) != 18 {
		t.Fatalf("%v %+v", err, w)
	}
	if term, ok := w.termAt(18); !ok || term != 3 {
		t.Errorf("term at 18: %d %v", term, ok)
	}
	// The same second file after a third: its broken chain is damage, not a torn write.
	dir = write(map[string][]byte{"0000000000000000-0000000000000000.wal": first, "0000000000000001-0000000000000012.wal": second(r.crc + 1),
		"0000000000000002-0000000000000013.wal": nil})
	if _, err := readWAL(dir); !errors.As(err, new(*WALError)) {
		t.Errorf("a broken CRC chain: %v", err)
	}
}
