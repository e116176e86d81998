package printer

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// environment is what the new member needs to start in phase two, in the order printed.
type environment [4]struct{ key, value string }

// newEnvironment lists every member of the configuration after the add, sorted by name and
// then ID, so the same cluster always gives the same line whichever member answered.
func newEnvironment(r *client.AddResult) environment {
	ms := slices.Clone(r.Members)
	slices.SortFunc(ms, func(a, b client.Member) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	var cluster []string
	for _, m := range ms {
		// A member with several peer URLs appears once per URL: the form etcd and clusterd
		// read --initial-cluster in.
		for _, u := range m.PeerURLs {
			cluster = append(cluster, m.Name+"="+u)
		}
	}
	return environment{
		{"ETCD_NAME", r.Member.Name},
		{"ETCD_INITIAL_CLUSTER", strings.Join(cluster, ",")},
		{"ETCD_INITIAL_ADVERTISE_PEER_URLS", strings.Join(r.Member.PeerURLs, ",")},
		{"ETCD_INITIAL_CLUSTER_STATE", "existing"},
	}
}

// dquote double-quotes a value for a POSIX shell and a systemd EnvironmentFile=, which both take
// a backslash before these four characters inside double quotes as the character itself.
var dquote = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")

// String is the four KEY="value" lines.
func (e environment) String() string {
	var b strings.Builder
	for _, kv := range e {
		b.WriteString(kv.key + `="` + dquote.Replace(kv.value) + "\"\n")
	}
	return b.String()
}

// MarshalJSON writes an object with the keys in the printed order, which a map would not keep.
func (e environment) MarshalJSON() ([]byte, error) {
	fields := make([]string, len(e))
	for i, kv := range e {
		// Marshalling a string cannot fail.
		k, _ := json.Marshal(kv.key)
		v, _ := json.Marshal(kv.value)
		fields[i] = string(k) + ":" + string(v)
	}
	return []byte("{" + strings.Join(fields, ",") + "}"), nil
}
