package transport

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// ProbeInterval is etcd's prober interval (rafthttp's proberInterval: its connection read
// timeout of 5 s less a second), how often each peer's round trip is measured.
const ProbeInterval = 4 * time.Second

// probe measures the round trip to the peer every interval, until the peer is closed (removed,
// or the transport closed), on a connection of its own: the raft stream's connection carries
// appends that would queue the probe behind them, and is closed when idle. The call is a notice
// the receiver answers at once, without raft, so its time is the network's and the two gRPC
// stacks'. Only a call on a connection that was already established is observed: the first one,
// and the first after a failure, would time the dial. A failure closes the connection and moves
// to the peer's next URL, so a peer that is down costs one dial per interval; a refusal as a
// removed member is a claim to check (RemovalClaims).
func (p *peer) probe(interval time.Duration) {
	defer p.t.probes.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var conn *grpc.ClientConn
	connGen, next := -1, 0
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	n := p.t.notice(p.id)
	client := pb.PeerClient(nil)
	for {
		urls, gen := p.address()
		if conn != nil && gen != connGen {
			conn.Close()
			conn = nil
		}
		if conn == nil {
			var err error
			if conn, err = p.t.Dial(urls[next%len(urls)]); err == nil {
				conn.Connect()
				connGen = gen
				client = pb.NewPeerClient(conn)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if conn == nil {
			next++
			continue
		}
		established := conn.GetState() == connectivity.Ready
		cctx, ccancel := context.WithTimeout(ctx, interval)
		start := time.Now()
		_, err := client.Probe(cctx, n)
		rtt := time.Since(start)
		ccancel()
		if err != nil {
			p.t.claimIfRefusedAsRemoved(err)
			conn.Close()
			conn, next = nil, next+1
			continue
		}
		if established {
			p.t.observeRoundTrip(p, rtt)
		}
	}
}

// observeRoundTrip records rtt unless p has been removed meanwhile: SetPeers drops a removed
// peer's series under the same lock, and a late probe must not bring them back.
func (t *Transport) observeRoundTrip(p *peer, rtt time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.peers[p.id] == p {
		t.cfg.Metrics.PeerRoundTrip(uint64(p.id), rtt)
	}
}
