package datadir

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/storage"
)

// Recovery is the choice among the data directories of one cluster after a majority is lost:
// the one to restart with --force-new-cluster, why, and the steps, as commands.
type Recovery struct {
	Chosen *DirStatus // nil when none can be restarted from
	Reason string
	Steps  []Step
}

// Step is one step of the recovery: what it does, and its commands, in order.
type Step struct {
	Say      string
	Commands []string
}

// DifferentClustersError refuses to rank data directories of different clusters, or of
// clusterd and etcd: the most advanced of them means nothing.
type DifferentClustersError struct{ A, B *DirStatus }

func (e *DifferentClustersError) Error() string {
	return fmt.Sprintf("%s is %s cluster %s's and %s is %s cluster %s's: rank the data directories of one cluster at a time",
		e.A.Dir, e.A.Kind, e.A.ClusterID, e.B.Dir, e.B.Kind, e.B.ClusterID)
}

// NoRestartError is a set of data directories none of which can be restarted from.
type NoRestartError struct{ Reason string }

func (e *NoRestartError) Error() string { return e.Reason }

// excluded says why a directory cannot be restarted from, or "" when it can: --force-new-cluster
// refuses a removed member's and a learner's, and a membership that disagrees with raft's would
// be carried into the new cluster.
func excluded(s *DirStatus) string {
	m := s.Cluster.Members[s.MemberID]
	switch {
	case s.Tombstone:
		return "its member was removed"
	case m == nil:
		return "its own membership does not list it"
	case m.IsLearner:
		return "it is a learner's"
	case s.Term > storage.MaxTerm:
		// raft panics at its next campaign, --force-new-cluster too, until the term is reset.
		return "its raft term is past 2^63 (run clusterctl datadir reset-term on it first)"
	case !s.Check.Sound():
		return "its membership is unsound (datadir check)"
	}
	return ""
}

// ahead orders a before b when a's committed log is the more advanced: the higher term at the
// commit index, then the higher commit index, then the more applied, then the longer log.
// --force-new-cluster keeps the log up to the commit index and drops the rest.
func ahead(a, b *DirStatus) int {
	return cmp.Or(cmp.Compare(b.CommitTerm, a.CommitTerm), cmp.Compare(b.CommitIndex, a.CommitIndex),
		cmp.Compare(b.AppliedIndex, a.AppliedIndex), cmp.Compare(b.LastIndex, a.LastIndex))
}

// Rank chooses, among the data directories of one cluster, the one to restart from: of those
// that can be (not a removed member's, not a learner's, with a sound membership), the one
// whose committed log is the most advanced; of equals, the first given. It refuses directories
// of different clusters with a *DifferentClustersError, and a set none of which can be
// restarted from with a *NoRestartError (the Recovery still says why of each). The steps are
// printed with how's TLS files and clusterctl flags.
func Rank(dirs []*DirStatus, how StepOptions) (*Recovery, error) {
	if len(dirs) == 0 {
		return &Recovery{}, &NoRestartError{Reason: "no data directory given"}
	}
	for _, d := range dirs[1:] {
		if d.Kind != dirs[0].Kind || d.ClusterID != dirs[0].ClusterID {
			return nil, &DifferentClustersError{A: dirs[0], B: d}
		}
	}
	var can []*DirStatus
	var ok, out []string
	for _, d := range dirs {
		if why := excluded(d); why != "" {
			out = append(out, fmt.Sprintf("%s is left out: %s", d.Dir, why))
		} else {
			can = append(can, d)
		}
	}
	if len(can) == 0 {
		r := &Recovery{Reason: "no data directory can be restarted from: " + strings.Join(out, "; ")}
		return r, &NoRestartError{Reason: r.Reason}
	}
	best := slices.MinFunc(can, ahead) // the first of equals
	for _, d := range can {
		if d != best {
			ok = append(ok, fmt.Sprintf("%s has index %d at term %d", d.Dir, d.CommitIndex, d.CommitTerm))
		}
	}
	why := fmt.Sprintf("%s (%s) has the most advanced committed log: index %d at term %d, applied %d",
		best.Dir, best.Name, best.CommitIndex, best.CommitTerm, best.AppliedIndex)
	reason := strings.Join(slices.Concat([]string{why}, ok, out), "; ")
	return &Recovery{Chosen: best, Reason: reason, Steps: how.steps(best, dirs)}, nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// quote single-quotes s for a POSIX shell when it holds anything but the safe characters.
func quote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
