package chaos

import (
	"bytes"
	"fmt"
	"strings"

	harness "github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

// envKeys are the variables `clusterctl member add -w env` prints (docs/output.md), in order.
var envKeys = [...]string{"ETCD_NAME", "ETCD_INITIAL_CLUSTER", "ETCD_INITIAL_ADVERTISE_PEER_URLS", "ETCD_INITIAL_CLUSTER_STATE"}

// addResult is what pkg/client's MemberAdd makes of an answer whose configuration is v: the
// new member id, under the name it was added with (clusterd stores it, etcd would not), and
// every member of v. Nil when v does not have id.
func addResult(v *view, id uint64, name string) *client.AddResult {
	r := &client.AddResult{ChangeResult: client.ChangeResult{ID: id}}
	found := false
	for _, m := range v.members {
		cm := client.Member{ID: m.ID, Name: m.Name, Started: v.started[m.ID], PeerURLs: strings.Split(m.URL, ","), IsLearner: m.Learner}
		if m.ID == id {
			cm.Name = name
			r.Member, found = cm, true
		}
		r.Members = append(r.Members, cm)
	}
	if !found {
		return nil
	}
	return r
}

// printEnv is the output of `clusterctl member add -w env` for r, by clusterctl's own printer.
func printEnv(r *client.AddResult) (string, error) {
	p, err := printer.New(printer.Env)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := p.MemberAdd(&b, r); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parseEnv reads the printed lines back as the e2e harness does for `member start -env`
// (harness.ParseEnv: only what a shell's eval and systemd's EnvironmentFile= read alike), into
// KEY=value entries for a process's environment, and insists on exactly the four documented
// keys, in order, so that a printer that strays from docs/output.md fails the run.
func parseEnv(text string) ([]string, error) {
	env, err := harness.ParseEnv(text)
	if err != nil {
		return nil, err
	}
	if len(env) != len(envKeys) {
		return nil, fmt.Errorf("%d variables, want %d:\n%s", len(env), len(envKeys), text)
	}
	for i, kv := range env {
		if key, _, _ := strings.Cut(kv, "="); key != envKeys[i] {
			return nil, fmt.Errorf("variable %d is %s, want %s:\n%s", i+1, key, envKeys[i], text)
		}
	}
	return env, nil
}

// envValue is the value of key in entries made by parseEnv.
func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}
