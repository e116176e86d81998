package datadir

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// MemberTLS is what the members serve TLS with, in etcd's and clusterd's flags: a data
// directory records none of it. A path may hold NameToken, which each member's start line
// replaces with that member's name (its ID when it has none), for members whose files differ
// by name on one machine; kubeadm's are one path on every host.
type MemberTLS struct {
	CertFile, KeyFile, TrustedCAFile             string
	ClientCertAuth                               bool
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string
	PeerClientCertAuth                           bool
}

// NameToken in a MemberTLS path stands for the member's name.
const NameToken = "{name}"

// StepOptions is what the printed steps carry beyond the data directories: the members' TLS
// files and the flags every clusterctl line needs to reach the cluster (a context, TLS files, a
// login), each flag one word as it is to be printed, quoted by the steps.
type StepOptions struct {
	TLS        MemberTLS
	Clusterctl []string
}

// Placeholders, printed where a value cannot be known; each step that holds one says so.
const (
	PlaceholderCertFile          = "<CERT_FILE>"
	PlaceholderKeyFile           = "<KEY_FILE>"
	PlaceholderTrustedCAFile     = "<TRUSTED_CA_FILE>"
	PlaceholderPeerCertFile      = "<PEER_CERT_FILE>"
	PlaceholderPeerKeyFile       = "<PEER_KEY_FILE>"
	PlaceholderPeerTrustedCAFile = "<PEER_TRUSTED_CA_FILE>"
	PlaceholderPasswordFile      = "<PASSWORD_FILE>"
	PlaceholderDataDir           = "<its empty data directory>"
)

// placeholderSay is what each group of placeholders stands for, in the order told.
var placeholderSay = []struct {
	placeholders []string
	say          string
}{
	{[]string{PlaceholderCertFile, PlaceholderKeyFile, PlaceholderTrustedCAFile}, "the member's client URLs are https:// and the data directory records no TLS files: replace " +
		PlaceholderCertFile + ", " + PlaceholderKeyFile + " and " + PlaceholderTrustedCAFile +
		" with the member's, and add --client-cert-auth if clients had to present certificates (or give them to datadir status: --cert-file, --key-file, --trusted-ca-file, --client-cert-auth)"},
	{[]string{PlaceholderPeerCertFile, PlaceholderPeerKeyFile, PlaceholderPeerTrustedCAFile}, "the member's peer URLs are https:// and the data directory records no TLS files: replace " +
		PlaceholderPeerCertFile + ", " + PlaceholderPeerKeyFile + " and " + PlaceholderPeerTrustedCAFile +
		" with the member's, and add --peer-client-cert-auth if peers had to present certificates (or give them to datadir status: --peer-cert-file, --peer-key-file, --peer-trusted-ca-file, --peer-client-cert-auth)"},
	{[]string{PlaceholderPasswordFile}, "replace " + PlaceholderPasswordFile + " with a file holding the password on its first line: a password is never printed"},
	{[]string{PlaceholderDataDir}, "replace " + PlaceholderDataDir + " with an empty directory on the member's host: its data directory was not given to datadir status"},
}

// steps are the commands of the recovery from chosen, with this machine's paths: the others'
// data moved aside (never deleted), a copy of the chosen one, its start with
// --force-new-cluster, then every other member added back one at a time (docs/runbooks/
// majority-loss.md for clusterd, majority-loss-etcd.md for etcd). Each line runs as printed.
func (o StepOptions) steps(chosen *DirStatus, dirs []*DirStatus) []Step {
	server := chosen.Kind // the binary: clusterd or etcd
	self := chosen.Cluster.Members[chosen.MemberID]
	dirOf := map[membership.ID]string{}
	var aside []string
	for _, d := range dirs {
		if d == chosen {
			continue
		}
		p := abs(d.Dir)
		dirOf[d.MemberID] = p
		aside = append(aside, fmt.Sprintf("mv %s %s", quote(p), quote(p+".aside")))
	}
	chosenDir := abs(chosen.Dir)
	ctl := o.clusterctl(self.ClientURLs)
	out := []Step{{Say: "Stop every member of the cluster that still runs, on every host."}}
	if len(aside) > 0 {
		out = append(out, Step{Say: "Move the other data directories aside; never delete them.", Commands: aside})
	}
	out = append(out,
		Step{Say: "Keep a copy of the chosen data directory.", Commands: []string{
			fmt.Sprintf("cp -a %s %s", quote(chosenDir), quote(chosenDir+".backup"))}},
		told(Step{Say: fmt.Sprintf("Start %s from it as a one-member cluster (in a terminal or unit of its own), and wait until it lists itself alone.", chosen.Name), Commands: []string{
			fmt.Sprintf("%s --name %s --data-dir %s --force-new-cluster %s", server, quote(chosen.Name), quote(chosenDir), o.memberFlags(self, true)),
			ctl + " member list"}}))
	for _, m := range chosen.Cluster.List() {
		if m.ID == chosen.MemberID {
			continue
		}
		out = append(out, told(o.addBack(server, ctl, m, cmp.Or(dirOf[m.ID], PlaceholderDataDir))))
	}
	return out
}

// addBack is the step that adds m back as a learner, starts it on dir from the printed
// environment and, for a voter, promotes it. The promotion names the member by the ID the add
// wrote: etcd learns a member's name only once it has started, and a promotion right after the
// start would not find it by name (exit 10). The add is --if-not-exists, so that running it
// again after etcd's refusal in its first seconds (exit 12) or an unanswered add (exit 14) is
// safe.
func (o StepOptions) addBack(server, ctl string, m *membership.Member, dir string) Step {
	// A member that never started has no name yet: its ID stands for it.
	label := cmp.Or(m.Name, m.ID.String())
	env, idFile := quote(label+".env"), quote(label+".id")
	cmds := []string{
		fmt.Sprintf("%s member add %s --peer-urls=%s --learner --if-not-exists --id-file=%s -w env > %s", ctl, quote(label), strings.Join(m.PeerURLs, ","), idFile, env),
		fmt.Sprintf("(set -a; . ./%s; exec %s --data-dir %s %s)", env, server, quote(dir), o.memberFlags(m, false)),
	}
	say := fmt.Sprintf("Add %s back as a learner, start it on an empty data directory from the printed environment", label)
	if !m.IsLearner {
		cmds = append(cmds, fmt.Sprintf(`%s member promote "$(cat %s)" --wait=60s`, ctl, idFile))
		say += ", and promote it by the ID the add wrote"
	}
	if server == KindEtcd {
		say += " (etcd refuses a change in its first seconds with exit 12: run it again)"
	}
	return Step{Say: say + ".", Commands: cmds}
}

// told adds to the step's words what each placeholder in its commands stands for.
func told(s Step) Step {
	all := strings.Join(s.Commands, "\n")
	for _, p := range placeholderSay {
		if slices.ContainsFunc(p.placeholders, func(ph string) bool { return strings.Contains(all, ph) }) {
			s.Say += " Before running: " + p.say + "."
		}
	}
	return s
}

// clusterctl is the start of every clusterctl line: the endpoints, then the operator's flags,
// each --flag=value with its value quoted.
func (o StepOptions) clusterctl(endpoints []string) string {
	f := []string{"clusterctl", "--endpoints=" + strings.Join(endpoints, ",")}
	for _, c := range o.Clusterctl {
		if flag, value, ok := strings.Cut(c, "="); ok {
			c = flag + "=" + quote(value)
		}
		f = append(f, c)
	}
	return strings.Join(f, " ")
}

// memberFlags are the flags a member listens and advertises with, on the URLs the membership
// gives it (change --listen-* to listen on other addresses), and its TLS flags. The initial
// advertised peer URLs are given only where no environment file gives them.
func (o StepOptions) memberFlags(m *membership.Member, advertisePeers bool) string {
	peers := strings.Join(m.PeerURLs, ",")
	f := []string{"--listen-peer-urls " + peers}
	if advertisePeers {
		f = append(f, "--initial-advertise-peer-urls "+peers)
	}
	if len(m.ClientURLs) > 0 {
		clients := strings.Join(m.ClientURLs, ",")
		f = append(f, "--listen-client-urls "+clients, "--advertise-client-urls "+clients)
	}
	return strings.Join(append(f, o.TLS.flags(m)...), " ")
}

// flags are m's TLS flags: for each port whose URLs are https://, its files (placeholders for
// those not given) and whether it asks for client certificates. A port on http:// has none.
func (t MemberTLS) flags(m *membership.Member) []string {
	name := cmp.Or(m.Name, m.ID.String())
	file := func(flag, path, placeholder string) string {
		if path == "" {
			return "--" + flag + " " + quote(placeholder)
		}
		return "--" + flag + " " + quote(strings.ReplaceAll(path, NameToken, name))
	}
	var f []string
	if secure(m.ClientURLs) {
		f = append(f, file("cert-file", t.CertFile, PlaceholderCertFile), file("key-file", t.KeyFile, PlaceholderKeyFile),
			file("trusted-ca-file", t.TrustedCAFile, PlaceholderTrustedCAFile))
		if t.ClientCertAuth {
			f = append(f, "--client-cert-auth")
		}
	}
	if secure(m.PeerURLs) {
		f = append(f, file("peer-cert-file", t.PeerCertFile, PlaceholderPeerCertFile), file("peer-key-file", t.PeerKeyFile, PlaceholderPeerKeyFile),
			file("peer-trusted-ca-file", t.PeerTrustedCAFile, PlaceholderPeerTrustedCAFile))
		if t.PeerClientCertAuth {
			f = append(f, "--peer-client-cert-auth")
		}
	}
	return f
}

// secure reports whether any of urls is https://: the member then needs its certificate there.
func secure(urls []string) bool {
	return slices.ContainsFunc(urls, func(u string) bool { return strings.HasPrefix(u, "https://") })
}
