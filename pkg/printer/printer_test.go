package printer

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var header = client.Header{ClusterID: 0x998d851d58177d55, MemberID: 0x77f41cbd71028a3a, RaftTerm: 2}

// members is the transcript's cluster after adding infra3 as a learner, in the server's order.
var members = []client.Member{
	{ID: 0x96dbf27657837fe1, Name: "infra3", PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
	{ID: 0x763c9e70aa15678a, Name: "infra2", Started: true, PeerURLs: []string{"http://127.0.0.1:32380"}, ClientURLs: []string{"http://127.0.0.1:32379"}},
	{ID: 0x77f41cbd71028a3a, Name: "infra0", Started: true, PeerURLs: []string{"http://127.0.0.1:12380", "http://localhost:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}, IsLeader: true},
	{ID: 0xe52329470e35c0c0, Name: "infra1", Started: true, PeerURLs: []string{"http://127.0.0.1:22380"}, ClientURLs: []string{"http://127.0.0.1:22379", "http://localhost:22379"}},
}

func addResult(learner bool) *client.AddResult {
	ms := append([]client.Member(nil), members...)
	ms[0].IsLearner = learner
	return &client.AddResult{ChangeResult: client.ChangeResult{Header: header, ID: ms[0].ID, Members: ms}, Member: ms[0]}
}

func changeResult() *client.ChangeResult {
	return &client.ChangeResult{Header: header, ID: members[0].ID, Members: members}
}

// TestGolden prints every result in every format that supports it and compares the output with
// testdata/<name>.<format>.golden.
func TestGolden(t *testing.T) {
	tests := []goldenCase{
		{"member_list", MemberList, func(p Printer, b *bytes.Buffer) error {
			return p.MemberList(b, &client.ListResult{Header: header, Members: members})
		}},
		{"member_list_empty_urls", MemberList, func(p Printer, b *bytes.Buffer) error {
			// Against etcd an added member has no name until it starts, and no client URLs.
			return p.MemberList(b, &client.ListResult{Header: header, Members: []client.Member{
				{ID: 0x4f761153fba6cd20, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
			}})
		}},
		{"member_add", MemberAdd, func(p Printer, b *bytes.Buffer) error { return p.MemberAdd(b, addResult(false)) }},
		{"member_add_learner", MemberAdd, func(p Printer, b *bytes.Buffer) error { return p.MemberAdd(b, addResult(true)) }},
		{"member_remove", MemberRemove, func(p Printer, b *bytes.Buffer) error {
			return p.MemberChange(b, MemberRemove, changeResult())
		}},
		{"member_update", MemberUpdate, func(p Printer, b *bytes.Buffer) error {
			return p.MemberChange(b, MemberUpdate, changeResult())
		}},
		{"member_promote", MemberPromote, func(p Printer, b *bytes.Buffer) error {
			return p.MemberChange(b, MemberPromote, changeResult())
		}},
		{"member_prune", MemberPrune, func(p Printer, b *bytes.Buffer) error {
			if err := p.Prune(b, Pruned{ClusterID: header.ClusterID, Member: members[1], Reason: PruneUnreachable, For: 10 * time.Second,
				Evidence: "no answer on its client URLs, leader infra0 does not hear it"}); err != nil {
				return err
			}
			// a dry run keeps a member the leader hears, and says why
			if err := p.Prune(b, Pruned{ClusterID: header.ClusterID, Member: members[2], Reason: PruneLive, DryRun: true,
				Evidence: "no answer on its client URLs, answers as itself on 10.0.0.3:2379, leader infra0 hears it"}); err != nil {
				return err
			}
			// etcd: an unstarted member has no name
			unnamed := members[0]
			unnamed.Name = ""
			return p.Prune(b, Pruned{ClusterID: header.ClusterID, Member: unnamed, Reason: PruneUnstarted, For: time.Minute, DryRun: true})
		}},
	}
	runGolden(t, tests)
}

// TestGoldenDryRun prints the verdicts of --dry-run in every format that supports them.
func TestGoldenDryRun(t *testing.T) {
	three := &client.QuorumReport{Voters: 3, StartedVoters: 3, ConnectedVoters: 3, Quorum: 2, FaultTolerance: 1}
	tests := []struct {
		name string
		kind Kind
		r    *client.DryRun
	}{
		{"member_add_dry_run", MemberAdd, &client.DryRun{
			ClusterID: header.ClusterID, Member: members[0], ProvisionalID: true, PeerURLs: members[0].PeerURLs,
			Before: three,
			After:  &client.QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 3, Quorum: 2, FaultTolerance: 1},
		}},
		{"member_remove_dry_run_refused", MemberRemove, &client.DryRun{
			ClusterID: header.ClusterID, Member: members[3], Exists: true,
			Before: &client.QuorumReport{Voters: 3, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
			After:  &client.QuorumReport{Voters: 2, StartedVoters: 2, ConnectedVoters: 1, Quorum: 2, FaultTolerance: -1},
			Err:    rpcerr.ErrUnhealthyCluster,
		}},
		{"member_update_dry_run", MemberUpdate, &client.DryRun{
			ClusterID: header.ClusterID, Member: notLeader(members[2]), Exists: true, PeerURLs: []string{"http://10.0.0.1:2380"},
			Before: three,
			After:  &client.QuorumReport{Voters: 3, StartedVoters: 2, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
		}},
		{"member_promote_dry_run_not_found", MemberPromote, &client.DryRun{
			ClusterID: header.ClusterID, Member: client.Member{ID: 0xdeadbeef},
			Err: rpcerr.ErrMemberNotFound,
		}},
	}
	for _, tt := range tests {
		for _, f := range kinds[tt.kind].dryRun {
			t.Run(tt.name+"/"+string(f), func(t *testing.T) {
				p, err := New(f)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := p.DryRun(&b, tt.kind, tt.r); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", tt.name+"."+string(f)+".golden"), b.Bytes())
			})
		}
	}
}

// notLeader is m as a dry run reports it: a dry run does not say who leads.
func notLeader(m client.Member) client.Member {
	m.IsLeader = false
	return m
}

func TestCheckDryRun(t *testing.T) {
	tests := []struct {
		format Format
		kind   Kind
		want   string
	}{
		{Simple, MemberAdd, ""},
		{JSON, MemberPromote, ""},
		{Env, MemberAdd, `output format "env" is not supported by member add --dry-run (supported: simple, json)`},
		{Table, MemberRemove, `output format "table" is not supported by member remove --dry-run (supported: simple, json)`},
	}
	for _, tt := range tests {
		p, err := New(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		if got := errString(p.CheckFor(tt.kind, true)); got != tt.want {
			t.Errorf("%s.CheckFor(%s, true) = %q, want %q", tt.format, tt.kind, got, tt.want)
		}
		if got := errString(p.DryRun(&bytes.Buffer{}, tt.kind, &client.DryRun{})); got != tt.want {
			t.Errorf("%s.DryRun(%s) = %q, want %q", tt.format, tt.kind, got, tt.want)
		}
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/printer -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestFormats(t *testing.T) {
	tests := []struct {
		kind Kind
		want string
	}{
		{MemberAdd, "simple json env"},
		{MemberRemove, "simple json"},
		{MemberUpdate, "simple json"},
		{MemberPromote, "simple json"},
		{MemberList, "simple table json"},
	}
	for _, tt := range tests {
		var got []string
		for _, f := range kinds[tt.kind].formats {
			got = append(got, string(f))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("kinds[%s].formats = %v, want %s", tt.kind, got, tt.want)
		}
	}
}

// TestKindsHavePrinters prints every kind in every format its row in kinds lists, and its dry
// run likewise: a row that promises a format without the function that prints it fails here
// rather than in a user's hands.
func TestKindsHavePrinters(t *testing.T) {
	for k, row := range kinds {
		for _, f := range row.formats {
			p, err := New(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := printKind(t, p, k); err != nil {
				t.Errorf("%s in %s: %v", k, f, err)
			}
		}
		for _, f := range row.dryRun {
			p, _ := New(f)
			if k == MemberPrune {
				if err := p.Prune(&bytes.Buffer{}, Pruned{DryRun: true}); err != nil {
					t.Errorf("%s --dry-run in %s: %v", k, f, err)
				}
				continue
			}
			if k == MemberReplace {
				if err := p.ReplacePlan(&bytes.Buffer{}, &client.ReplacePlan{}); err != nil {
					t.Errorf("%s --dry-run in %s: %v", k, f, err)
				}
				continue
			}
			if err := p.DryRun(&bytes.Buffer{}, k, &client.DryRun{}); err != nil {
				t.Errorf("%s --dry-run in %s: %v", k, f, err)
			}
		}
	}
}

// printKind prints a result of kind k with p.
func printKind(t *testing.T, p Printer, k Kind) error {
	var b bytes.Buffer
	switch k {
	case MemberAdd:
		return p.MemberAdd(&b, addResult(false))
	case MemberRemove, MemberUpdate, MemberPromote:
		return p.MemberChange(&b, k, changeResult())
	case MemberList:
		return p.MemberList(&b, &client.ListResult{Header: header, Members: members})
	case SnapshotSave:
		return p.SnapshotSave(&b, &client.SnapshotResult{})
	case SnapshotStatus:
		return p.SnapshotStatus(&b, &SnapshotStatusResult{Members: members})
	case SnapshotRestore:
		return p.SnapshotRestore(&b, &RestoreResult{Members: members})
	case DiscoveryNew:
		return p.DiscoveryNew(&b, &NewToken{Token: "t", Size: 3})
	case DiscoveryStatus:
		return p.DiscoveryStatus(&b, &TokenStatus{Token: "t", Cluster: &registry.Cluster{}})
	case EndpointStatus:
		return p.EndpointStatus(&b, []StatusRow{{}, {EndpointStatus: client.EndpointStatus{Endpoint: "e", Status: &client.Status{}}}})
	case EndpointHealth:
		return p.EndpointHealth(&b, []client.EndpointHealth{{}})
	case MoveLeader:
		return p.MoveLeader(&b, &LeaderMove{})
	case Version:
		return p.Version(&b, &Versions{})
	case ClusterStatus:
		if err := p.ContextStatuses(&b, []ContextStatus{{Context: "c", Err: errors.New("down")}}); err != nil {
			return err
		}
		return p.ClusterStatus(&b, &client.ClusterStatus{})
	case ConfigContexts:
		return p.Contexts(&b, []ContextRow{{Name: "c"}})
	case ConfigText:
		return p.ConfigText(&b, "text\n")
	case DataDirStatus:
		return p.DataDirStatus(&b, dataDirs())
	case DataDirCheck:
		return p.DataDirCheck(&b, DataDirChecks{{Path: "p"}})
	case MemberReplace:
		r, answers := replaced()
		if err := p.ReplaceAdd(&b, r); err != nil {
			return err
		}
		if err := p.ReplaceChange(&b, MemberRemove, answers[MemberRemove]); err != nil {
			return err
		}
		return p.ReplaceDone(&b, r)
	case MemberPrune:
		return p.Prune(&b, Pruned{Member: members[1]})
	case MemberHistory:
		return p.MemberHistory(&b, historyResult())
	case DataDirResetTerm:
		return p.DataDirResetTerm(&b, TermReset{Path: "p"})
	}
	t.Fatalf("no result to print for kind %s: add one here", k)
	return nil
}

func TestNewRefusesUnknownFormat(t *testing.T) {
	for _, f := range []Format{"", "yaml", "JSON", "fields", "protobuf"} {
		if _, err := New(f); err == nil || !strings.Contains(err.Error(), "unknown output format") {
			t.Errorf("New(%q) = %v, want an unknown-format error", f, err)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		format Format
		kind   Kind
		want   string
	}{
		{Env, MemberList, `output format "env" is not supported by member list (supported: simple, table, json)`},
		{Env, MemberRemove, `output format "env" is not supported by member remove (supported: simple, json)`},
		{Table, MemberAdd, `output format "table" is not supported by member add (supported: simple, json, env)`},
		{Table, MemberPromote, `output format "table" is not supported by member promote (supported: simple, json)`},
		{Simple, MemberList, ""},
		{JSON, MemberUpdate, ""},
		{Env, MemberAdd, ""},
	}
	for _, tt := range tests {
		p, err := New(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check(tt.kind)
		if got := errString(err); got != tt.want {
			t.Errorf("%s.Check(%s) = %q, want %q", tt.format, tt.kind, got, tt.want)
		}
		// A printer refuses to print what Check refuses, so nothing half-printed can escape.
		if err != nil && tt.kind == MemberList {
			if perr := p.MemberList(&bytes.Buffer{}, &client.ListResult{}); errString(perr) != tt.want {
				t.Errorf("%s.MemberList = %v, want %q", tt.format, perr, tt.want)
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestEnvQuoting(t *testing.T) {
	r := addResult(false)
	r.Member.Name = `a"b$c` + "`d`" + `\e`
	r.Members[0].Name = r.Member.Name
	var b bytes.Buffer
	if err := (Printer{format: Env}).MemberAdd(&b, r); err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(b.String(), "\n")
	if want := `ETCD_NAME="a\"b\$c\` + "`d\\`" + `\\e"`; line != want {
		t.Errorf("got %s, want %s", line, want)
	}
}

// goldenCase prints one result; runGolden checks it in every format its command supports
// against testdata/<name>.<format>.golden.
type goldenCase struct {
	name  string
	kind  Kind
	print func(Printer, *bytes.Buffer) error
}

func runGolden(t *testing.T, tests []goldenCase) {
	t.Helper()
	for _, tt := range tests {
		for _, f := range kinds[tt.kind].formats {
			t.Run(tt.name+"/"+string(f), func(t *testing.T) {
				p, err := New(f)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := tt.print(p, &b); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", tt.name+"."+string(f)+".golden"), b.Bytes())
			})
		}
	}
}

// The environment block read back by real shells, the way docs/output.md tells operators to use
// it (eval, and set -a with the dot command), gives back every value exactly, whatever
// characters a name holds.
func TestEnvThroughShells(t *testing.T) {
	r := addResult(false)
	r.Member.Name = `a"b$c` + "`d`" + `\e 'f' g*`
	r.Members[0].Name = r.Member.Name
	var b bytes.Buffer
	if err := (Printer{format: Env}).MemberAdd(&b, r); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(t.TempDir(), "member.env")
	if err := os.WriteFile(env, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, kv := range newEnvironment(r) {
		want.WriteString(kv.value + "\x00")
	}
	const show = `; printf '%s\0' "$ETCD_NAME" "$ETCD_INITIAL_CLUSTER" "$ETCD_INITIAL_ADVERTISE_PEER_URLS" "$ETCD_INITIAL_CLUSTER_STATE"`
	for _, shell := range []string{"sh", "bash"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s: %v", shell, err)
			continue
		}
		for _, use := range []string{`eval "$(cat "$1")"`, `set -a; . "$1"; set +a`} {
			out, err := exec.Command(path, "-c", use+show, shell, env).Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", shell, use, err)
			}
			if string(out) != want.String() {
				t.Errorf("%s, %s:\n got %q\nwant %q", shell, use, out, want.String())
			}
		}
	}
}
