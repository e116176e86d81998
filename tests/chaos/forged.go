package chaos

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// stranger is the ID the forged-notice fault speaks as when it claims no member's name.
const stranger = 0xdeadbeef

// forgedNotice speaks the peer protocol to every running member, straight to its peer port, as
// a stranger would and in its peers' names: a Removed notice from a stranger and from each other
// member, a greeting and a past term's acknowledgement in another member's name, and raft
// messages of absurd terms (forgeAbsurd). With -tls it holds a member's peer certificate, which
// covers 127.0.0.1, every member's host: what a stolen member certificate allows, past the
// handshake and the identity checks to raft's own (a client certificate is refused at the
// handshake, and a stranger's identity forgeries are the forged-identity fault's). None of it
// may remove a member: one that exits 3 (removed) during the fault while a linearizable list
// taken afterwards still shows it fails the run.
func (f *injector) forgedNotice(ctx context.Context, sn snapshot) bool {
	if len(sn.clients) < 2 {
		return false
	}
	st, err := memberStatus(ctx, pick(f.rnd, sn.clients), time.Second)
	if err != nil {
		return false
	}
	type target struct {
		id   uint64
		url  string
		proc *process
	}
	scheme, creds := "http", credentials.TransportCredentials(nil)
	if p := f.c.pki; p != nil {
		scheme = "https"
		cert, err := p.peer[0].TLS()
		if err != nil {
			return false
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{cert}})
	}
	var ids []uint64
	var targets []target
	f.c.mu.Lock()
	for id := range sn.clients {
		s := f.c.slots[sn.slotOf[id]]
		if s.id == id && s.proc != nil && !s.held {
			ids = append(ids, id)
			targets = append(targets, target{id: id, url: fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.peer), proc: s.proc})
		}
	}
	f.c.mu.Unlock()
	slices.Sort(ids)
	for _, t := range targets {
		others := slices.DeleteFunc(slices.Clone(ids), func(id uint64) bool { return id == t.id })
		if len(others) == 0 {
			continue
		}
		f.forge(ctx, t.url, creds, st.GetHeader().GetClusterId(), t.id, others, max(st.GetRaftTerm(), 2)-1)
	}
	f.c.countStat(fmt.Sprintf("forged notice: sent to %d members", len(targets)))
	// A member asks its voters within an election timeout of a notice; a few of them.
	sleep(ctx, 4*f.c.cfg.election)
	for _, t := range targets {
		if !t.proc.exited() {
			continue
		}
		if code, own := t.proc.ownExit(); !own || code != 3 {
			continue
		}
		listed, ok := f.stillListed(ctx, t.id)
		switch {
		case !ok:
			f.c.countStat("forged notice: a member exited 3 meanwhile, and no list could say whether it was removed")
		case listed:
			f.c.fail("%016x exited as removed after forged Removed notices, and a linearizable list still shows it a member:\n%s", t.id, t.proc.logTail(5))
		default:
			f.c.countStat("forged notice: a member a client removed meanwhile exited 3")
		}
	}
	return true
}

// forge sends the member at url every forged call, each answered or refused within a second.
func (f *injector) forge(ctx context.Context, url string, creds credentials.TransportCredentials, cluster, to uint64, others []uint64, staleTerm uint64) {
	conn, err := transport.Dial(url, creds)
	if err != nil {
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, from := range append([]uint64{stranger}, others...) {
		_ = peerspeak.SendNotice(ctx, conn, peerspeak.Removed, cluster, from, to)
	}
	other := others[f.rnd.IntN(len(others))]
	_ = peerspeak.SendNotice(ctx, conn, peerspeak.Hello, cluster, other, to)
	ack := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeatResp.Enum(), From: proto.Uint64(other), To: proto.Uint64(to), Term: proto.Uint64(staleTerm)}
	_ = peerspeak.SendRaft(ctx, conn, nil, []*peerspeak.Envelope{{ClusterID: cluster, From: other, To: to, Message: ack}})
	f.forgeAbsurd(ctx, conn, cluster, to, other, staleTerm+1)
}

// forgeAbsurd sends the member raft messages of terms no cluster reaches, from a stranger and in
// another member's name, each on a stream of its own: a heartbeat of term 2^64-1 (after which
// raft's next campaign overflows the term and panics, on every restart too), a vote request and
// an append past 2^63, a heartbeat 2^33 terms ahead of the term a member reported (twice the
// step a member takes from a message, so one that moved meanwhile still refuses it). Each must
// be refused; one taken fails the run, and a member that panicked on one is what the run's exit
// check and restarts catch.
func (f *injector) forgeAbsurd(ctx context.Context, conn *grpc.ClientConn, cluster, to, other, term uint64) {
	msg := func(typ raftpb.MessageType, from, term uint64) *raftpb.Message {
		return &raftpb.Message{Type: typ.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term)}
	}
	for _, from := range []uint64{stranger, other} {
		for _, m := range []*raftpb.Message{
			msg(raftpb.MessageType_MsgHeartbeat, from, math.MaxUint64),
			msg(raftpb.MessageType_MsgVote, from, 1<<63+1),
			msg(raftpb.MessageType_MsgApp, from, 1<<63+1),
			msg(raftpb.MessageType_MsgHeartbeat, from, term+1<<33),
		} {
			err := peerspeak.SendRaft(ctx, conn, nil, []*peerspeak.Envelope{{ClusterID: cluster, From: from, To: to, Message: m}})
			if err == nil {
				f.c.fail("%016x took a forged %s of term %d from %x", to, m.GetType(), m.GetTerm(), from)
				return
			}
			f.c.countStat("forged notice: a raft message of an absurd term refused")
		}
	}
}

// stillListed reports whether a linearizable member list from any running member shows id,
// and whether any member answered one.
func (f *injector) stillListed(ctx context.Context, id uint64) (listed, ok bool) {
	for _, addr := range f.c.liveClients() {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(transportCreds))
		if err != nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := pb.NewClusterClient(cc).MemberList(lctx, &pb.MemberListRequest{Linearizable: true})
		cancel()
		cc.Close()
		if err != nil {
			continue
		}
		return slices.ContainsFunc(resp.GetMembers(), func(m *pb.Member) bool { return m.GetID() == id }), true
	}
	return false, false
}
