package command

import (
	"context"
	"errors"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

var (
	errNoDataDir = errors.New("no data directory given")
	errNoPath    = errors.New("no data directory or snapshot file given")
)

func newDataDirCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datadir",
		Short: "Read stopped members' data directories: which to restart from, is their state sound; reset an absurd term",
		Example: `  clusterctl datadir status /var/lib/clusterd/infra0 /mnt/infra1
  clusterctl datadir check /var/lib/etcd backup.db`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDataDirStatusCmd(g), newDataDirCheckCmd(g), newDataDirResetTermCmd(g))
	return cmd
}

type dataDirStatusOptions struct {
	*Globals
	Dirs []string
}

func newDataDirStatusCmd(g *Globals) *cobra.Command {
	o := &dataDirStatusOptions{Globals: g}
	return &cobra.Command{
		Use:   "status DIR...",
		Short: "Show what stopped members' data directories hold, and which to restart from",
		Long: `Read each clusterd or etcd data directory, offline and without writing to it, and print its
member ID and name, cluster ID, raft term, last, commit and applied index, the membership it
holds and whether its member was removed. Given several directories of one cluster, name the one
to restart from after a majority is lost (the most advanced committed log among those whose
member is a voter, not removed, with a sound membership), why, and the recovery's commands with
these paths filled in. Directories of different clusters are refused; a directory a running
member holds is refused (exit 25). See docs/commands/datadir-status.md.`,
		Example: `  clusterctl datadir status /var/lib/clusterd/infra0 /mnt/infra1 -w table`,
		Args:    cobra.ArbitraryArgs,
		RunE:    runE(g, o),
	}
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
	if o.Dirs, err = pathArgs(args, errNoDataDir); err != nil {
		return err
	}
	return o.Printer.Check(printer.DataDirStatus)
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
	rec, rankErr := datadir.Rank(dirs)
	var different *datadir.DifferentClustersError
	if errors.As(rankErr, &different) {
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
		out.Dirs = append(out.Dirs, printer.DataDir{Path: d.Dir, Kind: d.Kind, MemberID: uint64(d.MemberID), Name: d.Name,
			ClusterID: uint64(d.ClusterID), Term: d.Term, LastIndex: d.LastIndex, CommitIndex: d.CommitIndex,
			Applied: d.AppliedIndex, Members: members(d.Cluster), Removed: d.Cluster.Removed.Len(), Tombstone: d.Tombstone})
	}
	if err := o.Printer.DataDirStatus(o.Out, out); err != nil {
		return err
	}
	return rankErr
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
		Args:    cobra.ArbitraryArgs,
		RunE:    runE(g, o),
	}
}

func (o *dataDirCheckOptions) validate(args []string) error {
	var err error
	if o.Paths, err = pathArgs(args, errNoPath); err != nil {
		return err
	}
	return o.Printer.Check(printer.DataDirCheck)
}

// run checks every path before it prints: one that cannot be read stops the command with its
// one line. Disagreements are printed, then reported as one *UnsoundError (exit 31).
func (o *dataDirCheckOptions) run(context.Context) error {
	var out printer.DataDirChecks
	var unsound *datadir.UnsoundError
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
			if unsound == nil {
				unsound = &datadir.UnsoundError{}
			}
			unsound.Problems += len(r.Problems)
			unsound.Paths++
		}
	}
	if err := o.Printer.DataDirCheck(o.Out, out); err != nil {
		return err
	}
	if unsound != nil {
		return unsound
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
		Args:    cobra.ArbitraryArgs,
		RunE:    runE(g, o),
	}
}

func (o *dataDirResetTermOptions) validate(args []string) error {
	var err error
	if o.Dirs, err = pathArgs(args, errNoDataDir); err != nil {
		return err
	}
	return o.Printer.Check(printer.DataDirResetTerm)
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
