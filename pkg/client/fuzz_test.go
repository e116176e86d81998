package client

import (
	"net"
	"strconv"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// FuzzParseEndpoint: an endpoint is refused or becomes a host:port whose port is a number from
// 1 to 65535; nothing panics. Seeds in testdata/fuzz/FuzzParseEndpoint.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"127.0.0.1:2379", "http://h:2379/", "https://[::1]:2379", "http://h:p/x", "unix:///x", ":0", "h:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, e string) {
		addr, _, err := parseEndpoint(e, false)
		if err != nil {
			return
		}
		host, port, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(addr, "/?#@") {
			t.Errorf("%q accepted as %q", e, addr)
		}
	})
}

// FuzzResolveIn: any reference resolves to one member, a hex ID for the server to judge, or a
// typed refusal; nothing panics.
func FuzzResolveIn(f *testing.F) {
	for _, s := range []string{"infra0", "77f41cbd71028a3a", "77F41CBD71028A3A", "12345abcde", "", "abc", "0x1", "-1", "ffffffffffffffffff"} {
		f.Add(s)
	}
	members := []Member{{ID: 0x77f41cbd71028a3a, Name: "infra0"}, {ID: 0xabc, Name: "abc"}, {ID: 1, Name: "abc2"}, {ID: 2, Name: "abc2"}}
	f.Fuzz(func(t *testing.T, ref string) {
		id, idErr := ParseID(ref)
		got, err := ResolveIn(members, ref)
		if err != nil {
			return
		}
		known := false
		for _, m := range members {
			known = known || m.ID == got && (m.Name == ref || idErr == nil && id == got)
		}
		if !known && (idErr != nil || got != id) {
			t.Errorf("%q resolved to %x", ref, got)
		}
	})
}

// FuzzDecodeAnswers: whatever a server sends, as a message body or in clusterd's metadata,
// decoding and converting it fails or succeeds without panicking. Seeds: etcd's own encodings of
// every answer, and clusterd's dry-run verdict.
func FuzzDecodeAnswers(f *testing.F) {
	c := membership.NewCluster(1, []*membership.Member{{ID: 0x96dbf27657837fe1, Name: "infra3"}, {ID: 1, Started: true}})
	for _, m := range []proto.Message{
		&pb.MemberListResponse{Header: pbHeader, Members: pbMembers},
		&pb.MemberAddResponse{Header: pbHeader, Member: pbMembers[0], Members: pbMembers},
		&pb.StatusResponse{Header: pbHeader, Version: "3.7.1", Leader: 1, RaftIndex: 2, RaftAppliedIndex: 3},
		wire.VerdictProto(&wire.Report{Cluster: c, Member: *c.Member(1), Before: membership.QuorumReport{Voters: 1}}, rpcerr.ErrMemberNotFound),
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, wire.MembersValue(c))
	f.Fuzz(func(t *testing.T, body []byte, md string) {
		var add pb.MemberAddResponse
		if proto.Unmarshal(body, &add) == nil {
			changeResult(add.GetHeader(), add.GetMembers(), add.GetMember().GetID(), metadata.Pairs(wire.Members, md, wire.Leader, md))
		}
		var st pb.StatusResponse
		if proto.Unmarshal(body, &st) == nil {
			statusOfAnswer(&st)
		}
		var verdict cpb.ChangeReply
		if proto.Unmarshal(body, &verdict) == nil {
			rep, _ := wire.VerdictFromProto(&verdict)
			dryRunOf(rep)
		}
	})
}
