package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The model must accept what a correct server does and refuse what a broken one does, or the
// chaos run proves nothing either way.
func TestModel(t *testing.T) {
	a := mem{ID: 0xa, Name: "a", URL: "http://127.0.0.1:1"}
	b := mem{ID: 0xb, Name: "b", URL: "http://127.0.0.1:2"}
	c := mem{ID: 0xc, Name: "c", URL: "http://127.0.0.1:3"}
	initial := []mem{a, b, c}
	d := mem{ID: 0xd, Name: "d", URL: "http://127.0.0.1:4", Learner: true}
	dVoter := d
	dVoter.Learner = false
	list := func(ms ...mem) output { return output{Members: ms} }
	op := func(client int, in input, call, ret int64, out output) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	const inf = 1<<63 - 1
	addD := input{Kind: opAdd, Name: "d", URL: d.URL, Learner: true}

	tests := []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"add then list", []porcupine.Operation{
			op(0, addD, 0, 10, output{ID: 0xd}),
			op(1, input{Kind: opList}, 11, 12, list(a, b, c, d)),
		}, true},
		{"list misses a finished add", []porcupine.Operation{
			op(0, addD, 0, 10, output{ID: 0xd}),
			op(1, input{Kind: opList}, 11, 12, list(a, b, c)),
		}, false},
		{"concurrent list may or may not see the add", []porcupine.Operation{
			op(0, addD, 0, 10, output{ID: 0xd}),
			op(1, input{Kind: opList}, 1, 2, list(a, b, c)),
			op(2, input{Kind: opList}, 3, 4, list(a, b, c, d)),
		}, true},
		{"a list cannot go back in time", []porcupine.Operation{
			op(0, addD, 0, 10, output{ID: 0xd}),
			op(1, input{Kind: opList}, 1, 2, list(a, b, c, d)),
			op(2, input{Kind: opList}, 3, 4, list(a, b, c)),
		}, false},
		{"unknown add seen later", []porcupine.Operation{
			op(0, input{Kind: opAdd, Name: "d", URL: d.URL, Learner: true, ID: 0xd}, 0, inf, output{Unknown: true}),
			op(1, input{Kind: opList}, 5, 6, list(a, b, c)),
			op(1, input{Kind: opList}, 7, 8, list(a, b, c, d)),
		}, true},
		{"unknown add never seen", []porcupine.Operation{
			op(0, addD, 0, inf, output{Unknown: true}),
			op(1, input{Kind: opList}, 7, 8, list(a, b, c)),
		}, true},
		{"member nobody added", []porcupine.Operation{
			op(1, input{Kind: opList}, 7, 8, list(a, b, c, d)),
		}, false},
		{"removed ID comes back", []porcupine.Operation{
			op(0, addD, 0, 1, output{ID: 0xd}),
			op(0, input{Kind: opRemove, ID: 0xd}, 2, 3, output{}),
			op(1, input{Kind: opList}, 4, 5, list(a, b, c, d)),
		}, false},
		{"second learner over the limit", []porcupine.Operation{
			op(0, addD, 0, 1, output{ID: 0xd}),
			op(0, input{Kind: opAdd, Name: "e", URL: "http://127.0.0.1:5", Learner: true}, 2, 3, output{ID: 0xe}),
		}, false},
		{"too many learners is right", []porcupine.Operation{
			op(0, addD, 0, 1, output{ID: 0xd}),
			op(0, input{Kind: opAdd, Name: "e", URL: "http://127.0.0.1:5", Learner: true}, 2, 3, output{Err: errTooMany}),
		}, true},
		{"too many learners with none", []porcupine.Operation{
			op(0, input{Kind: opAdd, Name: "e", URL: "http://127.0.0.1:5", Learner: true}, 2, 3, output{Err: errTooMany}),
		}, false},
		{"URL in use", []porcupine.Operation{
			op(0, input{Kind: opAdd, Name: "x", URL: a.URL}, 0, 1, output{Err: errURLExists}),
			op(0, input{Kind: opAdd, Name: "y", URL: a.URL}, 2, 3, output{ID: 0xf}),
		}, false},
		{"promote, update keeps the role", []porcupine.Operation{
			op(0, addD, 0, 1, output{ID: 0xd}),
			op(0, input{Kind: opUpdate, ID: 0xd, URL: "http://127.0.0.1:9"}, 2, 3, output{}),
			op(0, input{Kind: opList}, 4, 5, list(a, b, c, mem{ID: 0xd, Name: "d", URL: "http://127.0.0.1:9", Learner: true})),
			op(0, input{Kind: opPromote, ID: 0xd}, 6, 7, output{}),
			op(0, input{Kind: opPromote, ID: 0xd}, 8, 9, output{Err: errPromoteVoter}),
			op(0, input{Kind: opList}, 10, 11, list(a, b, c, mem{ID: 0xd, Name: "d", URL: "http://127.0.0.1:9"})),
		}, true},
		{"update loses the learner flag", []porcupine.Operation{
			op(0, addD, 0, 1, output{ID: 0xd}),
			op(0, input{Kind: opUpdate, ID: 0xd, URL: d.URL}, 2, 3, output{}),
			op(0, input{Kind: opList}, 4, 5, list(a, b, c, dVoter)),
		}, false},
		{"not found for a member", []porcupine.Operation{
			op(0, input{Kind: opRemove, ID: 0xa}, 0, 1, output{Err: errNotFound}),
		}, false},
		{"no leader changes nothing", []porcupine.Operation{
			op(0, input{Kind: opRemove, ID: 0xa}, 0, 1, output{Err: errNoLeader}),
			op(0, input{Kind: opList}, 2, 3, list(a, b, c)),
		}, true},
		{"no leader but it happened", []porcupine.Operation{
			op(0, input{Kind: opRemove, ID: 0xa}, 0, 1, output{Err: errNoLeader}),
			op(0, input{Kind: opList}, 2, 3, list(b, c)),
		}, false},
		{"unknown remove may land late", []porcupine.Operation{
			op(0, input{Kind: opRemove, ID: 0xa}, 0, inf, output{Unknown: true}),
			op(1, input{Kind: opList}, 2, 3, list(a, b, c)),
			op(1, input{Kind: opList}, 4, 5, list(b, c)),
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperations(membershipModel(initial, 1), tc.ops)
			if got != tc.ok {
				t.Errorf("linearizable = %v, want %v", got, tc.ok)
			}
		})
	}
}

// An add whose outcome is unknown takes the one ID its name was seen with; a name seen with two
// IDs is a duplicate add.
func TestOperations(t *testing.T) {
	add := input{Kind: opAdd, Name: "n", URL: "http://127.0.0.1:1"}
	listed := func(ids ...uint64) record {
		var ms []mem
		for _, id := range ids {
			ms = append(ms, mem{ID: id, Name: "n"})
		}
		return record{in: input{Kind: opList}, out: output{Members: ms}}
	}
	ops, problems := operations([]record{{in: add, out: output{Unknown: true}}, listed(7)})
	if len(problems) != 0 || ops[0].Input.(input).ID != 7 || ops[0].Return != 1<<63-1 {
		t.Errorf("got %+v, %v", ops[0], problems)
	}
	_, problems = operations([]record{{in: add, out: output{ID: 7}}, listed(7), listed(8)})
	if len(problems) != 1 {
		t.Errorf("a name seen with two IDs: problems %v", problems)
	}
}
