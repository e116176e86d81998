package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt's file format (v1.5, internal/common: page.go, meta.go, bucket.go, inode.go), read here
// with bounds checks and without mmap. Every number below is bbolt's on-disk layout: never change.
// bbolt writes its structs in the machine's byte order.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	metaSize         = 64 // magic, version, page size, flags u32; root, sequence, freelist, pgid, txid, checksum u64
	metaChecksumOff  = 56 // the checksum is FNV-64a over the meta before it
	bucketHeaderSize = 16 // root pgid u64, sequence u64; an inline bucket's page follows

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)

	// bbolt looks for meta page 1 at page sizes from 1 KiB to 16 MiB.
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
	// maxDepth bounds B+tree levels plus bucket nesting: bbolt's trees are a few levels deep, and
	// a far deeper one is crafted, refused before the walk's recursion grows the stack without
	// bound.
	maxDepth = 256
)

var ne = binary.NativeEndian

// CheckFile refuses, as a *CorruptError, a bbolt file that bbolt could crash on: bbolt trusts
// every page it maps, and a page id past the end of the file faults in a way no recover catches
// (in the goroutine that rebuilds the free list, say). It reads the file with bounds checks and
// without mmap, as bbolt would open it: the meta page bbolt would choose, the high-water mark
// within the file, every page of every bucket's B+tree (each once, of the kind its parent
// expects, its elements within it, its keys in order) and the free list. The work is linear in
// the file's size. It holds a shared lock meanwhile, as a read-only bbolt open does: a file
// another process holds for writing is reported as in use (ErrInUse), not as corrupt. It writes
// nothing.
func CheckFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockShared(f, BoltOptions().Timeout); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return &CorruptError{Path: path, Reason: "it has 0 bytes"}
	}
	err = checkBolt(f, fi.Size())
	if ce := (*CorruptError)(nil); errors.As(err, &ce) {
		ce.Path = path
	}
	return err
}

// corrupt is what checkBolt found wrong; CheckFile adds the path.
func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// boltMeta is the part of a meta page the check uses.
type boltMeta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64
	hwm      uint64 // the high-water mark: the number of pages in use
	txid     uint64
}

// readMeta reads the meta of the page at off; ok is bbolt's Validate: magic, version, checksum.
func readMeta(r io.ReaderAt, off int64) (m boltMeta, ok bool) {
	var b [pageHeaderSize + metaSize]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return m, false
	}
	mb := b[pageHeaderSize:]
	h := fnv.New64a()
	h.Write(mb[:metaChecksumOff])
	ok = ne.Uint32(mb[0:]) == boltMagic && ne.Uint32(mb[4:]) == boltVersion && ne.Uint64(mb[metaChecksumOff:]) == h.Sum64()
	return boltMeta{pageSize: ne.Uint32(mb[8:]), root: ne.Uint64(mb[16:]), freelist: ne.Uint64(mb[32:]),
		hwm: ne.Uint64(mb[40:]), txid: ne.Uint64(mb[48:])}, ok
}

// probePageSize finds the page size as bbolt's getPageSize does: from meta page 0 if it is
// valid, else from a valid meta page 1 at one of the page sizes bbolt tries.
func probePageSize(r io.ReaderAt, size int64) (int64, error) {
	if size >= 4096 { // bbolt reads 4 KiB at 0
		if m, ok := readMeta(r, 0); ok {
			return int64(m.pageSize), nil
		}
	}
	for i := 0; i <= 14; i++ {
		pos := int64(minPageSize) << i
		if pos >= size-1024 {
			break
		}
		if m, ok := readMeta(r, pos); ok {
			return int64(m.pageSize), nil
		}
	}
	return 0, corrupt("invalid database: no valid meta page")
}

// chooseMeta returns the meta bbolt uses: the valid one of the two with the higher txid.
func chooseMeta(r io.ReaderAt, pageSize int64) (boltMeta, error) {
	m0, ok0 := readMeta(r, 0)
	m1, ok1 := readMeta(r, pageSize)
	if m1.txid > m0.txid {
		m0, m1, ok0, ok1 = m1, m0, ok1, ok0
	}
	switch {
	case ok0:
		return m0, nil
	case ok1:
		return m1, nil
	}
	return boltMeta{}, corrupt("invalid database: both meta pages are invalid")
}

// checkBolt checks the bbolt file r of size bytes.
func checkBolt(r io.ReaderAt, size int64) error {
	pageSize, err := probePageSize(r, size)
	if err != nil {
		return err
	}
	if pageSize < minPageSize || pageSize > maxPageSize || pageSize&(pageSize-1) != 0 {
		return corrupt("invalid database: page size %d", pageSize)
	}
	if size < 2*pageSize {
		return corrupt("it has %d bytes, less than its two meta pages of %d bytes", size, pageSize)
	}
	m, err := chooseMeta(r, pageSize)
	if err != nil {
		return err
	}
	if int64(m.pageSize) != pageSize {
		return corrupt("its meta page says pages of %d bytes, its first meta page %d", m.pageSize, pageSize)
	}
	if m.hwm > uint64(size/pageSize) {
		return corrupt("it claims %d pages of %d bytes but has %d bytes", m.hwm, pageSize, size)
	}
	w := &boltWalk{r: r, pageSize: pageSize, hwm: m.hwm, used: make([]uint64, (m.hwm+63)/64)}
	if err := w.claim(0, 2); err != nil { // the meta pages
		return err
	}
	var free []byte
	if m.freelist != noFreelist {
		if free, err = w.freelist(m.freelist); err != nil {
			return err
		}
	}
	if _, err := w.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	return w.freeIDs(free)
}

// boltWalk reads the pages of one bbolt file, each at most once.
type boltWalk struct {
	r        io.ReaderAt
	pageSize int64
	hwm      uint64
	used     []uint64 // a bit per page: the page was reached (or is free)
}

// read returns n pages from page id on, all below the high-water mark.
func (w *boltWalk) read(id, n uint64) ([]byte, error) {
	buf := make([]byte, int64(n)*w.pageSize)
	_, err := w.r.ReadAt(buf, int64(id)*w.pageSize)
	return buf, err
}

// claim marks pages [id, id+n) as reached, refusing one past the high-water mark or reached
// before: a page referenced twice, or a loop.
func (w *boltWalk) claim(id, n uint64) error {
	if id >= w.hwm || n > w.hwm-id {
		return corrupt("page %d (of %d) is beyond the high-water mark %d", id, n, w.hwm)
	}
	for i := id; i < id+n; i++ {
		if w.used[i/64]&(1<<(i%64)) != 0 {
			return corrupt("page %d is referenced twice", i)
		}
		w.used[i/64] |= 1 << (i % 64)
	}
	return nil
}

// page reads page id with its overflow pages, checking that its header names it and that all of
// it lies below the high-water mark, and claims it.
func (w *boltWalk) page(id uint64) (buf []byte, flags, count uint16, err error) {
	if id >= w.hwm {
		return nil, 0, 0, corrupt("page %d is beyond the high-water mark %d", id, w.hwm)
	}
	if buf, err = w.read(id, 1); err != nil {
		return nil, 0, 0, err
	}
	if got := ne.Uint64(buf); got != id {
		return nil, 0, 0, corrupt("page %d says it is page %d", id, got)
	}
	overflow := uint64(ne.Uint32(buf[12:]))
	if err := w.claim(id, overflow+1); err != nil {
		return nil, 0, 0, err
	}
	if overflow > 0 {
		if buf, err = w.read(id, overflow+1); err != nil {
			return nil, 0, 0, err
		}
	}
	return buf, ne.Uint16(buf[8:]), ne.Uint16(buf[10:]), nil
}

// tree checks the B+tree rooted at page id, whose keys must lie in [lo, hi) (nil: unbounded), as
// bbolt's tx.Check orders them, and returns its largest key.
func (w *boltWalk) tree(id uint64, lo, hi []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, corrupt("page %d is nested more than %d levels deep", id, maxDepth)
	}
	buf, flags, count, err := w.page(id)
	if err != nil {
		return nil, err
	}
	switch flags {
	case branchPageFlag:
		return w.branch(id, buf, count, lo, hi, depth)
	case leafPageFlag:
		return w.leaf(id, buf, count, lo, hi, depth)
	}
	return nil, corrupt("page %d has flags %#x where a branch or leaf page belongs", id, flags)
}

// branch checks the elements of branch page id and the subtrees they point to.
func (w *boltWalk) branch(id uint64, buf []byte, count uint16, lo, hi []byte, depth int) ([]byte, error) {
	if count == 0 {
		return nil, corrupt("branch page %d is empty", id)
	}
	next, err := elementArray(buf, count)
	if err != nil {
		return nil, corrupt("page %d: %v", id, err)
	}
	keys := make([][]byte, count)
	children := make([]uint64, count)
	for i := range keys {
		off := pageHeaderSize + i*elementSize
		e := buf[off : off+elementSize]
		if keys[i], err = elementData(buf, off, ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), &next); err != nil {
			return nil, corrupt("page %d: key %d %v", id, i, err)
		}
		children[i] = ne.Uint64(e[8:])
	}
	prev := lo
	for i, k := range keys {
		if err := keyOrder(i, prev, k, hi); err != nil {
			return nil, corrupt("page %d: %v", id, err)
		}
		next := hi
		if i+1 < len(keys) {
			next = keys[i+1]
		}
		if prev, err = w.tree(children[i], k, next, depth+1); err != nil {
			return nil, err
		}
	}
	return prev, nil
}

// leaf checks the elements of leaf page id (a page of its own, or an inline bucket's, id 0) and
// the buckets it holds.
func (w *boltWalk) leaf(id uint64, buf []byte, count uint16, lo, hi []byte, depth int) ([]byte, error) {
	where := fmt.Sprintf("page %d", id)
	if id == 0 {
		where = "an inline bucket"
	}
	next, err := elementArray(buf, count)
	if err != nil {
		return nil, corrupt("%s: %v", where, err)
	}
	prev := lo
	for i := range int(count) {
		off := pageHeaderSize + i*elementSize
		e := buf[off : off+elementSize]
		ksize := uint64(ne.Uint32(e[8:]))
		kv, err := elementData(buf, off, ne.Uint32(e[4:]), ksize+uint64(ne.Uint32(e[12:])), &next)
		if err != nil {
			return nil, corrupt("%s: element %d %v", where, i, err)
		}
		k := kv[:ksize]
		if err := keyOrder(i, prev, k, hi); err != nil {
			return nil, corrupt("%s: %v", where, err)
		}
		prev = k
		if ne.Uint32(e[0:])&bucketLeafFlag != 0 {
			if err := w.bucket(kv[ksize:], depth+1); err != nil {
				return nil, err
			}
		}
	}
	if count == 0 {
		return nil, nil
	}
	return prev, nil
}

// bucket checks a bucket given by its value in its parent's leaf: the tree at its root page, or
// the page inline in the value.
func (w *boltWalk) bucket(v []byte, depth int) error {
	if len(v) < bucketHeaderSize {
		return corrupt("a bucket's value has %d bytes", len(v))
	}
	if root := ne.Uint64(v); root != 0 {
		_, err := w.tree(root, nil, nil, depth)
		return err
	}
	if depth > maxDepth {
		return corrupt("an inline bucket is nested more than %d levels deep", maxDepth)
	}
	p := v[bucketHeaderSize:]
	if len(p) < pageHeaderSize {
		return corrupt("an inline bucket's page has %d bytes", len(p))
	}
	if flags := ne.Uint16(p[8:]); flags != leafPageFlag {
		return corrupt("an inline bucket's page has flags %#x", flags)
	}
	_, err := w.leaf(0, p, ne.Uint16(p[10:]), nil, nil, depth)
	return err
}

// elementArray checks that count elements fit in the page buf and returns where they end.
func elementArray(buf []byte, count uint16) (int, error) {
	end := pageHeaderSize + int(count)*elementSize
	if end > len(buf) {
		return 0, fmt.Errorf("%d elements do not fit in %d bytes", count, len(buf))
	}
	return end, nil
}

// elementData returns the size bytes of an element's data, pos bytes after the element at off in
// the page buf (bbolt's positions are relative to the element). bbolt writes each element's data
// after the element array and after the previous element's data: data that starts before *next,
// where that ended, or ends past the page is refused; which also keeps the work linear, no byte
// being read as two elements' data.
func elementData(buf []byte, off int, pos uint32, size uint64, next *int) ([]byte, error) {
	start := uint64(off) + uint64(pos)
	switch {
	case start < uint64(*next):
		return nil, fmt.Errorf("overlaps the data before it")
	case start+size > uint64(len(buf)):
		return nil, fmt.Errorf("ends past the page")
	}
	*next = int(start + size)
	return buf[start : start+size], nil
}

// keyOrder is bbolt's verifyKeyOrder: key i of a page follows the previous one (for the first,
// the parent's key) and precedes the parent's next key.
func keyOrder(i int, prev, k, hi []byte) error {
	switch c := bytes.Compare(prev, k); {
	case i == 0 && prev != nil && c > 0:
		return fmt.Errorf("key %d sorts before its parent's key", i)
	case i > 0 && c >= 0:
		return fmt.Errorf("key %d does not sort after key %d", i, i-1)
	case hi != nil && bytes.Compare(k, hi) >= 0:
		return fmt.Errorf("key %d does not sort before its parent's next key", i)
	}
	return nil
}

// freelist reads the free list page id and returns its page ids, 8 bytes each.
func (w *boltWalk) freelist(id uint64) ([]byte, error) {
	buf, flags, count, err := w.page(id)
	if err != nil {
		return nil, err
	}
	if flags != freelistPageFlag {
		return nil, corrupt("free list page %d has flags %#x", id, flags)
	}
	ids, n := buf[pageHeaderSize:], uint64(count)
	if count == 0xFFFF { // the count did not fit: it is the first id's place
		n = ne.Uint64(ids)
		ids = ids[8:]
	}
	if n > uint64(len(ids)/8) {
		return nil, corrupt("free list page %d: %d ids do not fit in it", id, n)
	}
	return ids[:n*8], nil
}

// freeIDs checks the free list's ids: each below the high-water mark, past the meta pages, listed
// once and not a page in use, which bbolt would hand out again and overwrite.
func (w *boltWalk) freeIDs(ids []byte) error {
	for i := 0; i < len(ids); i += 8 {
		id := ne.Uint64(ids[i:])
		if id < 2 || id >= w.hwm {
			return corrupt("the free list holds page %d, outside 2 to the high-water mark %d", id, w.hwm)
		}
		if err := w.claim(id, 1); err != nil {
			return corrupt("the free list holds page %d, which is in use or listed twice", id)
		}
	}
	return nil
}
