package chaos

import (
	"bytes"
	"fmt"
	"strings"

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

// parseEnv reads printed KEY="value" lines back as a shell's eval or a systemd EnvironmentFile=
// would, into KEY=value entries for a process's environment. It insists on exactly the four
// documented keys, in order, and on the documented quoting (a backslash before \ " $ and `
// only), so that a printer that strays from docs/output.md fails the run instead of being
// read leniently.
func parseEnv(text string) ([]string, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != len(envKeys) {
		return nil, fmt.Errorf("%d lines, want %d:\n%s", len(lines), len(envKeys), text)
	}
	var out []string
	for i, l := range lines {
		key, quoted, ok := strings.Cut(l, "=")
		if !ok || key != envKeys[i] {
			return nil, fmt.Errorf("line %d is %q, want %s=\"...\"", i+1, l, envKeys[i])
		}
		val, err := unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %v", i+1, key, err)
		}
		out = append(out, key+"="+val)
	}
	return out, nil
}

// unquote undoes the printer's double quoting.
func unquote(q string) (string, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", fmt.Errorf("value %s is not in double quotes", q)
	}
	var b strings.Builder
	in := q[1 : len(q)-1]
	for i := 0; i < len(in); i++ {
		switch ch := in[i]; ch {
		case '\\':
			if i+1 == len(in) || !strings.ContainsRune(`\"$`+"`", rune(in[i+1])) {
				return "", fmt.Errorf("value %s has a backslash that escapes nothing", q)
			}
			i++
			b.WriteByte(in[i])
		case '"', '$', '`':
			return "", fmt.Errorf("value %s has an unescaped %c", q, ch)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
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
