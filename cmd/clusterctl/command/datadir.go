package command

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var (
	errNoDataDir = errors.New("no data directory given")
	errNoPath    = errors.New("no data directory or snapshot file given")
)

func newDataDirCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:   "datadir",
		Short: "Read stopped members' data directories: which to restart from, is their state sound; reset an absurd term",
		Example: `  clusterctl datadir status /var/lib/clusterd/infra0 /mnt/infra1
  clusterctl datadir check /var/lib/etcd backup.db`,
	}, newDataDirStatusCmd(g), newDataDirCheckCmd(g), newDataDirResetTermCmd(g))
}

type dataDirStatusOptions struct {
	*Globals
	Dirs []string
	// TLS is what the members serve TLS with, for their start lines.
	TLS datadir.MemberTLS
	// flags are the command's flags, for the context the printed clusterctl lines name.
	flags *pflag.FlagSet
}

func newDataDirStatusCmd(g *Globals) *cobra.Command {
	o := &dataDirStatusOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "status DIR...",
		Short: "Show what stopped members' data directories hold, and which to restart from",
		Long: `Read each clusterd or etcd data directory, offline and without writing to it, and print its
member ID and name, cluster ID, raft term, last, commit and applied index, the membership it
holds and whether its member was removed. Given several directories of one cluster, name the one
to restart from after a majority is lost (the most advanced committed log among those whose
member is a voter, not removed, with a sound membership), why, and the recovery's commands with
these paths filled in. Directories of different clusters are refused; a directory a running
member holds is refused (exit 25).

Every printed line runs as printed. A data directory records no TLS files: the members' are
given with the flags etcd and clusterd take (--cert-file, --peer-cert-file, ...; {name} in a path
stands for each member's name), and a port on https:// without them is printed with a named
placeholder (<PEER_CERT_FILE>, ...) and one line saying so. The clusterctl lines carry this
command's --context, --config-file, TLS and login flags; a password never: --password-file, or
<PASSWORD_FILE> where the password was given inline. See docs/commands/datadir-status.md.`,
		Example: `  clusterctl datadir status /var/lib/clusterd/infra0 /mnt/infra1 -w table
  clusterctl --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=op.crt --key=op.key datadir status /var/lib/etcd /mnt/etcd-b \
    --cert-file=/etc/kubernetes/pki/etcd/server.crt --key-file=/etc/kubernetes/pki/etcd/server.key \
    --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt --client-cert-auth \
    --peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt --peer-key-file=/etc/kubernetes/pki/etcd/peer.key \
    --peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt --peer-client-cert-auth`,
		RunE: runE(g, printer.DataDirStatus, o),
	}
	// The members' TLS flags, named as etcd and clusterd name them.
	f, t, name := cmd.Flags(), &o.TLS, " ({name}: each member's name)"
	f.StringVar(&t.CertFile, "cert-file", "", "the members' client-port certificate, for their start lines"+name)
	f.StringVar(&t.KeyFile, "key-file", "", "the private key of --cert-file"+name)
	f.StringVar(&t.TrustedCAFile, "trusted-ca-file", "", "the CA the members verify clients with"+name)
	f.BoolVar(&t.ClientCertAuth, "client-cert-auth", false, "the members ask clients for certificates")
	f.StringVar(&t.PeerCertFile, "peer-cert-file", "", "the members' peer-port certificate, for their start lines"+name)
	f.StringVar(&t.PeerKeyFile, "peer-key-file", "", "the private key of --peer-cert-file"+name)
	f.StringVar(&t.PeerTrustedCAFile, "peer-trusted-ca-file", "", "the CA the members verify peers with"+name)
	f.BoolVar(&t.PeerClientCertAuth, "peer-client-cert-auth", false, "the members ask peers for certificates")
	o.flags = f
	return cmd
}

// pathArgs checks the positional arguments of both verbs: at least one, none empty.
func pathArgs(args []string, none error) ([]string, error) {
	if len(args) == 0 {
		return nil, none
	}
	for _, a := range args {
		if a == "" {
			return nil, errors.New("an empty path")
		}
	}
	return args, nil
}

func (o *dataDirStatusOptions) validate(args []string) error {
	var err error
	o.Dirs, err = pathArgs(args, errNoDataDir)
	return err
}

// run reads every directory before it prints anything: one that cannot be read stops the
// command with its one line, and nothing is printed.
func (o *dataDirStatusOptions) run(context.Context) error {
	var dirs []*datadir.DirStatus
	for _, d := range o.Dirs {
		st, err := datadir.ReadDir(d)
		if err != nil {
			return err
		}
		dirs = append(dirs, st)
	}
	// The members' TLS files made absolute: a member does not run in this command's directory.
	t := o.TLS
	for _, p := range []*string{&t.CertFile, &t.KeyFile, &t.TrustedCAFile, &t.PeerCertFile, &t.PeerKeyFile, &t.PeerTrustedCAFile} {
		*p = absPath(*p)
	}
	rec, rankErr := datadir.Rank(dirs, datadir.StepOptions{TLS: t, Clusterctl: o.clusterctlFlags(o.flags)})
	if is[*datadir.DifferentClustersError](rankErr) {
		return rankErr
	}
	out := &printer.DataDirs{Reason: rec.Reason}
	if rec.Chosen != nil {
		out.MostAdvanced = rec.Chosen.Dir
	}
	for _, s := range rec.Steps {
		out.Steps = append(out.Steps, printer.RecoveryStep{Say: s.Say, Commands: s.Commands})
	}
	for _, d := range dirs {
		out.Dirs = append(out.Dirs, printer.DataDir{Path: d.Dir, Kind: d.Kind, MemberID: printer.ID(d.MemberID), Name: d.Name,
			ClusterID: printer.ID(d.ClusterID), Term: d.Term, LastIndex: d.LastIndex, CommitIndex: d.CommitIndex,
			Applied: d.AppliedIndex, Members: members(d.Cluster), Removed: d.Cluster.Removed.Len(), Tombstone: d.Tombstone})
	}
	if err := o.Printer.DataDirStatus(o.Out, out); err != nil {
		return err
	}
	return rankErr
}

// clusterctlFlags are the flags the printed clusterctl lines need to reach the cluster as the
// command of flags would: its context, config file, TLS files (absolute) and login. A password is
// never printed: a password file is, or a placeholder where the password was given inline.
func (g *Globals) clusterctlFlags(flags *pflag.FlagSet) []string {
	var f []string
	// The context this command took its settings from, if any: --context, CLUSTERCTL_CONTEXT,
	// else the contexts file's current one.
	name := chosenContext(flags)
	if cf, err := loadContexts(); name == "" && err == nil {
		name = cf.Current()
	}
	if name != "" {
		f = append(f, "--"+contextFlag+"="+name)
	}
	configFile, _ := flags.GetString("config-file")
	if p := cmp.Or(configFile, os.Getenv("CLUSTERCTL_CONFIG_FILE")); p != "" {
		f = append(f, "--config-file="+absPath(p))
	}
	t := memberTLS(g.given.tls)
	for _, kv := range []struct{ flag, value string }{{"cacert", t.CACert}, {"cert", t.Cert}, {"key", t.Key}} {
		if kv.value != "" {
			f = append(f, "--"+kv.flag+"="+kv.value)
		}
	}
	if t.InsecureSkipVerify {
		f = append(f, "--insecure-skip-tls-verify")
	}
	return append(f, printedLogin(g.given)...)
}

// printedLogin is the login of s as flags to print: the user's name and its password file; a
// placeholder for a password given inline (--password, --user NAME:PASSWORD), which is never
// printed; the name alone when the password is asked for on the terminal.
func printedLogin(s security) []string {
	l := s.login
	name := l.user
	if l.password == "" && l.passwordFile == "" {
		name, _, _ = strings.Cut(l.user, ":")
	}
	switch {
	case l.user == "":
		return nil
	case l.passwordFile != "":
		return []string{"--user=" + name, "--password-file=" + absPath(l.passwordFile)}
	case l.password != "" || strings.Contains(l.user, ":"):
		return []string{"--user=" + name, "--password-file=" + datadir.PlaceholderPasswordFile}
	}
	return []string{"--user=" + name}
}

// absPath is p made absolute; "" stays "", and a path that cannot be made absolute (no working
// directory) is kept as given.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil && p != "" {
		return a
	}
	return p
}

type dataDirCheckOptions struct {
	*Globals
	Paths []string
}

func newDataDirCheckCmd(g *Globals) *cobra.Command {
	o := &dataDirCheckOptions{Globals: g}
	return &cobra.Command{
		Use:   "check DIR|SNAPSHOT...",
		Short: "Check that the membership a data directory or snapshot stores is the one raft believes",
		Long: `Check, offline and without writing, that the membership stored in each clusterd or etcd data
directory or snapshot file agrees with raft's configuration stored in the same place (etcd: the
backend's members and members_removed buckets against its confState, the WAL and the newest snap
file; clusterd: the members against the snapshot's configuration), and that no removed ID is
listed as a member, every member has peer URLs and no two members share a name. Prints one line a
disagreement, naming the member ID and both sides, and exits 31 if there is any; exits 0 when
every path is sound. See docs/commands/datadir-check.md.`,
		Example: `  for d in /var/lib/etcd/*.snapshot.db; do clusterctl datadir check "$d"; done`,
		RunE:    runE(g, printer.DataDirCheck, o),
	}
}

func (o *dataDirCheckOptions) validate(args []string) error {
	var err error
	o.Paths, err = pathArgs(args, errNoPath)
	return err
}

// run checks every path before it prints: one that cannot be read stops the command with its
// one line. Disagreements are printed, then reported as one *UnsoundError (exit 31).
func (o *dataDirCheckOptions) run(context.Context) error {
	var out printer.DataDirChecks
	var unsound datadir.UnsoundError
	for _, p := range o.Paths {
		r, err := datadir.Check(p)
		if err != nil {
			return err
		}
		c := printer.PathCheck{Path: p, Kind: r.Kind, Compared: r.Compared}
		for _, pr := range r.Problems {
			c.Problems = append(c.Problems, printer.CheckProblem{MemberID: uint64(pr.MemberID), Text: pr.Text})
		}
		out = append(out, c)
		if !r.Sound() {
			unsound.Problems += len(r.Problems)
			unsound.Paths++
		}
	}
	if err := o.Printer.DataDirCheck(o.Out, out); err != nil {
		return err
	}
	if unsound.Paths > 0 {
		return &unsound
	}
	return nil
}

type dataDirResetTermOptions struct {
	*Globals
	Dirs []string
}

func newDataDirResetTermCmd(g *Globals) *cobra.Command {
	o := &dataDirResetTermOptions{Globals: g}
	return &cobra.Command{
		Use:   "reset-term DIR...",
		Short: "Give a stopped member whose stored raft term is past 2^63 a term it can campaign from",
		Long: `For each stopped clusterd or etcd member's data directory whose stored raft term is past 2^63
(what datadir check reports, exit 31: a forged peer message put it there, and raft panics at the
member's next election), set the term to the highest term of its log plus 2^31, with no vote. The
log and the commit index are kept: nothing committed is lost. The file rewritten (clusterd's
member.db, or etcd's last WAL file, to which a HardState record is appended) is first copied into
DIR.before-reset-term.<unix time>. A directory whose term is sound is refused (exit 128), as is one
a running member holds (exit 25). See docs/commands/datadir-reset-term.md.`,
		Example: `  clusterctl datadir reset-term /var/lib/clusterd/infra0`,
		RunE:    runE(g, printer.DataDirResetTerm, o),
	}
}

func (o *dataDirResetTermOptions) validate(args []string) error {
	var err error
	o.Dirs, err = pathArgs(args, errNoDataDir)
	return err
}

// run resets one directory after the other, printing each as it is done: one that cannot be
// reset stops the command with its one line, the ones before it stay reset.
func (o *dataDirResetTermOptions) run(context.Context) error {
	for _, d := range o.Dirs {
		r, err := datadir.ResetTerm(d)
		if err != nil {
			return err
		}
		if err := o.Printer.DataDirResetTerm(o.Out, printer.TermReset{Path: d, MemberID: uint64(r.MemberID),
			From: r.From, To: r.To, LogTerm: r.LogTerm, Backup: r.Backup}); err != nil {
			return err
		}
	}
	return nil
}
