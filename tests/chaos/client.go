package chaos

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/anishathalye/porcupine"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// record is one call with its times, as porcupine takes it once the run is over.
type record struct {
	client int
	in     input
	out    output
	call   time.Duration
	ret    time.Duration // meaningless when out.Unknown
	// after is the membership an accepted add returned (checkLiveQuorum).
	after []mem
}

// recorder keeps the history and the gRPC connections of every client.
type recorder struct {
	start time.Time

	mu         sync.Mutex
	history    []record
	unexpected []string
	counts     map[string]int
	conns      map[string]*grpc.ClientConn
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), counts: map[string]int{}, conns: map[string]*grpc.ClientConn{}}
}

func (r *recorder) conn(addr string) (pb.ClusterClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cc, ok := r.conns[addr]; ok {
		return pb.NewClusterClient(cc), nil
	}
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(transportCreds),
		// A member that comes back is used again at once, not after gRPC's long backoff.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		return nil, err
	}
	r.conns[addr] = cc
	return pb.NewClusterClient(cc), nil
}

func (r *recorder) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for addr, cc := range r.conns {
		cc.Close()
		delete(r.conns, addr)
	}
}

// do makes one call against the member at addr and records it. v is the membership a list
// returned, or the configuration after the add that an accepted add returned. sent is false
// when the call never left the client (no connection could be made): such a call is not part
// of the history.
func (r *recorder) do(ctx context.Context, client int, addr string, in input, timeout time.Duration) (out output, v *view, sent bool) {
	cl, err := r.conn(addr)
	if err != nil {
		return output{}, nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var header metadata.MD
	hdr := grpc.Header(&header)
	callAt := time.Now()
	switch in.Kind {
	case opAdd:
		var resp *pb.MemberAddResponse
		resp, err = cl.MemberAdd(metadata.AppendToOutgoingContext(ctx, wire.MemberName, in.Name),
			&pb.MemberAddRequest{PeerURLs: []string{in.URL}, IsLearner: in.Learner}, hdr)
		if err == nil {
			out.ID = resp.GetMember().GetID()
			// What member add prints its environment from. A header that cannot be read only
			// costs that; the lists check the header.
			v, _ = toView(&pb.MemberListResponse{Header: resp.GetHeader(), Members: resp.GetMembers()}, header)
		}
	case opRemove:
		_, err = cl.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: in.ID}, hdr)
	case opUpdate:
		_, err = cl.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: in.ID, PeerURLs: []string{in.URL}}, hdr)
	case opPromote:
		_, err = cl.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: in.ID}, hdr)
	case opList:
		var resp *pb.MemberListResponse
		resp, err = cl.MemberList(ctx, &pb.MemberListRequest{Linearizable: true}, hdr)
		if err == nil {
			v, err = toView(resp, header)
			if err == nil {
				out.Members = v.members
			}
		}
	}
	retAt := time.Now()
	if err != nil {
		var ok bool
		if out, ok = r.classify(in, err); !ok {
			return out, nil, false
		}
	}
	if v != nil {
		v.callAt, v.retAt = callAt, retAt
	}
	if in.Kind == opList && err != nil {
		// A list that failed changed nothing and says nothing: porcupine need not see it.
		r.count(in, out)
		return out, nil, true
	}
	r.mu.Lock()
	rc := record{client: client, in: in, out: out, call: callAt.Sub(r.start), ret: retAt.Sub(r.start)}
	if in.Kind == opAdd && v != nil {
		rc.after = v.members
	}
	r.history = append(r.history, rc)
	r.mu.Unlock()
	r.count(in, out)
	return out, v, true
}

func (r *recorder) count(in input, out output) {
	key := in.Kind.String()
	if in.Kind == opAdd && in.Learner {
		key += " learner"
	}
	switch {
	case out.Unknown:
		key += ": unknown"
	case out.Err != "":
		key += ": " + strings.TrimPrefix(out.Err, "etcdserver: ")
	default:
		key += ": ok"
	}
	r.mu.Lock()
	r.counts[key]++
	r.mu.Unlock()
}

// classify turns an error into the call's output. A documented refusal (see known in model.go)
// is definite, except "request timed out"; a deadline or a lost connection leaves the outcome
// unknown; a call that failed while dialing was never sent.
func (r *recorder) classify(in input, err error) (output, bool) {
	st, _ := status.FromError(err)
	msg := st.Message()
	switch {
	case msg == errTimedOut:
		return output{Unknown: true}, true
	case known[msg]:
		return output{Err: msg}, true
	case st.Code() == codes.Unavailable && strings.Contains(msg, "Error while dialing"):
		return output{}, false
	case st.Code() == codes.Unavailable, st.Code() == codes.DeadlineExceeded, st.Code() == codes.Canceled:
		return output{Unknown: true}, true
	}
	r.mu.Lock()
	r.unexpected = append(r.unexpected, fmt.Sprintf("%s: %v", describe(in, output{}), err))
	r.mu.Unlock()
	return output{Unknown: true}, true
}

// toView reads a list: the members from the response, their names and started flags from the
// clusterd-members-bin header (an unstarted member has no name in etcd's Member).
func toView(resp *pb.MemberListResponse, header metadata.MD) (*view, error) {
	v := &view{started: map[uint64]bool{}}
	names := map[uint64]membership.Member{}
	if vals := header.Get(wire.Members); len(vals) > 0 {
		infos, err := wire.MembersFromValue(vals[0])
		if err != nil {
			return nil, fmt.Errorf("header %s: %v", wire.Members, err)
		}
		for _, i := range infos {
			names[uint64(i.ID)] = i
		}
	}
	if vals := header.Get(wire.Leader); len(vals) > 0 && vals[0] != "" {
		fmt.Sscanf(vals[0], "%x", &v.leader)
	}
	for _, m := range resp.GetMembers() {
		info := names[m.GetID()]
		urls := slices.Clone(m.GetPeerURLs())
		sort.Strings(urls)
		v.members = append(v.members, mem{ID: m.GetID(), Name: info.Name, URL: strings.Join(urls, ","), Learner: m.GetIsLearner()})
		v.started[m.GetID()] = info.Started
	}
	sort.Slice(v.members, func(i, j int) bool { return v.members[i].ID < v.members[j].ID })
	return v, nil
}

// operations turns the history into porcupine's form. An add of unknown outcome gets the ID its
// name was seen with; a call of unknown outcome returns at infinity.
func operations(history []record) (ops []porcupine.Operation, problems []string) {
	seen := map[string]map[uint64]bool{}
	for _, h := range history {
		if h.in.Kind == opList && !h.out.Unknown && h.out.Err == "" {
			for _, m := range h.out.Members {
				if seen[m.Name] == nil {
					seen[m.Name] = map[uint64]bool{}
				}
				seen[m.Name][m.ID] = true
			}
		}
	}
	for _, h := range history {
		in := h.in
		if in.Kind == opAdd {
			ids := seen[in.Name]
			if len(ids) > 1 || len(ids) == 1 && h.out.ID != 0 && !ids[h.out.ID] {
				var list []string
				for id := range ids {
					list = append(list, fmt.Sprintf("%016x", id))
				}
				sort.Strings(list)
				problems = append(problems, fmt.Sprintf("one %s made members %s", describe(in, h.out), strings.Join(list, ", ")))
			}
			if h.out.Unknown {
				for id := range ids {
					in.ID = id
				}
			}
		}
		ret := int64(h.ret)
		if h.out.Unknown {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: h.client, Input: in, Call: int64(h.call), Output: h.out, Return: ret})
	}
	return ops, problems
}
