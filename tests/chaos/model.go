package chaos

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// opKind is what a client call did.
type opKind int

const (
	opAdd opKind = iota
	opRemove
	opUpdate
	opPromote
	opList
)

func (k opKind) String() string {
	return [...]string{"add", "remove", "update", "promote", "list"}[k]
}

// The refusals the model knows, as docs/design.md ("Errors on the wire") lists them. A refusal
// that depends only on the membership is accepted only where the membership makes it right; the
// others depend on the running cluster (which members are up, whether there is a leader) and
// change nothing.
const (
	errNotFound     = "etcdserver: member not found"
	errIDExists     = "etcdserver: member ID already exist"
	errURLExists    = "etcdserver: Peer URLs already exists"
	errBadURLs      = "etcdserver: given member URLs are invalid"
	errNotStarted   = "etcdserver: re-configuration failed due to not enough started members"
	errUnhealthy    = "etcdserver: unhealthy cluster"
	errPromoteVoter = "etcdserver: can only promote a learner member"
	errNotReady     = "etcdserver: can only promote a learner member which is in sync with leader"
	errTooMany      = "etcdserver: too many learner members in cluster"
	errNoLeader     = "etcdserver: no leader"
	errTimedOut     = "etcdserver: request timed out"
	errStopped      = "etcdserver: server stopped"
)

// noChange are the refusals that docs/exit-codes.md says leave the membership as it was,
// whatever it is.
var noChange = map[string]bool{errNotStarted: true, errUnhealthy: true, errNoLeader: true, errStopped: true}

// known are every refusal a client may see for a request this test sends.
var known = map[string]bool{
	errNotFound: true, errIDExists: true, errURLExists: true, errBadURLs: true, errNotStarted: true,
	errUnhealthy: true, errPromoteVoter: true, errNotReady: true, errTooMany: true, errNoLeader: true,
	errTimedOut: true, errStopped: true,
}

// mem is a member as the model and the checks compare it. Client URLs and the started flag
// are left out: they are the member's own business, published when it starts.
type mem struct {
	ID      uint64
	Name    string
	URL     string // the peer URLs, sorted, joined by ","
	Learner bool
}

func (m mem) String() string {
	role := "voter"
	if m.Learner {
		role = "learner"
	}
	return fmt.Sprintf("%016x %s %s %s", m.ID, m.Name, m.URL, role)
}

// input is a call as the client made it.
type input struct {
	Kind    opKind
	Name    string // add: the name sent in clusterd-member-name
	URL     string // add, update: the peer URL
	Learner bool   // add
	// ID is the target of remove, update and promote. For an add whose outcome is unknown it is
	// filled in after the run: the ID its name was seen with in a list, or 0.
	ID uint64
}

// output is what the call returned.
type output struct {
	Unknown bool   // no answer, or an answer that does not say whether it took effect
	Err     string // "" on success, else the refusal's message
	ID      uint64 // add: the ID the server assigned
	Members []mem  // list: every member, sorted by ID
}

// state is the membership as the model sees it. It is never modified once built.
type state struct {
	members []mem    // sorted by ID
	removed []uint64 // sorted
	key     string
}

func newState(members []mem, removed []uint64) *state {
	s := &state{members: members, removed: removed}
	var b strings.Builder
	for _, m := range members {
		b.WriteString(m.String())
		b.WriteByte(';')
	}
	b.WriteByte('|')
	for _, id := range removed {
		fmt.Fprintf(&b, "%x,", id)
	}
	s.key = b.String()
	return s
}

func (s *state) find(id uint64) (mem, bool) {
	i, ok := slices.BinarySearchFunc(s.members, id, func(m mem, id uint64) int { return cmpID(m.ID, id) })
	if !ok {
		return mem{}, false
	}
	return s.members[i], true
}

func cmpID(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *state) isRemoved(id uint64) bool {
	_, ok := slices.BinarySearch(s.removed, id)
	return ok
}

// urlUsed reports whether a member other than self uses one of the URLs in urls.
func (s *state) urlUsed(self uint64, urls string) bool {
	for _, m := range s.members {
		if m.ID == self {
			continue
		}
		for _, u := range strings.Split(urls, ",") {
			if slices.Contains(strings.Split(m.URL, ","), u) {
				return true
			}
		}
	}
	return false
}

func (s *state) count(learners bool) int {
	n := 0
	for _, m := range s.members {
		if m.Learner == learners {
			n++
		}
	}
	return n
}

func (s *state) with(m mem) *state {
	ms := slices.Clone(s.members)
	i, found := slices.BinarySearchFunc(ms, m.ID, func(x mem, id uint64) int { return cmpID(x.ID, id) })
	if found {
		ms[i] = m
	} else {
		ms = slices.Insert(ms, i, m)
	}
	return newState(ms, s.removed)
}

func (s *state) without(id uint64) *state {
	ms := slices.DeleteFunc(slices.Clone(s.members), func(m mem) bool { return m.ID == id })
	rm := slices.Clone(s.removed)
	i, _ := slices.BinarySearch(rm, id)
	rm = slices.Insert(rm, i, id)
	return newState(ms, rm)
}

// membershipModel is the porcupine model of the membership rules (pkg/membership:
// Validate and Apply, plus the learner limit), for a cluster whose members all run with
// --max-learners=maxLearners and start from initial.
func membershipModel(initial []mem, maxLearners int) porcupine.Model {
	return porcupine.Model{
		Init: func() any {
			ms := slices.Clone(initial)
			sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
			return newState(ms, nil)
		},
		Step: func(st, in, out any) (bool, any) {
			return step(st.(*state), in.(input), out.(output), maxLearners)
		},
		Equal: func(a, b any) bool { return a.(*state).key == b.(*state).key },
		Hash: func(st any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(st.(*state).key))
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string { return describe(in.(input), out.(output)) },
		DescribeState: func(st any) string {
			var parts []string
			for _, m := range st.(*state).members {
				parts = append(parts, m.String())
			}
			return strings.Join(parts, "\n")
		},
	}
}

// step is one call against the model: whether the call could have returned out in state s,
// and the state after it.
func step(s *state, in input, out output, maxLearners int) (bool, *state) {
	if out.Unknown {
		// It may have taken effect or not. Porcupine places a call that never returned anywhere
		// after its start, the very end included, and taking effect at the very end is
		// indistinguishable from never: so apply it wherever the rules allow, as the server would.
		if next, ok := apply(s, in, in.ID, maxLearners); ok {
			return true, next
		}
		return true, s
	}
	if in.Kind == opList {
		return slices.Equal(s.members, out.Members), s
	}
	if out.Err == "" {
		id := in.ID
		if in.Kind == opAdd {
			id = out.ID
		}
		next, ok := apply(s, in, id, maxLearners)
		return ok, next
	}
	if noChange[out.Err] {
		return true, s
	}
	m, exists := s.find(in.ID)
	switch out.Err {
	case errNotFound:
		return in.Kind != opAdd && !exists, s
	case errURLExists:
		self := uint64(0)
		if in.Kind == opUpdate {
			if !exists {
				return false, s
			}
			self = in.ID
		}
		return (in.Kind == opAdd || in.Kind == opUpdate) && s.urlUsed(self, in.URL), s
	case errPromoteVoter:
		return in.Kind == opPromote && exists && !m.Learner, s
	case errNotReady:
		return in.Kind == opPromote && exists && m.Learner, s
	case errTooMany:
		return in.Kind == opAdd && in.Learner && s.count(true) >= maxLearners, s
	}
	// Anything else is a refusal this test never provokes (a bad URL, a duplicate ID).
	return false, s
}

// apply is the call taking effect with id as its target (for an add, the assigned ID), or false
// when the rules refuse it.
func apply(s *state, in input, id uint64, maxLearners int) (*state, bool) {
	m, exists := s.find(id)
	switch in.Kind {
	case opAdd:
		if id == 0 || exists || s.isRemoved(id) || s.urlUsed(0, in.URL) {
			return s, false
		}
		if in.Learner && s.count(true) >= maxLearners {
			return s, false
		}
		return s.with(mem{ID: id, Name: in.Name, URL: in.URL, Learner: in.Learner}), true
	case opRemove:
		if !exists || !m.Learner && s.count(false) == 1 {
			return s, false
		}
		return s.without(id), true
	case opUpdate:
		if !exists || s.urlUsed(id, in.URL) {
			return s, false
		}
		m.URL = in.URL
		return s.with(m), true
	case opPromote:
		if !exists || !m.Learner {
			return s, false
		}
		m.Learner = false
		return s.with(m), true
	}
	return s, in.Kind == opList
}

func describe(in input, out output) string {
	var call string
	switch in.Kind {
	case opAdd:
		role := "voter"
		if in.Learner {
			role = "learner"
		}
		call = fmt.Sprintf("add(%s %s %s)", in.Name, in.URL, role)
		if out.Unknown && in.ID != 0 {
			call += fmt.Sprintf(" seen as %016x", in.ID)
		}
	case opList:
		call = "list()"
	case opUpdate:
		call = fmt.Sprintf("update(%016x %s)", in.ID, in.URL)
	default:
		call = fmt.Sprintf("%s(%016x)", in.Kind, in.ID)
	}
	switch {
	case out.Unknown:
		return call + " -> ?"
	case out.Err != "":
		return call + " -> " + out.Err
	case in.Kind == opAdd:
		return fmt.Sprintf("%s -> %016x", call, out.ID)
	case in.Kind == opList:
		var parts []string
		for _, m := range out.Members {
			parts = append(parts, m.String())
		}
		return call + " -> [" + strings.Join(parts, "; ") + "]"
	}
	return call + " -> ok"
}
