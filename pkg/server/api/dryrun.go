package api

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// Check judges a membership change as the leader judges the change itself, and proposes
// nothing. The verdict is the answer, a refusal included (wire.VerdictProto); a status is what
// the change itself would meet before it was judged (a bad peer URL, this member stopping, no
// leader in time).
func (s *Server) Check(ctx context.Context, in *cpb.Change) (*cpb.ChangeReply, error) {
	ch, err := judged(wire.ChangeFromProto(in))
	if err != nil {
		return nil, rpcerr.Status(err)
	}
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	reply, err := s.do(ctx, reconfig.Request{Change: ch, DryRun: true})
	if reply == nil {
		return nil, rpcerr.Status(err)
	}
	return wire.VerdictProto(reply, rpcerr.Status(err)), nil
}

// judged is the change in as the Cluster service's handler of its kind makes it: the fields that
// kind takes, the peer URLs checked as that handler checks them. A publish is a member's own.
func judged(in membership.Change) (membership.Change, error) {
	m := in.Member
	switch in.Kind {
	case membership.KindAdd:
		m = membership.Member{Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner}
	case membership.KindUpdate:
		m = membership.Member{ID: m.ID, PeerURLs: m.PeerURLs}
	case membership.KindRemove, membership.KindPromote:
		m = membership.Member{ID: m.ID}
	default:
		return membership.Change{}, status.Errorf(codes.InvalidArgument, "a dry run judges an add, a removal, an update or a promotion, not a change of kind %d", in.Kind)
	}
	if in.Kind == membership.KindAdd || in.Kind == membership.KindUpdate {
		if err := checkPeerURLs(m.PeerURLs); err != nil {
			return membership.Change{}, err
		}
	}
	return membership.Change{Kind: in.Kind, Member: m}, nil
}
