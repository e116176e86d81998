package wire

import (
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// Request metadata on the client port.
const (
	// MemberName is MemberAdd's new member's name, stored with the member from the start.
	MemberName = "clusterd-member-name"
	// MDVia is on a membership change: the clusterctl command that makes it, one of the Via
	// values (history.go), recorded in the history beside who asked; any other value is not.
	MDVia = "clusterd-via"
)

// Response header metadata on the client port, and on the peer port where a change is
// forwarded to the leader. The -bin keys carry protobuf (clusterdpb), which gRPC sends in base64.
const (
	// Members is every Cluster answer's clusterdpb.MemberList: each member's ID, name and
	// started flag (MembersValue).
	Members = "clusterd-members-bin"
	// Leader is the leader's ID in 16 hex digits, empty without one.
	Leader = "clusterd-leader"
)

// PeerURLs is the raft stream's metadata naming its sender's peer URLs.
const PeerURLs = "clusterd-peer-urls"

// MembersValue is the value of Members for c: its members' IDs, names and started flags.
func MembersValue(c *membership.Cluster) string {
	list := &pb.MemberList{}
	for _, m := range c.List() {
		list.Members = append(list.Members, &pb.Member{Id: uint64(m.ID), Name: m.Name, Started: m.Started})
	}
	b, _ := proto.Marshal(list)
	return string(b)
}

// MembersFromValue reads a value of Members.
func MembersFromValue(v string) ([]membership.Member, error) {
	var list pb.MemberList
	if err := proto.Unmarshal([]byte(v), &list); err != nil {
		return nil, err
	}
	out := make([]membership.Member, len(list.GetMembers()))
	for i, m := range list.GetMembers() {
		out[i] = MemberFromProto(m)
	}
	return out, nil
}
