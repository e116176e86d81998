package membership

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
)

// blockEvents is how many events a block that this member makes holds: small enough that
// compressing one costs a fraction of a millisecond, and that the events of the oldest block a
// snapshot carries though the history dropped them are few, large enough that DEFLATE finds the
// repeats (names, URLs, addresses) within it: about 19 KB of records at make bench's figures,
// compressed as well as the whole history.
const blockEvents = 256

// A block is a run of events of a history's base, kept as its records and as DEFLATE (RFC 1951)
// data that ends with a sync flush (an empty stored block, no final block) and refers to nothing
// before it: the compressed blocks of a history written end to end, and then finalBlock, are one
// DEFLATE stream of all their records, which is how a snapshot carries them. A block never
// changes once made, and each form is made once, from the other, when first needed, then shared:
// a block this member made is compressed when a snapshot first holds it (not while a change is
// applied), a block received compressed is inflated only when read or split.
type block struct {
	n int // events
	// budget is what a received block and those received with it may still inflate to,
	// together (HistoryFromBlocks); a block made here has its records and never inflates.
	budget *atomic.Int64

	once sync.Once
	raw  *records // set when made, or by once
	err  error    // why deflated does not read back as n records

	zonce    sync.Once
	deflated []byte // set when received, or by zonce
}

// finalBlock ends a DEFLATE stream: an empty stored block marked final, at a byte boundary.
var finalBlock = []byte{0x01, 0x00, 0x00, 0xff, 0xff}

// newBlock is the block of the n records in data (appendRecords's), to be compressed when a
// snapshot first needs it.
func newBlock(data []byte, n int) *block {
	return &block{n: n, raw: indexRecords(data)}
}

// compressed returns the block's compressed records, compressing them the first time.
func (b *block) compressed() []byte {
	b.zonce.Do(func() {
		if b.deflated == nil {
			b.deflated = appendFlushed(nil, b.raw.data, blockWriters)
		}
	})
	return b.deflated
}

// splitBlocks cuts the n checked records in data into blocks of blockEvents.
func splitBlocks(data []byte, n int) []*block {
	r := indexRecords(data)
	var out []*block
	for i := 0; i < n; i += blockEvents {
		end := len(data)
		if i+blockEvents < n {
			end = r.start[i+blockEvents]
		}
		out = append(out, newBlock(data[r.start[i]:end], min(blockEvents, n-i)))
	}
	return out
}

// records returns the block's records, inflating and checking them the first time.
func (b *block) records() (*records, error) {
	b.once.Do(func() {
		if b.raw != nil {
			return
		}
		data, err := b.inflate()
		if err == nil {
			var n int
			if n, err = checkRecords(data); err == nil && n != b.n {
				err = fmt.Errorf("history records: %d events where the snapshot said %d", n, b.n)
			}
		}
		if err != nil {
			b.err = fmt.Errorf("membership history damaged: %w", err)
			return
		}
		b.raw = indexRecords(data)
	})
	return b.raw, b.err
}

// inflate inflates the block's records within its budget, and takes what they used from it: a
// snapshot's blocks inflate to at most maxInflated together, as its one stream did.
func (b *block) inflate() ([]byte, error) {
	data, err := inflate(b.deflated, int(max(0, b.budget.Load())))
	if err == nil && b.budget.Add(-int64(len(data))) < 0 {
		// Another block of the same history took the rest meanwhile.
		return nil, errInflated
	}
	return data, err
}

// records is a run of binary records, each preceded by its length (uvarint): what
// appendRecords writes. start[i] is where record i's length begins.
type records struct {
	data  []byte
	start []int
}

func (r *records) len() int { return len(r.start) }

// from returns the bytes of the records from i on.
func (r *records) from(i int) []byte {
	if i >= r.len() {
		return nil
	}
	return r.data[r.start[i]:]
}

// event decodes record i.
func (r *records) event(i int) Event {
	b := r.data[r.start[i]:]
	n, k := binary.Uvarint(b)
	// Checked when the records were read (checkRecords) or written by AppendBinary.
	e, _ := decodeEvent(b[k:k+int(n)], true)
	return e
}

// DeflatedBlock is a run of a history's events as a snapshot carries them: their records,
// compressed and ended by a sync flush as a block keeps them. Skip is how many events at its
// start the history has dropped (the oldest block's alone): a block is carried whole, as it is
// kept, so that a snapshot at the bound compresses none of the blocks again.
type DeflatedBlock struct {
	Events   int
	Skip     int
	Deflated []byte
}

// DeflatedBlocks returns the events kept as compressed blocks, oldest first, with the count of
// events dropped before them (those the first block skips included). It shares the blocks'
// compressed bytes (never change them), compresses the blocks made since a snapshot last held
// them, and writes the recent events anew (appendFlushed).
func (h History) DeflatedBlocks() (blocks []DeflatedBlock, dropped uint64) {
	for i, bl := range h.blocks {
		skip := 0
		if i == 0 {
			skip = h.skip
		}
		blocks = append(blocks, DeflatedBlock{Events: bl.n, Skip: skip, Deflated: bl.compressed()})
	}
	if len(h.recent) > 0 {
		blocks = append(blocks, DeflatedBlock{Events: len(h.recent), Deflated: appendFlushed(nil, appendRecords(nil, h.recent), snapshotWriters)})
	}
	return blocks, h.dropped
}

// HistoryFromBlocks is the history of the blocks DeflatedBlocks returned, after dropped older
// events. It keeps each block as it came, to be inflated when read, and checks only what keeping
// it needs (a count of events and some bytes for each, and that only the first skips events,
// fewer than it holds and no more than dropped counts): a damaged block is refused when read
// (Read), and sent on as it came. The blocks inflate to at most maxInflated together. Give it
// bytes of its own.
func HistoryFromBlocks(blocks []DeflatedBlock, dropped uint64) (History, error) {
	if err := checkDropped(dropped); err != nil {
		return History{}, err
	}
	h := History{dropped: dropped}
	kept := make([]*block, 0, len(blocks))
	budget := new(atomic.Int64)
	budget.Store(maxInflated)
	total := 0
	for i, b := range blocks {
		if b.Events <= 0 || b.Events > math.MaxInt32-total || len(b.Deflated) == 0 {
			return History{}, fmt.Errorf("history records: a block of %d events in %d bytes", b.Events, len(b.Deflated))
		}
		if b.Skip < 0 || b.Skip >= b.Events || (i > 0 && b.Skip != 0) || uint64(b.Skip) > dropped {
			return History{}, fmt.Errorf("history records: block %d skips %d of its %d events", i, b.Skip, b.Events)
		}
		total += b.Events
		kept = append(kept, &block{n: b.Events, deflated: b.Deflated, budget: budget})
	}
	h = h.withBlocks(kept)
	if len(blocks) > 0 {
		h.skip = blocks[0].Skip
	}
	return h, nil
}

// AppendDeflated appends the events kept as one DEFLATE stream of their records, as earlier
// versions' snapshots carried them (DeflatedBlocks end to end, then finalBlock, the first
// block's kept part compressed again), and returns it with the count of events it holds and the
// count dropped before them. An oldest block that does not read back is given whole: dropped is
// less by the events of it the history no longer shows, so that a member reading it holds the
// same, and refuses it the same when read.
func (h History) AppendDeflated(b []byte) (_ []byte, events int, dropped uint64) {
	blocks, dropped := h.DeflatedBlocks()
	for i, bl := range blocks {
		if bl.Skip > 0 {
			if r, err := h.blocks[i].records(); err == nil {
				bl.Events, bl.Deflated = bl.Events-bl.Skip, appendFlushed(nil, r.from(bl.Skip), snapshotWriters)
			} else {
				dropped -= uint64(bl.Skip)
			}
		}
		b = append(b, bl.Deflated...)
		events += bl.Events
	}
	return append(b, finalBlock...), events, dropped
}

// HistoryFromDeflated is the history of the events that AppendDeflated wrote: events of them,
// after dropped older ones, kept as one block. It keeps deflated as it is, to be inflated when
// read, and checks only what keeping it needs (that it ends as AppendDeflated ends it): a
// damaged stream is refused when read (Read). Give it bytes of its own.
func HistoryFromDeflated(deflated []byte, events int, dropped uint64) (History, error) {
	body, ok := bytes.CutSuffix(deflated, finalBlock)
	if !ok || events < 0 || (events == 0) != (len(body) == 0) {
		return History{}, errors.New("history records: not a stream of blocks")
	}
	if events == 0 {
		return HistoryFromBlocks(nil, dropped)
	}
	return HistoryFromBlocks([]DeflatedBlock{{Events: events, Deflated: body}}, dropped)
}

// The writers of each level appendFlushed compresses at.
var (
	blockWriters    = flateWriterPool(flate.DefaultCompression)
	snapshotWriters = flateWriterPool(flate.NoCompression)
)

func flateWriterPool(level int) *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, level) // the levels used are valid: no error
		return w
	}}
}

// appendFlushed appends records compressed by a writer from the pool writers, flushed, not
// closed. A history's records repeat names, URLs and addresses: a block shrinks about ninefold at
// DEFLATE's default level (blockWriters) for about 0.1 ms, which a new member gains back many
// times over in moving, reading and writing its first snapshot, and a block is compressed once.
// What each snapshot writes anew (DeflatedBlocks: the events recorded since the newest block,
// fewer than blockEvents) is stored, not compressed (snapshotWriters: DEFLATE's stored blocks,
// so a snapshot's form is the same): a leader at its bound makes a snapshot for every member
// that joins. With events shaped as make bench's learners, compressing them at DEFLATE's
// fastest level took 99 us of a snapshot's time at the default bound, against 39 us stored, for
// a snapshot of about 150 KB larger by what their records come to stored: none to some 28 KB,
// by how many there are. Stored records are checked for their form only,
// as the records a block inflates to are: a byte damaged within a name or URL reads back.
func appendFlushed(b, records []byte, writers *sync.Pool) []byte {
	if len(records) == 0 {
		return b
	}
	buf := bytes.NewBuffer(b)
	w := writers.Get().(*flate.Writer)
	w.Reset(buf)
	_, _ = w.Write(records) // a bytes.Buffer does not fail
	_ = w.Flush()
	writers.Put(w)
	return buf.Bytes()
}

// maxInflated bounds what the records of one snapshot's history inflate to (InflateRecords, and
// the blocks of HistoryFromBlocks together): far beyond any history (the default bound of 10,000
// changes is about a megabyte), and short of exhausting a member that a peer sent a small
// snapshot that inflates to much more.
const maxInflated = 1 << 30

// InflateRecords inflates a DEFLATE stream of records, or a block's flushed data (ended as if
// by finalBlock).
func InflateRecords(deflated []byte) ([]byte, error) { return inflate(deflated, maxInflated) }

// inflate is InflateRecords, refusing more than limit bytes.
func inflate(deflated []byte, limit int) ([]byte, error) {
	r := flate.NewReader(io.MultiReader(bytes.NewReader(deflated), bytes.NewReader(finalBlock)))
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("history records: %w", err)
	}
	if len(b) > limit {
		return nil, errInflated
	}
	return b, nil
}

var errInflated = errors.New("history records: larger than 1 GiB inflated")
