package printer

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// ReplaceResult is what member replace has found and made so far: what its JSON lines print,
// after the add and at the end.
type ReplaceResult struct {
	// OldRef names the member to replace as the command line did; Old is that member as the
	// first member list showed it, nil when it was gone before this run.
	OldRef string
	Old    *client.Member
	// Added is member add's answer, or, when an earlier run added the member, the answer that
	// add would have given (client.AddedResult): the environment the new member starts with.
	Added *client.AddResult
	// Latest is the latest answer's header and members: the configuration as far as the
	// replacement has gone.
	Latest client.ListResult
	// Steps are the steps found or made so far, in order.
	Steps []client.PlanStep
}

// Record adds step s, and answer, the server's answer to it, as the latest; answer is nil for
// a step that sent nothing.
func (r *ReplaceResult) Record(s client.PlanStep, answer *client.ChangeResult) {
	r.Steps = append(r.Steps, s)
	if answer != nil {
		r.Latest = client.ListResult{Header: answer.Header, Members: answer.Members}
	}
}

// ReplaceAdd prints the add of member replace, as soon as it is made or found made: member add's
// output in simple and env, so that the environment a script reads is exactly member add's; in
// json, the first line, event "added".
func (p Printer) ReplaceAdd(w io.Writer, r *ReplaceResult) error {
	if err := p.Check(MemberReplace); err != nil {
		return err
	}
	if p.format == JSON {
		return writeJSON(w, toReplaceJSON("added", r))
	}
	return p.MemberAdd(w, r.Added)
}

// ReplaceChange prints a later step of member replace (promote or remove, as k says): the
// command's own success line in simple; nothing in env, whose output is the environment alone,
// nor in json, whose last line says every step.
func (p Printer) ReplaceChange(w io.Writer, k Kind, r *client.ChangeResult) error {
	if p.format != Simple {
		return p.Check(MemberReplace)
	}
	_, err := io.WriteString(w, changedLine(k, r))
	return err
}

// ReplaceDone prints the end of a member replace that made or found every step: in json, the
// last line, event "replaced"; nothing in simple and env, which said each step as it was made.
func (p Printer) ReplaceDone(w io.Writer, r *ReplaceResult) error {
	if p.format != JSON {
		return p.Check(MemberReplace)
	}
	return writeJSON(w, toReplaceJSON("replaced", r))
}

// stepWords say what each step of a replacement does, in the plan's rows.
var stepWords = map[string]string{
	client.StepAdd:     "add %s as learner",
	client.StepPromote: "promote %s",
	client.StepMove:    "move leadership from %s",
	client.StepRemove:  "remove %s",
}

// ReplacePlan prints the verdict of member replace --dry-run: in simple, the voting
// configuration now and after each step, and, as the last line, the verdict a script can test
// with tail -n1; in json, one object with the same facts.
func (p Printer) ReplacePlan(w io.Writer, r *client.ReplacePlan) error {
	return p.print(w, p.CheckFor(MemberReplace, true), toReplacePlanJSON(r), func(b *bytes.Buffer) { simplePlan(b, r) })
}

func simplePlan(b *bytes.Buffer, r *client.ReplacePlan) {
	id := func(m client.Member) string {
		if m.ID == 0 {
			return "-"
		}
		return client.FormatID(m.ID)
	}
	old := id(r.Old) + " " + orDash(r.Old.Name)
	switch {
	case r.OldGone:
		old += " (gone)"
	case r.OldLiveness != nil:
		old += " (" + oldLiveness(r) + ")"
	}
	fmt.Fprintf(b, "Dry run of member replace: nothing was changed\n")
	fmt.Fprintf(b, "%-18s%s\n", "old member:", old)
	fmt.Fprintf(b, "%-18s%s %s %s\n", "new member:", id(r.New), r.New.Name, strings.Join(r.New.PeerURLs, ","))
	fmt.Fprintf(b, "%-18s%s\n\n", "cluster:", client.FormatID(r.ClusterID))
	// The columns are the dry run's rows (quorumRows), one line per step.
	line := func(label string, q *client.QuorumReport, state string) {
		fmt.Fprintf(b, "%-30s", label)
		for _, row := range quorumRows {
			fmt.Fprintf(b, "%*s", len(row.label)+2, count(q, row.value))
		}
		b.WriteString(strings.TrimRight("  "+state, " ") + "\n")
	}
	fmt.Fprintf(b, "%-30s", "after step")
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
			state = "refused: " + oneLine(s.Err.Error())
		case s.Action == client.StepPromote:
			state = "once it has started and caught up"
		case s.Action == client.StepMove:
			state = "to " + r.New.Name
		}
		line(fmt.Sprintf("%d. "+stepWords[s.Action], i+1, orDash(s.Who)), s.After, state)
	}
	b.WriteString("\n" + verdict(r.Err) + "\n")
}

// member replace's JSON schema (docs/output.md): never rename a field. The objects, the header
// and the environment are those of member add's, under the same keys, and the quorum figures
// client.QuorumReport's.

type replaceStepJSON struct {
	Action string `json:"action"`
	State  string `json:"state"`
}

type replaceJSON struct {
	Event   string            `json:"event"`
	Header  headerJSON        `json:"header"`
	OldRef  string            `json:"oldRef"`
	Old     *memberJSON       `json:"old"`
	New     memberJSON        `json:"new"`
	Members memberList        `json:"members"`
	Env     environment       `json:"env"`
	Steps   []replaceStepJSON `json:"steps"`
}

type replacePlanStepJSON struct {
	replaceStepJSON
	After    *client.QuorumReport `json:"after"`
	Accepted bool                 `json:"accepted"`
	Refusal  string               `json:"refusal"`
}

type replacePlanJSON struct {
	DryRun    bool        `json:"dryRun"`
	Change    string      `json:"change"`
	ClusterID string      `json:"cluster_id"`
	OldRef    string      `json:"oldRef"`
	Old       *memberJSON `json:"old"`
	// OldLive is how the run judges the old member (oldLiveness); absent once it is gone.
	OldLive  string                `json:"oldLiveness,omitempty"`
	Name     string                `json:"name"`
	PeerURLs list[string]          `json:"peerURLs"`
	New      *memberJSON           `json:"new"`
	Before   *client.QuorumReport  `json:"before"`
	Steps    []replacePlanStepJSON `json:"steps"`
	Accepted bool                  `json:"accepted"`
	Refusal  string                `json:"refusal"`
}

// stepState is a step's state in the JSON: doneAlready for one an earlier run made, notNeeded
// for one skipped, and otherwise made, which is "done" in a result and "pending" in a plan.
func stepState(s client.PlanStep, made string) replaceStepJSON {
	state := made
	switch {
	case s.Done:
		state = "doneAlready"
	case s.Skip:
		state = "notNeeded"
	}
	return replaceStepJSON{Action: s.Action, State: state}
}

// refusal is the server's message for a refused step or plan, "" for an accepted one.
func refusal(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// memberOrNull is m's object, or null where the cluster does not have the member (is is false).
func memberOrNull(m client.Member, is bool) *memberJSON {
	if !is {
		return nil
	}
	j := toJSONMember(m)
	return &j
}

func toReplaceJSON(event string, r *ReplaceResult) replaceJSON {
	j := replaceJSON{
		Event:   event,
		Header:  toJSONHeader(r.Latest.Header),
		OldRef:  r.OldRef,
		New:     toJSONMember(r.Added.Member),
		Members: r.Latest.Members,
		Env:     newEnvironment(r.Added),
		Steps:   each(r.Steps, func(s client.PlanStep) replaceStepJSON { return stepState(s, "done") }),
	}
	if r.Old != nil {
		j.Old = memberOrNull(*r.Old, true)
	}
	// The new member as the latest answer has it (a voter once promoted), under the name it was
	// added with, which etcd does not know before the member starts.
	for _, m := range r.Latest.Members {
		if m.ID == r.Added.ID {
			m.Name = r.Added.Member.Name
			j.New = toJSONMember(m)
		}
	}
	return j
}

// oldLiveness is how the run judges the old member, with the evidence: "dead: ...", "alive:
// ...", or taken as alive when not every source could judge; "" when it was not asked.
func oldLiveness(r *client.ReplacePlan) string {
	l := r.OldLiveness
	switch {
	case l == nil || r.OldGone:
		return ""
	case l.Gone():
		return "dead: " + l.Evidence(r.Members)
	case l.Alive():
		return "alive: " + l.Evidence(r.Members)
	}
	return "taken as alive, not every source could judge: " + l.Evidence(r.Members)
}

func toReplacePlanJSON(r *client.ReplacePlan) replacePlanJSON {
	return replacePlanJSON{
		DryRun:    true,
		Change:    "replace",
		ClusterID: client.FormatID(r.ClusterID),
		OldRef:    r.OldRef,
		// A member the cluster does not have is null: a gone old member, a new one not yet added.
		Old:      memberOrNull(r.Old, !r.OldGone),
		OldLive:  oldLiveness(r),
		Name:     r.New.Name,
		PeerURLs: r.New.PeerURLs,
		New:      memberOrNull(r.New, r.New.ID != 0),
		Before:   r.Now,
		Steps: each(r.Steps, func(s client.PlanStep) replacePlanStepJSON {
			return replacePlanStepJSON{replaceStepJSON: stepState(s, "pending"), After: s.After, Accepted: s.Err == nil, Refusal: refusal(s.Err)}
		}),
		Accepted: r.Err == nil,
		Refusal:  refusal(r.Err),
	}
}
