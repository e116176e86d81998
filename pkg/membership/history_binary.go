package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// An Event's binary record, as stored in bbolt's history bucket and, base64 in JSON, in
// snapshots. A History holds its events as these records (history.go): a snapshot copies them,
// and a member that receives one checks them without decoding them, so a new member's first
// snapshot costs the bytes of the history and no work per event. Stored: never change the
// layout of a version; a new field makes a new version.
//
// Version 1: the byte 1, then raftIndex, term (uvarints), the time in Unix nanoseconds (varint,
// 0 for none), change (string), memberID (uvarint), name (string), the count of peer URLs
// (uvarint) and each (string), isLearner (one byte), and the origin's cn, address, via and
// clusterd (strings). A string is its length (uvarint) and its bytes.
const eventVersion1 = 1

// AppendBinary appends e's binary record to b.
func (e Event) AppendBinary(b []byte) []byte {
	b = append(b, eventVersion1)
	b = binary.AppendUvarint(b, e.RaftIndex)
	b = binary.AppendUvarint(b, e.Term)
	var nanos int64
	if !e.Time.IsZero() {
		nanos = e.Time.UnixNano()
	}
	b = binary.AppendVarint(b, nanos)
	b = appendString(b, e.Change)
	b = binary.AppendUvarint(b, uint64(e.MemberID))
	b = appendString(b, e.Name)
	b = binary.AppendUvarint(b, uint64(len(e.PeerURLs)))
	for _, u := range e.PeerURLs {
		b = appendString(b, u)
	}
	learner := byte(0)
	if e.IsLearner {
		learner = 1
	}
	b = append(b, learner)
	for _, s := range []string{e.By.CN, e.By.Address, e.By.Via, e.By.Clusterd} {
		b = appendString(b, s)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errShortRecord = errors.New("history record: short or damaged")

// recordReader reads a binary record field by field; the first error sticks. Without keep it
// only checks the record: its strings are skipped, not made.
type recordReader struct {
	b    []byte
	keep bool
	err  error
}

func (r *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errShortRecord, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads what binary.AppendVarint wrote: a zig-zag uvarint.
func (r *recordReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *recordReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errShortRecord, nil
		return ""
	}
	var s string
	if r.keep {
		s = string(r.b[:n])
	}
	r.b = r.b[n:]
	return s
}

func (r *recordReader) byte() byte {
	if len(r.b) == 0 {
		r.err = errShortRecord
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// DecodeEvent reads one binary record. It keeps nothing of b, which may be a bbolt value that
// is gone once its transaction ends.
func DecodeEvent(b []byte) (Event, error) { return decodeEvent(b, true) }

// decodeEvent reads one binary record; without keep it only checks it, and the event it returns
// has no strings.
func decodeEvent(b []byte, keep bool) (Event, error) {
	r := &recordReader{b: b, keep: keep}
	if v := r.byte(); v != eventVersion1 {
		if r.err != nil {
			return Event{}, r.err
		}
		return Event{}, fmt.Errorf("history record: unknown version %d", v)
	}
	e := Event{RaftIndex: r.uvarint(), Term: r.uvarint()}
	if nanos := r.varint(); nanos != 0 {
		e.Time = time.Unix(0, nanos).UTC()
	}
	e.Change = r.string()
	e.MemberID = ID(r.uvarint())
	e.Name = r.string()
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return Event{}, errShortRecord
	}
	for range n {
		if u := r.string(); keep {
			e.PeerURLs = append(e.PeerURLs, u)
		}
	}
	e.IsLearner = r.byte() == 1
	e.By = Origin{CN: r.string(), Address: r.string(), Via: r.string(), Clusterd: r.string()}
	return e, r.err
}

// CheckRecord checks one binary record as DecodeEvent reads it, making nothing.
func CheckRecord(b []byte) error {
	_, err := decodeEvent(b, false)
	return err
}

// appendRecords appends each event's record, each preceded by its length (uvarint).
func appendRecords(b []byte, events []Event) []byte {
	var rec []byte
	for _, e := range events {
		rec = e.AppendBinary(rec[:0])
		b = append(binary.AppendUvarint(b, uint64(len(rec))), rec...)
	}
	return b
}

// checkRecords checks what appendRecords wrote, record by record, making nothing, and counts
// the records.
func checkRecords(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return 0, errShortRecord
		}
		if err := CheckRecord(b[k : k+int(l)]); err != nil {
			return 0, err
		}
		b = b[k+int(l):]
		n++
	}
	return n, nil
}

// indexRecords indexes what appendRecords wrote, checked already.
func indexRecords(b []byte) *records {
	r := &records{data: b}
	for i := 0; i < len(b); {
		n, k := binary.Uvarint(b[i:])
		if k <= 0 {
			break
		}
		r.start = append(r.start, i)
		i += k + int(n)
	}
	return r
}
