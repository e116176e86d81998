package printer

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// ReplaceAdd prints the add of member replace: member add's output, in simple and env alike, so
// that the environment a script reads is exactly member add's.
func (p Printer) ReplaceAdd(w io.Writer, r *client.AddResult) error {
	if err := p.Check(MemberReplace); err != nil {
		return err
	}
	return p.add(w, r)
}

// ReplaceChange prints a later step of member replace (promote or remove, as k says): the
// command's own success line in simple, nothing in env, whose output is the environment alone.
func (p Printer) ReplaceChange(w io.Writer, k Kind, r *client.ChangeResult) error {
	if err := p.Check(MemberReplace); err != nil {
		return err
	}
	if p.format == Env {
		return nil
	}
	return p.change(w, k, r)
}

// stepWords say what each step of a replacement does, in the plan's rows.
var stepWords = map[string]string{
	client.StepAdd:     "add %s as learner",
	client.StepPromote: "promote %s",
	client.StepMove:    "move leadership to %s",
	client.StepRemove:  "remove %s",
}

// ReplacePlan prints the verdict of member replace --dry-run: the voting configuration now and
// after each step, and, as the last line, the verdict a script can test with tail -n1.
func (p Printer) ReplacePlan(w io.Writer, r *client.ReplacePlan) error {
	if err := p.CheckDryRun(MemberReplace); err != nil {
		return err
	}
	var b bytes.Buffer
	id := func(m client.Member) string {
		if m.ID == 0 {
			return "-"
		}
		return client.FormatID(m.ID)
	}
	old := id(r.Old) + " " + orDash(r.Old.Name)
	if r.OldGone {
		old += " (gone)"
	}
	fmt.Fprintf(&b, "Dry run of member replace: nothing was changed\n")
	fmt.Fprintf(&b, "%-18s%s\n", "old member:", old)
	fmt.Fprintf(&b, "%-18s%s %s %s\n", "new member:", id(r.New), r.New.Name, strings.Join(r.New.PeerURLs, ","))
	fmt.Fprintf(&b, "%-18s%s\n\n", "cluster:", client.FormatID(r.ClusterID))
	// The columns are the dry run's rows (quorumRows), one line per step.
	line := func(label string, q *client.QuorumReport, state string) {
		fmt.Fprintf(&b, "%-30s", label)
		for _, row := range quorumRows {
			fmt.Fprintf(&b, "%*s", len(row.label)+2, count(q, row.value))
		}
		b.WriteString(strings.TrimRight("  "+state, " ") + "\n")
	}
	fmt.Fprintf(&b, "%-30s", "after step")
	for _, row := range quorumRows {
		b.WriteString("  " + row.label)
	}
	b.WriteByte('\n')
	line("now", r.Now, "")
	for i, s := range r.Steps {
		state := ""
		switch {
		case s.Done:
			state = "done already"
		case s.Skip:
			state = "not needed"
		case s.Err != nil:
			state = "refused: " + strings.ReplaceAll(s.Err.Error(), "\n", " ")
		case s.Action == client.StepPromote:
			state = "once it has started and caught up"
		}
		line(fmt.Sprintf("%d. "+stepWords[s.Action], i+1, orDash(s.Who)), s.After, state)
	}
	b.WriteByte('\n')
	if r.Err != nil {
		b.WriteString("would be refused: " + strings.ReplaceAll(r.Err.Error(), "\n", " ") + "\n")
	} else {
		b.WriteString("would be accepted\n")
	}
	return flush(w, &b)
}
