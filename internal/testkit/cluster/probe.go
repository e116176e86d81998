package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

// probeTimeout bounds one RPC of a probe. A member that is up answers on loopback in
// milliseconds; one that does not answer within this is treated as not ready and asked again.
const probeTimeout = 2 * time.Second

// call dials the member's client address, runs f and closes the connection. A fresh connection
// per probe avoids gRPC's reconnect backoff, which after a restart could delay a cached
// connection by seconds after the member is already serving.
func call(m *Member, f func(ctx context.Context, cc *grpc.ClientConn) error) error {
	creds := m.creds
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	cc, err := grpc.NewClient("passthrough:///"+m.ClientAddr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	return f(ctx, cc)
}

// Status asks the member for its Maintenance.Status.
func Status(m *Member) (*pb.StatusResponse, error) {
	var resp *pb.StatusResponse
	err := call(m, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", m.Name, err)
	}
	return resp, nil
}

// MemberList asks the member for the member list, linearizable or served from its own state.
func MemberList(m *Member, linearizable bool) (*pb.MemberListResponse, error) {
	var resp *pb.MemberListResponse
	err := call(m, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = pb.NewClusterClient(cc).MemberList(ctx, &pb.MemberListRequest{Linearizable: linearizable})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("member list from %s: %w", m.Name, err)
	}
	return resp, nil
}

// find returns the entry for m in a member list: by name once it has started, by peer URL before
// (an unstarted member has no name on the wire).
func find(list []*pb.Member, m *Member) *pb.Member {
	for _, x := range list {
		if x.GetName() == m.Name {
			return x
		}
	}
	for _, x := range list {
		if slices.Contains(x.GetPeerURLs(), m.PeerURL) {
			return x
		}
	}
	return nil
}

// anyList returns a member list from the first running member that serves one. Learners of real
// etcd refuse MemberList, so every running member is tried.
func (c *Cluster) anyList(linearizable bool) (*pb.MemberListResponse, error) {
	var errs []error
	for _, m := range c.Running() {
		resp, err := MemberList(m, linearizable)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("no member is running")
	}
	return nil, errors.Join(errs...)
}

// WaitStarted waits until each named member is running, answers Status with a leader known, and
// is listed as started (with its name and client URLs) by a running member.
func (c *Cluster) WaitStarted(timeout time.Duration, names ...string) error {
	for _, name := range names {
		m, err := c.Member(name)
		if err != nil {
			return err
		}
		err = proc.PollContext(c.cfg.Context, timeout, "wait for "+name+" to start", func() (bool, error) {
			if !m.Running() {
				return true, c.exited(m)
			}
			st, err := Status(m)
			if err != nil {
				return false, err
			}
			if st.GetLeader() == 0 {
				return false, fmt.Errorf("%s knows no leader", name)
			}
			list, err := c.anyList(false)
			if err != nil {
				return false, err
			}
			x := find(list.GetMembers(), m)
			if x == nil || x.GetName() != name || len(x.GetClientURLs()) == 0 {
				return false, fmt.Errorf("%s is not listed as started: %v", name, list.GetMembers())
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("%v\nmembers:\n%s\n%s's stderr ends:\n%s", err, c.Describe(), name, proc.Tail(m.Stderr, 20))
		}
	}
	return nil
}

func (c *Cluster) exited(m *Member) error {
	if m.proc == nil {
		return fmt.Errorf("%s was never started", m.Name)
	}
	e, _ := m.proc.Wait(0)
	return fmt.Errorf("%s exited (%v); its stderr ends:\n%s", m.Name, e, proc.Tail(m.Stderr, 20))
}

// WaitLeader waits until every running member (or the named ones) reports the same leader, and
// that leader is one of them. It returns the leader and its ID.
func (c *Cluster) WaitLeader(timeout time.Duration, names ...string) (*Member, uint64, error) {
	var leader *Member
	var leaderID uint64
	err := proc.PollContext(c.cfg.Context, timeout, "wait for a leader", func() (bool, error) {
		ms := c.Running()
		if len(names) > 0 {
			ms = ms[:0]
			for _, n := range names {
				m, err := c.Member(n)
				if err != nil {
					return true, err
				}
				if !m.Running() {
					return true, c.exited(m)
				}
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			return true, errors.New("no member is running")
		}
		ids := map[uint64]*Member{}
		var seen uint64
		for _, m := range ms {
			st, err := Status(m)
			if err != nil {
				return false, err
			}
			if st.GetLeader() == 0 {
				return false, fmt.Errorf("%s knows no leader", m.Name)
			}
			if seen != 0 && st.GetLeader() != seen {
				return false, fmt.Errorf("members disagree on the leader: %x and %x", seen, st.GetLeader())
			}
			seen = st.GetLeader()
			ids[st.GetHeader().GetMemberId()] = m
		}
		l, ok := ids[seen]
		if !ok {
			return false, fmt.Errorf("leader %016x is not among %d running members", seen, len(ms))
		}
		leader, leaderID = l, seen
		return true, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%v\nmembers:\n%s", err, c.Describe())
	}
	return leader, leaderID, nil
}

// WaitNoLeader waits until the member answers Status and knows no leader, as after it lost
// contact with a quorum.
func (c *Cluster) WaitNoLeader(timeout time.Duration, name string) error {
	m, err := c.Member(name)
	if err != nil {
		return err
	}
	return proc.PollContext(c.cfg.Context, timeout, "wait for "+name+" to lose its leader", func() (bool, error) {
		if !m.Running() {
			return true, c.exited(m)
		}
		st, err := Status(m)
		if err != nil {
			return false, err
		}
		if st.GetLeader() != 0 {
			return false, fmt.Errorf("%s still follows %016x", name, st.GetLeader())
		}
		return true, nil
	})
}

// ID returns the member's ID as the cluster lists it; a member that was added but never started
// is found by its peer URL.
func (c *Cluster) ID(timeout time.Duration, name string) (uint64, error) {
	m, err := c.Member(name)
	if err != nil {
		return 0, err
	}
	var id uint64
	err = proc.PollContext(c.cfg.Context, timeout, "find the ID of "+name, func() (bool, error) {
		list, err := c.anyList(true)
		if err != nil {
			return false, err
		}
		x := find(list.GetMembers(), m)
		if x == nil {
			return true, fmt.Errorf("%s (peer %s) is not in the member list", name, m.PeerURL)
		}
		id = x.GetID()
		return true, nil
	})
	return id, err
}

// WaitCaughtUp waits until the member has applied everything the leader had committed when the
// wait began and, unless it is a learner (real etcd's learners refuse MemberList), until its own
// serializable member list equals the leader's linearizable one.
func (c *Cluster) WaitCaughtUp(timeout time.Duration, name string) error {
	m, err := c.Member(name)
	if err != nil {
		return err
	}
	leader, _, err := c.WaitLeader(timeout)
	if err != nil {
		return err
	}
	lst, err := Status(leader)
	if err != nil {
		return err
	}
	target := lst.GetRaftIndex()
	err = proc.PollContext(c.cfg.Context, timeout, fmt.Sprintf("wait for %s to apply index %d", name, target), func() (bool, error) {
		if !m.Running() {
			return true, c.exited(m)
		}
		st, err := Status(m)
		if err != nil {
			return false, err
		}
		if st.GetRaftAppliedIndex() < target {
			return false, fmt.Errorf("%s applied %d of %d", name, st.GetRaftAppliedIndex(), target)
		}
		if st.GetIsLearner() {
			return true, nil
		}
		want, err := MemberList(leader, true)
		if err != nil {
			return false, err
		}
		got, err := MemberList(m, false)
		if err != nil {
			return false, err
		}
		if a, b := listKey(got.GetMembers()), listKey(want.GetMembers()); a != b {
			return false, fmt.Errorf("%s lists\n%s\nthe leader lists\n%s", name, a, b)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%v\nmembers:\n%s", err, c.Describe())
	}
	return nil
}

// listKey renders a member list in a canonical order, for comparing two members' views.
func listKey(ms []*pb.Member) string {
	lines := make([]string, len(ms))
	for i, x := range ms {
		lines[i] = fmt.Sprintf("%016x %s %s %s %v", x.GetID(), x.GetName(),
			strings.Join(x.GetPeerURLs(), ","), strings.Join(x.GetClientURLs(), ","), x.GetIsLearner())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
