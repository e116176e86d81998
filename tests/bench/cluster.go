package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clusterctl/clusterctl/internal/freeport"
	"github.com/clusterctl/clusterctl/tests/internal/proc"
)

// member is one clusterd process and the addresses it was given.
type member struct {
	name       string
	clientAddr string // 127.0.0.1:PORT
	peerURL    string
	dataDir    string
	metricsURL string // with -profile: where its profiles are served
	p          *proc.Proc
	conn       *grpc.ClientConn // for probes, made once per member
}

func (m *member) running() bool { return m.p != nil && m.p.Running() }

func (m *member) clientURL() string { return "http://" + m.clientAddr }

// listenArgs are the flags no printed environment carries.
func (m *member) listenArgs() []string {
	return []string{
		"--data-dir=" + m.dataDir,
		"--listen-peer-urls=" + m.peerURL,
		"--listen-client-urls=" + m.clientURL(),
		"--advertise-client-urls=" + m.clientURL(),
	}
}

// localCluster is every clusterd this program started, in start order.
type localCluster struct {
	bin     string // clusterd
	dir     string
	extra   []string // flags every member gets
	profile bool     // serve profiles (-profile)
	members []*member
}

func newMember(dir, name string) (*member, error) {
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	return &member{
		name:       name,
		clientAddr: "127.0.0.1:" + strconv.Itoa(ports[0]),
		peerURL:    "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		dataDir:    filepath.Join(dir, "data", name),
	}, nil
}

// bootstrap starts n members as a new cluster and does not wait for them.
func (c *localCluster) bootstrap(n int) error {
	var ms []*member
	var ic []string
	for i := range n {
		m, err := newMember(c.dir, "infra"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		ms = append(ms, m)
		ic = append(ic, m.name+"="+m.peerURL)
	}
	for _, m := range ms {
		args := append([]string{
			"--name=" + m.name,
			"--initial-advertise-peer-urls=" + m.peerURL,
			"--initial-cluster=" + strings.Join(ic, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=bench",
		}, m.listenArgs()...)
		if err := c.start(m, args, nil); err != nil {
			return err
		}
	}
	return nil
}

// start starts m with exactly args plus the cluster's extra flags, and env on top of PATH.
func (c *localCluster) start(m *member, args, env []string) error {
	if err := os.MkdirAll(filepath.Dir(m.dataDir), 0o755); err != nil {
		return err
	}
	args = append(append([]string{}, args...), c.extra...)
	if c.profile {
		ports, err := freeport.Ports(1)
		if err != nil {
			return err
		}
		m.metricsURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		args = append(args, "--listen-metrics-urls="+m.metricsURL, "--enable-pprof")
	}
	p, err := proc.Start(proc.Spec{
		Name:   m.name,
		Path:   c.bin,
		Args:   args,
		Env:    append([]string{"PATH=" + os.Getenv("PATH")}, env...),
		Dir:    c.dir,
		Stdout: filepath.Join(c.dir, m.name+".stdout"),
		Stderr: filepath.Join(c.dir, m.name+".stderr"),
	})
	if err != nil {
		return err
	}
	m.p = p
	c.members = append(c.members, m)
	return nil
}

// running returns the members whose process runs, in start order.
func (c *localCluster) running() []*member {
	var ms []*member
	for _, m := range c.members {
		if m.running() {
			ms = append(ms, m)
		}
	}
	return ms
}

// stop sends SIGTERM to every running member and kills those that do not exit within a few
// seconds; probe connections are closed too.
func (c *localCluster) stop() {
	for _, m := range c.members {
		if m.running() {
			_ = m.p.Signal(sigterm)
		}
	}
	for _, m := range c.members {
		if m.p != nil {
			if _, err := m.p.Wait(5 * time.Second); err != nil {
				_, _ = m.p.Kill(5 * time.Second)
			}
		}
		if m.conn != nil {
			m.conn.Close()
			m.conn = nil
		}
	}
}

func (m *member) probeConn() (*grpc.ClientConn, error) {
	if m.conn != nil {
		return m.conn, nil
	}
	cc, err := grpc.NewClient("passthrough:///"+m.clientAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	m.conn = cc
	return cc, nil
}

// status asks m for its Maintenance.Status within a short bound: a member that is up answers on
// loopback in milliseconds.
func (m *member) status(ctx context.Context) (*pb.StatusResponse, error) {
	cc, err := m.probeConn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
}

// waitLeader waits until every running member reports the same leader and that leader is one of
// them, and returns it.
func (c *localCluster) waitLeader(ctx context.Context, timeout time.Duration) (*member, error) {
	var leader *member
	err := poll(ctx, timeout, "wait for one leader among the running members", func() (bool, error) {
		ms := c.running()
		if len(ms) == 0 {
			return true, errors.New("no member is running")
		}
		byID := map[uint64]*member{}
		var seen uint64
		for _, m := range ms {
			st, err := m.status(ctx)
			if err != nil {
				return false, fmt.Errorf("%s: %v", m.name, err)
			}
			if st.GetLeader() == 0 || (seen != 0 && st.GetLeader() != seen) {
				return false, fmt.Errorf("%s follows %x, others %x", m.name, st.GetLeader(), seen)
			}
			seen = st.GetLeader()
			byID[st.GetHeader().GetMemberId()] = m
		}
		leader = byID[seen]
		if leader == nil {
			return false, fmt.Errorf("leader %x is not running", seen)
		}
		return true, nil
	})
	return leader, err
}

// endpoints returns the client addresses of ms joined by commas, the form --endpoints takes.
func endpoints(ms []*member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.clientAddr
	}
	return strings.Join(parts, ",")
}

// poll calls cond until it reports done, returns a final error, ctx ends or timeout passes. The
// interval is short because most conditions on loopback hold within milliseconds; every call is
// followed by a wait, so the number of calls is bounded by the timeout.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for attempt := 1; ; attempt++ {
		done, err := cond()
		if done {
			return err
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %v (%d attempts): %v", what, timeout, attempt, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
