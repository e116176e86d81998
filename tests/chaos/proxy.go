package chaos

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
)

// link is a pair of member slots, the smaller first: the faults act on both directions of a
// link at once, as a cable or a switch port would.
type link struct{ a, b int }

func linkOf(x, y int) link {
	if x > y {
		x, y = y, x
	}
	return link{x, y}
}

// rule is what a fault does to a link.
type rule struct {
	block bool          // nothing passes: open connections are cut, new ones hang
	drop  float64       // the chance that a chunk of bytes cuts its connection instead
	delay time.Duration // added before every chunk
}

// network is the proxy between members. Faults are layered: each fault adds its own rules and
// takes them away again, and a link obeys all of them at once, so faults may overlap.
type network struct {
	sources *sources
	scheme  string // of the members' URLs: http, or https with -tls

	mu     sync.Mutex
	rnd    *rand.Rand
	layers map[int]map[link]rule
	nextID int
	conns  map[*pconn]struct{}

	accepted, cut, unknownSource atomic.Int64
}

func newNetwork(seed uint64, pids func() map[int]int) *network {
	return &network{
		sources: &sources{pids: pids, known: map[[2]int]int{}}, scheme: "http", rnd: rand.New(rand.NewPCG(seed, 0x70726f7879)),
		layers: map[int]map[link]rule{}, conns: map[*pconn]struct{}{},
	}
}

// pconn is one proxied connection; src is the slot that opened it, or -1 if unknown.
type pconn struct {
	src, dst int
	down     net.Conn

	mu     sync.Mutex
	up     net.Conn // nil while the connection hangs in a partition
	closed bool
}

// setUp attaches the member's side; false if the connection was closed meanwhile.
func (c *pconn) setUp(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		up.Close()
		return false
	}
	c.up = up
	return true
}

func (c *pconn) hanging() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up == nil
}

func (c *pconn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.down.Close()
	if c.up != nil {
		c.up.Close()
	}
}

// effective is the combined rule on a link; an unknown source is never faulted.
func (n *network) effective(src, dst int) rule {
	var r rule
	if src < 0 {
		return r
	}
	l := linkOf(src, dst)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, layer := range n.layers {
		if x, ok := layer[l]; ok {
			r.block = r.block || x.block
			r.drop = max(r.drop, x.drop)
			r.delay += x.delay
		}
	}
	return r
}

// apply adds a layer of rules and returns its handle for heal. Connections on a blocked link
// are cut at once, as a partition would leave them.
func (n *network) apply(rules map[link]rule) int {
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	n.layers[id] = rules
	var cut []*pconn
	for c := range n.conns {
		if c.src >= 0 && rules[linkOf(c.src, c.dst)].block {
			cut = append(cut, c)
		}
	}
	n.mu.Unlock()
	for _, c := range cut {
		n.cut.Add(1)
		c.close()
	}
	return id
}

// heal removes a layer. Connections that hung on a link blocked by it are closed, so that the
// members reconnect at once instead of waiting for their dial timeout.
func (n *network) heal(id int) {
	n.mu.Lock()
	rules := n.layers[id]
	delete(n.layers, id)
	var hung []*pconn
	for c := range n.conns {
		if c.src >= 0 && c.hanging() && rules[linkOf(c.src, c.dst)].block {
			hung = append(hung, c)
		}
	}
	n.mu.Unlock()
	for _, c := range hung {
		c.close()
	}
}

// healAll removes every layer.
func (n *network) healAll() {
	n.mu.Lock()
	var ids []int
	for id := range n.layers {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	for _, id := range ids {
		n.heal(id)
	}
}

func (n *network) chance(p float64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rnd.Float64() < p
}

// proxy is one listening port in front of a member's real peer port.
type proxy struct {
	n      *network
	slot   int
	ln     net.Listener
	target func() string // the member's real peer address; it changes if the port had to
	wg     sync.WaitGroup
}

func listenProxy(n *network, slot int, target func() string) (*proxy, error) {
	ln, err := freeport.Listen()
	if err != nil {
		return nil, err
	}
	p := &proxy{n: n, slot: slot, ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) url() string { return p.n.scheme + "://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.handle(c) }()
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.n.mu.Lock()
	var mine []*pconn
	for c := range p.n.conns {
		if c.dst == p.slot {
			mine = append(mine, c)
		}
	}
	p.n.mu.Unlock()
	for _, c := range mine {
		c.close()
	}
	p.wg.Wait()
}

func (p *proxy) handle(down net.Conn) {
	n := p.n
	n.accepted.Add(1)
	key, src := n.sources.of(down)
	c := &pconn{src: src, dst: p.slot, down: down}
	if c.src < 0 {
		n.unknownSource.Add(1)
	}
	n.mu.Lock()
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.sources.forget(key)
		c.close()
		n.mu.Lock()
		delete(n.conns, c)
		n.mu.Unlock()
	}()
	if n.effective(c.src, c.dst).block {
		// A partition: the connection opens but nothing ever comes back, until heal closes it.
		_, _ = io.Copy(io.Discard, down)
		return
	}
	up, err := net.DialTimeout("tcp", p.target(), time.Second)
	if err != nil {
		return
	}
	if !c.setUp(up) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pump(c, up, down); done <- struct{}{} }()
	go func() { p.pump(c, down, up); done <- struct{}{} }()
	<-done
	c.close()
	<-done
}

func (p *proxy) pump(c *pconn, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			r := p.n.effective(c.src, c.dst)
			if r.block || r.drop > 0 && p.n.chance(r.drop) {
				p.n.cut.Add(1)
				return
			}
			if r.delay > 0 {
				// The delay is the fault itself, not a wait for something to happen.
				time.Sleep(r.delay)
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sources finds the member process that opened a connection to a proxy: the kernel's socket
// table names the inode of the member's socket, and the member's open files name the same
// inode. One scan of both learns the source of every connection open at the time, so a burst of
// connections (every member dialing again after a partition heals) costs one scan, not one
// each; an entry goes when its connection closes, as the pair of ports may be used again by
// another member.
type sources struct {
	pids func() map[int]int // live member processes: pid to slot
	scan sync.Mutex         // one scan at a time: who waited for one reads what it learnt

	mu    sync.Mutex
	known map[[2]int]int // the member's port and the proxy's port to the member's slot
}

// of returns the connection's key (the member's port and the proxy's) and the slot of the
// member that opened it, or -1 if it is not known.
func (s *sources) of(c net.Conn) ([2]int, int) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return [2]int{}, -1
	}
	key := [2]int{remote.Port, local.Port}
	if slot, ok := s.get(key); ok {
		return key, slot
	}
	s.scan.Lock()
	defer s.scan.Unlock()
	if slot, ok := s.get(key); ok {
		return key, slot // learnt by the scan this one waited for
	}
	s.learn()
	if slot, ok := s.get(key); ok {
		return key, slot
	}
	return key, -1
}

func (s *sources) get(key [2]int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.known[key]
	return slot, ok
}

func (s *sources) forget(key [2]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, key)
}

// learn maps every IPv4 socket a live member holds to its slot, by its ports.
func (s *sources) learn() {
	ports := socketPorts()
	learnt := map[[2]int]int{}
	for pid, slot := range s.pids() {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			l, err := os.Readlink(dir + "/" + e.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if key, ok := ports[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]; ok {
				learnt[key] = slot
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, slot := range learnt {
		s.known[key] = slot
	}
}

// socketPorts maps the inode of every IPv4 TCP socket in /proc/net/tcp to its local and remote
// ports. Only the test's members connect to the proxies' ports, all on 127.0.0.1, so the pair
// of ports names a connection.
func socketPorts() map[string][2]int {
	out := map[string][2]int{}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[9] == "0" {
			continue
		}
		out[fields[9]] = [2]int{hexPort(fields[1]), hexPort(fields[2])}
	}
	return out
}

func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	v, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}
