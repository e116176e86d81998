package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/client"
)

// The TLS phase: a second 3-member cluster with TLS and client-certificate authentication on
// both ports and RSA 2048 keys from one CA, as kubeadm sets etcd up, measured beside the plain
// cluster while both are fresh. Its keys in tlsFigures.lists:
const (
	tlsCtl     = "clusterctl"       // clusterctl --cacert/--cert/--key, every TLS endpoint
	tlsEtcdctl = "etcdctl"          // etcdctl with the same flags and files
	tlsFloor   = "floor"            // the floor over TLS with the same files
	plainCtl   = "clusterctl_plain" // clusterctl on the plain cluster, interleaved with the above
	plainFloor = "floor_plain"      // the floor on the plain cluster, interleaved with the above
)

// tlsFigures are the TLS phase's measurements.
type tlsFigures struct {
	lists map[string][]runResult
	// conf holds single conf changes through pkg/client, leader first, pair by pair in turn on
	// the TLS cluster (peer and client TLS) and on the plain one.
	conf map[bool]samples // key: TLS
}

// tlsPhase starts the TLS cluster, times whole member list processes on it against the same on
// the plain cluster, then conf changes on both in turn, and stops it again, so that it is not
// running while the plain cluster's later figures are measured.
func (b *bench) tlsPhase(ctx context.Context, plain []*cluster.Member) (*tlsFigures, error) {
	dir := filepath.Join(b.dir, "tls")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca, err := testpki.NewCA(dir, "ca", testpki.RSA2048)
	if err != nil {
		return nil, err
	}
	root, err := ca.Client("root")
	if err != nil {
		return nil, err
	}
	c := cluster.New(cluster.Config{
		Server: b.clusterd, Dir: dir, TLS: ca, Token: "bench-tls", Context: ctx,
		Env:  []string{"PATH=" + os.Getenv("PATH")},
		Args: []string{fmt.Sprintf("--snapshot-count=%d", b.opt.snapshotCount), "--log-level=" + b.opt.logLevel},
	})
	defer func() {
		if err := c.StopAll(5 * time.Second); err != nil {
			b.logf("stopping the TLS members: %v", err)
		}
	}()
	b.logf("TLS phase: starting 3 members with RSA 2048 certificates in %s", dir)
	ms, err := c.Bootstrap(3, nil)
	if err != nil {
		return nil, err
	}
	cert, err := root.TLS()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}
	if err := waitReadyOf(ctx, c, cfg); err != nil {
		return nil, err
	}

	files := []string{"--cacert=" + ca.CertFile, "--cert=" + root.CertFile, "--key=" + root.KeyFile}
	var https []string
	for _, m := range ms {
		https = append(https, m.ClientURL())
	}
	tlsArgs := append([]string{"--endpoints=" + strings.Join(https, ",")}, files...)
	tools := []tool{
		{key: tlsCtl, path: b.clusterctl, args: append(append([]string{}, tlsArgs...), "member", "list"), lines: 3},
		{key: tlsFloor, path: b.floor, args: []string{ms[0].ClientAddr, ca.CertFile, root.CertFile, root.KeyFile}},
		{key: plainCtl, path: b.clusterctl, args: []string{"--endpoints=" + cluster.Endpoints(plain), "member", "list"}, lines: 3},
		{key: plainFloor, path: b.floor, args: []string{plain[0].ClientAddr}},
	}
	if b.etcdctl != "" {
		tools = append(tools, tool{key: tlsEtcdctl, path: b.etcdctl, args: append(append([]string{}, tlsArgs...), "member", "list"), lines: 3})
	}
	b.logf("TLS phase: member list, %d runs (+%d warm-up) per program", b.opt.tlsRuns, b.opt.warmup)
	f := &tlsFigures{}
	if f.lists, err = b.listRunsN(ctx, tools, b.opt.tlsRuns); err != nil {
		return nil, err
	}
	b.logf("TLS phase: conf changes in process, %d pairs (+%d warm-up) per cluster", b.opt.confRuns, b.opt.warmup)
	if f.conf, err = b.tlsConfChanges(ctx, c, cfg); err != nil {
		return nil, err
	}
	return f, nil
}

// tlsConfChanges adds and removes a learner through pkg/client, leader first, pair by pair on
// the TLS cluster c and on the plain one in turn, so both see the same machine.
func (b *bench) tlsConfChanges(ctx context.Context, c *cluster.Cluster, cfg *tls.Config) (map[bool]samples, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	clients := map[bool]*client.Client{}
	for _, secure := range []bool{false, true} {
		of, conf := b.c, (*tls.Config)(nil)
		if secure {
			of, conf = c, cfg
		}
		ms, _, err := leaderFirstOf(of)
		if err != nil {
			return nil, err
		}
		cl, err := newTLSClient(ms, conf)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		clients[secure] = cl
	}
	peers := map[bool]string{false: "http://127.0.0.1:" + strconv.Itoa(ports[0]), true: "https://127.0.0.1:" + strconv.Itoa(ports[0])}
	return b.inTurn(ctx, "TLS", clients, peers, b.opt.confRuns)
}

// inTurn adds and removes a learner through each of the two clients, pair by pair in turn (the
// first of each round alternating), -warmup and then runs times, so both see the same machine;
// peers are the learners' peer URLs.
func (b *bench) inTurn(ctx context.Context, what string, clients map[bool]*client.Client, peers map[bool]string, runs int) (map[bool]samples, error) {
	res := map[bool]samples{}
	for i := range b.opt.warmup + runs {
		for j := range 2 {
			k := (i+j)%2 == 1
			s, err := addRemove(ctx, clients[k], peers[k])
			if err != nil {
				return nil, fmt.Errorf("%s %v: %w", what, k, err)
			}
			if i >= b.opt.warmup {
				res[k] = append(res[k], s...)
			}
		}
	}
	return res, nil
}

// addRemove adds a learner that is never started and removes it, and returns the time of each
// of the two changes.
func addRemove(ctx context.Context, cl *client.Client, peer string) (samples, error) {
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	start := time.Now()
	add, err := cl.MemberAdd(cctx, "bench-inproc", []string{peer}, true)
	mid := time.Now()
	if err != nil {
		return nil, fmt.Errorf("member add: %w", err)
	}
	if _, err := cl.MemberRemove(cctx, add.ID); err != nil {
		return nil, fmt.Errorf("member remove: %w", err)
	}
	return samples{millis(mid.Sub(start)), millis(time.Since(mid))}, nil
}

// ratioRow is a row of the ratio of two rows' medians (and of their p99s); a ratio has no max.
func ratioRow(key, figure string, a, b row) row {
	return row{Key: key, Figure: figure, Unit: "x", Runs: a.Runs, Warmup: a.Warmup, Target: "report",
		Median: a.Median / b.Median, P99: a.P99 / b.P99, Max: math.NaN()}
}

// diff is a row of the difference of two rows' medians.
func diff(key, figure string, a, b row) row {
	return row{Key: key, Figure: figure, Unit: "ms", Runs: a.Runs, Warmup: a.Warmup, Target: "report",
		Median: a.Median - b.Median, P99: math.NaN(), Max: math.NaN()}
}

// fillTLS adds the TLS phase's rows: clusterctl against etcdctl over TLS (target: at most half
// etcdctl's time, as in plain text), what TLS adds to a list, and a conf change with peer TLS
// against one without.
func (r *report) fillTLS(f *tlsFigures) {
	if f == nil {
		return
	}
	w := r.Options["warmup"].(int)
	ctl := stat("tls_member_list_wall", "TLS: clusterctl member list, RSA 2048, client certificate, wall (process, 3 members)", "ms", pick(f.lists[tlsCtl], wallOf), w, "report")
	fl := stat("tls_floor_wall", "TLS: floor, dial + handshake + one unary gRPC call, same certificates, wall", "ms", pick(f.lists[tlsFloor], wallOf), w, "report")
	ctl.Ratio, ctl.RatioTo = ptr(ctl.Median/fl.Median), "tls_floor_wall"
	pctl := stat("tls_phase_plain_member_list_wall", "TLS phase: clusterctl member list in plain text (plain cluster, interleaved), wall", "ms", pick(f.lists[plainCtl], wallOf), w, "report")
	pfl := stat("tls_phase_plain_floor_wall", "TLS phase: floor in plain text (plain cluster, interleaved), wall", "ms", pick(f.lists[plainFloor], wallOf), w, "report")
	vsFloor := ratioRow("tls_member_list_vs_floor", "TLS: clusterctl member list / the TLS floor (medians)", ctl, fl)
	r.Rows = append(r.Rows, ctl, fl, vsFloor, pctl, pfl)
	if e, ok := f.lists[tlsEtcdctl]; ok {
		er := stat("tls_etcdctl_member_list_wall", "TLS: etcdctl 3.7.1 member list, --cacert/--cert/--key, wall (same cluster, same files)", "ms", pick(e, wallOf), w, "report")
		cmp := ratioRow("tls_member_list_vs_etcdctl", "TLS: clusterctl member list / etcdctl member list (medians)", ctl, er)
		// Whether 0.7x is within reach of any Go client that makes one handshake: the floor
		// does nothing but that and the call.
		flCmp := ratioRow("tls_floor_vs_etcdctl", "TLS: floor / etcdctl member list (medians): the least a Go client with one handshake can take", fl, er)
		r.Rows = append(r.Rows, er, cmp, flCmp)
	}
	cost := diff("tls_member_list_cost", "TLS: clusterctl member list over TLS minus in plain text (medians)", ctl, pctl)
	share := cost
	share.Key, share.Figure, share.Unit = "tls_member_list_share", "TLS: its share of a clusterctl member list over TLS (the row above / the TLS list)", "%"
	share.Median = 100 * cost.Median / ctl.Median
	r.Rows = append(r.Rows, cost, share,
		diff("tls_floor_cost", "TLS: floor over TLS minus in plain text (medians): the handshake and its certificates", fl, pfl),
		stat("tls_member_list_cpu", "TLS: clusterctl member list, CPU user+sys", "ms", pick(f.lists[tlsCtl], cpuOf), w, "report"),
		stat("tls_phase_plain_member_list_cpu", "TLS phase: clusterctl member list in plain text, CPU user+sys", "ms", pick(f.lists[plainCtl], cpuOf), w, "report"))
	if e, ok := f.lists[tlsEtcdctl]; ok {
		r.Rows = append(r.Rows, stat("tls_etcdctl_member_list_cpu", "TLS: etcdctl member list, CPU user+sys", "ms", pick(e, cpuOf), w, "report"))
	}
	cc := stat("conf_change_peer_tls", "TLS: one conf change, TLS on both ports (pkg/client, leader first)", "ms", f.conf[true], 2*w, "report")
	pc := stat("tls_phase_conf_change_plain", "TLS phase: one conf change in plain text (plain cluster, in turn with the above)", "ms", f.conf[false], 2*w, "report")
	cc.Ratio, cc.RatioTo = ptr(cc.Median/pc.Median), "tls_phase_conf_change_plain"
	r.Rows = append(r.Rows, cc, pc)
}
