package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// The harness commands of the scripts. Every command that waits takes an optional first argument
// -timeout=DURATION; without it, it waits up to defaultTimeout. No command sleeps for a fixed
// time.
//
//	cluster start [-nowait] N [server flags...]
//	    Start N members infra0..infra<N-1> as a new cluster, each with the given extra flags, and
//	    (unless -nowait) wait until all are started and agree on a leader. Exports ENDPOINTS
//	    (their client addresses, comma separated), INITIAL_CLUSTER (name=peer-url,...), and for
//	    each member EP_<name> (client address host:port), PEER_<name> (peer URL), DATA_<name>
//	    (data dir), CLIENTPORT_<name> and PEERPORT_<name>, and, once started, ID_<name> (16 hex
//	    digits) and XID_<name> (without leading zeros, as etcdctl prints it); and what
//	    wait-leader exports.
//	member alloc NAME
//	    Give NAME free ports and a data dir (not created) and export EP_, PEER_, DATA_,
//	    CLIENTPORT_ and PEERPORT_<name>.
//	member start NAME [-env FILE | -json FILE] [-raw] [server flags...]
//	    Start NAME (allocating it if needed) without waiting. With -env, the variables in FILE
//	    (the output of `member add -w env`, read as a shell and systemd read it) are its
//	    environment and only --data-dir, --listen-peer-urls, --listen-client-urls and
//	    --advertise-client-urls are added as flags, so the printed environment is tested
//	    verbatim. -json is the same with the "env" object of the first line of FILE that has one
//	    (the output of `member add -w json` or `member replace -w json`). Without either,
//	    --name and --initial-advertise-peer-urls are added too. With -raw, no flag at all is
//	    added. stdout and stderr go to $WORK/NAME.stdout and .stderr.
//	member restart NAME
//	    Start NAME again with the flags and environment of its latest start.
//	member kill NAME
//	    SIGKILL, and wait until the process is reaped.
//	member stop NAME
//	    SIGTERM, and wait until the process exits; check the status with wait-exit.
//	member pause NAME, member resume NAME
//	    SIGSTOP and SIGCONT: the process keeps its sockets but answers nothing, which is how a
//	    script makes a request go unanswered after it was sent.
//	member wait-exit [-timeout=D] NAME CODE|SIGTERM|SIGKILL|SIGINT
//	    Wait for NAME's process to exit and check its exit status, or the signal that ended
//	    it. The process's stdout and
//	    stderr become the script's stdout and stderr, for the stdout and stderr commands.
//	member id NAME
//	    Export ID_<name> and XID_<name>: the member's ID from the member list (found by peer URL
//	    if unstarted).
//	wait-started [-timeout=D] NAME...
//	    Wait until each member answers Status with a leader known and is listed as started.
//	wait-leader [-timeout=D]
//	    Wait until every running member names the same leader; export LEADER (its name),
//	    LEADER_ID, LEADER_EP (its client address), FOLLOWER0, FOLLOWER1, ... (the names of the
//	    other running members) and CLUSTER_ID.
//	wait-no-leader [-timeout=D] NAME
//	    Wait until NAME answers Status and knows no leader.
//	wait-caught-up [-timeout=D] NAME
//	    Wait until NAME has applied what the leader had committed and lists the same members.
//	tls
//	    Before any member is allocated: from now on every member serves https:// on both ports
//	    with client-certificate authentication (the process harness's Config.TLS, certificates
//	    in $WORK/pki). Exports CACERT, and CERT and KEY, a client certificate with CN root.
//	tls client CN
//	    Issue another client certificate; export CERT_<CN> and KEY_<CN>.
//	ports N
//	    Export PORT0..PORT<N-1>: free ports on 127.0.0.1.
//	jsonl [-count=N] FILE
//	    Check that every line of FILE (stdout and stderr: the last command's) is one JSON object
//	    and nothing else, as -w json prints them; with -count, that there are exactly N lines.
//	exits [-timeout=D] CODE PROGRAM [ARGS...]
//	    Run PROGRAM and check its exit status is CODE (0 included). stdout and stderr are kept for
//	    the stdout, stderr and cmp commands, as after exec.
//	retry [-timeout=D] PROGRAM [ARGS...]
//	    Run PROGRAM until it exits 0. For real etcd, which refuses membership changes for its
//	    first 5 s, and for waiting on a cluster other than the script's (wait-started looks at
//	    the script's own).
func commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"cluster":        cmdCluster,
		"member":         cmdMember,
		"wait-started":   cmdWaitStarted,
		"wait-leader":    cmdWaitLeader,
		"wait-caught-up": cmdWaitCaughtUp,
		"wait-no-leader": cmdWaitNoLeader,
		"ports":          cmdPorts,
		"tls":            cmdTLS,
		"jsonl":          cmdJSONL,
		"exits":          cmdExits,
		"retry":          cmdRetry,
	}
}

const (
	// defaultTimeout bounds every wait. Members on loopback start and elect in well under a
	// second; the margin is for a loaded 2-core machine running the race detector.
	defaultTimeout = 30 * time.Second
	// startTimeout bounds waiting for a whole new cluster.
	startTimeout = 60 * time.Second
)

type clusterKey struct{}

func setupHarness(env *testscript.Env, server string) error {
	var memberEnv []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		memberEnv = append(memberEnv, k+"="+env.Getenv(k))
	}
	h := &holder{cfg: cluster.Config{
		Server: server,
		Dir:    env.WorkDir,
		Env:    memberEnv,
		Token:  "e2e",
	}}
	h.c = cluster.New(h.cfg)
	env.Values[clusterKey{}] = h
	env.Defer(func() { h.c.Close() })
	return nil
}

// holder is the script's cluster, which the tls command replaces before any member exists.
type holder struct {
	cfg cluster.Config
	c   *cluster.Cluster
	ca  *testpki.CA
}

func clusterOf(ts *testscript.TestScript) *cluster.Cluster {
	return ts.Value(clusterKey{}).(*holder).c
}

func cmdTLS(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "tls")
	h := ts.Value(clusterKey{}).(*holder)
	switch {
	case len(args) == 2 && args[0] == "client":
		if h.ca == nil {
			ts.Fatalf("tls client: run tls first")
		}
		p, err := h.ca.Client(args[1])
		ts.Check(err)
		ts.Setenv("CERT_"+args[1], p.CertFile)
		ts.Setenv("KEY_"+args[1], p.KeyFile)
		return
	case len(args) != 0:
		ts.Fatalf("usage: tls | tls client CN")
	}
	if h.ca != nil || len(h.c.Members()) > 0 {
		ts.Fatalf("tls: must come first, before any member is allocated")
	}
	dir := ts.MkAbs("pki")
	ts.Check(os.MkdirAll(dir, 0o755))
	ca, err := testpki.NewCA(dir, "ca", testpki.ECDSAP256)
	ts.Check(err)
	root, err := ca.Client("root")
	ts.Check(err)
	h.ca, h.cfg.TLS = ca, ca
	h.c = cluster.New(h.cfg)
	ts.Setenv("CACERT", ca.CertFile)
	ts.Setenv("CERT", root.CertFile)
	ts.Setenv("KEY", root.KeyFile)
}

func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support negation: state what is expected instead", name)
	}
}

// timeoutArg takes an optional leading -timeout=D from args.
func timeoutArg(ts *testscript.TestScript, args []string, def time.Duration) (time.Duration, []string) {
	if len(args) > 0 && strings.HasPrefix(args[0], "-timeout=") {
		d, err := time.ParseDuration(strings.TrimPrefix(args[0], "-timeout="))
		ts.Check(err)
		return d, args[1:]
	}
	return def, args
}

func exportMember(ts *testscript.TestScript, m *cluster.Member) {
	ts.Setenv("EP_"+m.Name, m.ClientAddr)
	ts.Setenv("PEER_"+m.Name, m.PeerURL)
	ts.Setenv("DATA_"+m.Name, m.DataDir)
	// The bare ports, for URLs that reach the same listener another way (http://localhost:PORT).
	ts.Setenv("CLIENTPORT_"+m.Name, m.ClientAddr[strings.LastIndex(m.ClientAddr, ":")+1:])
	ts.Setenv("PEERPORT_"+m.Name, m.PeerURL[strings.LastIndex(m.PeerURL, ":")+1:])
}

// exportID exports the ID as clusterctl prints it (16 digits, ID_) and as etcdctl does (no
// leading zeros, XID_), so scripts can match either tool's output exactly.
func exportID(ts *testscript.TestScript, name string, id uint64) {
	ts.Setenv("ID_"+name, fmt.Sprintf("%016x", id))
	ts.Setenv("XID_"+name, fmt.Sprintf("%x", id))
}

func exportLeader(ts *testscript.TestScript, c *cluster.Cluster, timeout time.Duration) {
	l, id, err := c.WaitLeader(timeout)
	ts.Check(err)
	ts.Setenv("LEADER", l.Name)
	ts.Setenv("LEADER_ID", fmt.Sprintf("%016x", id))
	ts.Setenv("LEADER_EP", l.ClientAddr)
	exportID(ts, l.Name, id)
	// Scripts have no loops, so the other running members are numbered for them.
	i := 0
	for _, m := range c.Running() {
		if m != l {
			ts.Setenv("FOLLOWER"+strconv.Itoa(i), m.Name)
			i++
		}
	}
	st, err := cluster.Status(l)
	ts.Check(err)
	ts.Setenv("CLUSTER_ID", fmt.Sprintf("%016x", st.GetHeader().GetClusterId()))
}

func cmdCluster(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "cluster")
	if len(args) < 2 || args[0] != "start" {
		ts.Fatalf("usage: cluster start [-nowait] N [server flags...]")
	}
	args = args[1:]
	wait := true
	if args[0] == "-nowait" {
		wait, args = false, args[1:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: cluster start [-nowait] N [server flags...]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		ts.Fatalf("cluster start: bad member count %q", args[0])
	}
	c := clusterOf(ts)
	ms, err := c.Bootstrap(n, args[1:])
	ts.Check(err)
	for _, m := range ms {
		exportMember(ts, m)
	}
	ts.Setenv("ENDPOINTS", cluster.Endpoints(ms))
	ts.Setenv("INITIAL_CLUSTER", cluster.InitialCluster(ms))
	if !wait {
		return
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	ts.Check(c.WaitStarted(startTimeout, names...))
	exportLeader(ts, c, startTimeout)
	for _, m := range ms {
		id, err := c.ID(defaultTimeout, m.Name)
		ts.Check(err)
		exportID(ts, m.Name, id)
	}
}

func cmdMember(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "member")
	if len(args) < 2 {
		ts.Fatalf("usage: member alloc|start|restart|kill|stop|wait-exit|id ...")
	}
	c := clusterOf(ts)
	verb, args := args[0], args[1:]
	switch verb {
	case "alloc":
		m, err := c.Alloc(args[0])
		ts.Check(err)
		exportMember(ts, m)
	case "start":
		memberStart(ts, c, args)
	case "restart":
		ts.Check(c.Restart(args[0]))
	case "kill":
		ts.Check(c.Kill(args[0]))
	case "stop":
		ts.Check(c.Stop(args[0], defaultTimeout))
	case "pause":
		ts.Check(c.Signal(args[0], syscall.SIGSTOP))
	case "resume":
		ts.Check(c.Signal(args[0], syscall.SIGCONT))
	case "wait-exit":
		timeout, args := timeoutArg(ts, args, defaultTimeout)
		if len(args) != 2 {
			ts.Fatalf("usage: member wait-exit [-timeout=D] NAME CODE")
		}
		want, err := parseExit(args[1])
		ts.Check(err)
		e, err := c.WaitExit(args[0], timeout)
		ts.Check(err)
		m, _ := c.Member(args[0])
		out, _ := os.ReadFile(m.Stdout)
		errOut, _ := os.ReadFile(m.Stderr)
		fmt.Fprint(ts.Stdout(), string(out))
		fmt.Fprint(ts.Stderr(), string(errOut))
		if e != want {
			ts.Fatalf("%s: %v, want %v", args[0], e, want)
		}
	case "id":
		id, err := c.ID(defaultTimeout, args[0])
		ts.Check(err)
		exportID(ts, args[0], id)
	default:
		ts.Fatalf("member: unknown verb %q", verb)
	}
}

// parseExit reads an expected exit: a status, or the name of the signal that ends the process
// (real etcd re-raises SIGTERM after a clean shutdown instead of exiting 0).
func parseExit(s string) (proc.Exit, error) {
	sigs := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL, "SIGINT": syscall.SIGINT}
	if sig, ok := sigs[s]; ok {
		return proc.Exit{Code: -1, Signal: sig}, nil
	}
	code, err := strconv.Atoi(s)
	if err != nil || code < 0 {
		return proc.Exit{}, fmt.Errorf("bad exit %q: want a status or SIGTERM, SIGKILL, SIGINT", s)
	}
	return proc.Exit{Code: code}, nil
}

func memberStart(ts *testscript.TestScript, c *cluster.Cluster, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: member start NAME [-env FILE] [-raw] [server flags...]")
	}
	m, err := c.Alloc(args[0])
	ts.Check(err)
	exportMember(ts, m)
	args = args[1:]
	var env []string
	base := m.BaseArgs()
	// A bounded loop over the harness's own options, which come before the server's flags.
	for len(args) > 0 {
		if (args[0] == "-env" || args[0] == "-json") && len(args) > 1 {
			read := cluster.ReadEnvFile
			if args[0] == "-json" {
				read = cluster.ReadJSONEnv
			}
			env, err = read(ts.MkAbs(args[1]))
			ts.Check(err)
			base = m.ListenArgs()
			args = args[2:]
		} else if args[0] == "-raw" {
			base = nil
			args = args[1:]
		} else {
			break
		}
	}
	ts.Check(c.Start(m.Name, append(base, args...), env))
}

func cmdWaitStarted(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-started")
	timeout, names := timeoutArg(ts, args, defaultTimeout)
	c := clusterOf(ts)
	ts.Check(c.WaitStarted(timeout, names...))
	for _, n := range names {
		id, err := c.ID(timeout, n)
		ts.Check(err)
		exportID(ts, n, id)
	}
}

func cmdWaitLeader(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-leader")
	timeout, _ := timeoutArg(ts, args, defaultTimeout)
	exportLeader(ts, clusterOf(ts), timeout)
}

func cmdWaitNoLeader(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-no-leader")
	timeout, args := timeoutArg(ts, args, defaultTimeout)
	if len(args) != 1 {
		ts.Fatalf("usage: wait-no-leader [-timeout=D] NAME")
	}
	ts.Check(clusterOf(ts).WaitNoLeader(timeout, args[0]))
}

func cmdWaitCaughtUp(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-caught-up")
	timeout, args := timeoutArg(ts, args, defaultTimeout)
	if len(args) != 1 {
		ts.Fatalf("usage: wait-caught-up [-timeout=D] NAME")
	}
	ts.Check(clusterOf(ts).WaitCaughtUp(timeout, args[0]))
}

func cmdPorts(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "ports")
	if len(args) != 1 {
		ts.Fatalf("usage: ports N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	ports, err := freeport.Ports(n)
	ts.Check(err)
	for i, p := range ports {
		ts.Setenv("PORT"+strconv.Itoa(i), strconv.Itoa(p))
	}
}

// execBounded runs the program through timeout(1): testscript runs programs with the script's
// environment only through its own exec, and timeout(1) gives that run a deadline, killing a
// client or server that would otherwise hang until go test's own timeout.
func execBounded(ts *testscript.TestScript, timeout time.Duration, args []string) (int, error) {
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)
	err := ts.Exec("timeout", append([]string{"-k", "5", secs}, args...)...)
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, err
	}
	code := ee.ExitCode()
	// 124 is timeout(1)'s own status for a deadline that passed; 137 when -k had to kill.
	if code == 124 || code == 137 {
		return code, fmt.Errorf("%s did not finish within %v", args[0], timeout)
	}
	return code, nil
}

func cmdJSONL(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "jsonl")
	count := -1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		ts.Check(err)
		count, args = n, args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: jsonl [-count=N] FILE")
	}
	text := ts.ReadFile(args[0])
	if text != "" && !strings.HasSuffix(text, "\n") {
		ts.Fatalf("%s: the last line has no newline", args[0])
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i, line := range lines {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &v); err != nil || v == nil {
			ts.Fatalf("%s: line %d is not one JSON object (%v): %s", args[0], i+1, err, line)
		}
	}
	if count >= 0 && len(lines) != count {
		ts.Fatalf("%s: %d lines, want %d", args[0], len(lines), count)
	}
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "exits")
	timeout, args := timeoutArg(ts, args, defaultTimeout)
	if len(args) < 2 {
		ts.Fatalf("usage: exits [-timeout=D] CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	code, err := execBounded(ts, timeout, args[1:])
	ts.Check(err)
	if code != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], code, want)
	}
}

func cmdRetry(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "retry")
	timeout, args := timeoutArg(ts, args, defaultTimeout)
	if len(args) < 1 {
		ts.Fatalf("usage: retry [-timeout=D] PROGRAM [ARGS...]")
	}
	ts.Check(proc.Poll(timeout, "retry "+args[0], func() (bool, error) {
		code, err := execBounded(ts, timeout, args)
		if err != nil {
			return true, err
		}
		if code != 0 {
			return false, fmt.Errorf("exit status %d", code)
		}
		return true, nil
	}))
}
