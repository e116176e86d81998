package metrics

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

func TestChangeDecidedOutcomes(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	m.ChangeDecided(membership.KindAdd, nil)
	m.ChangeDecided(membership.KindAdd, membership.ErrPeerURLExists)
	// Errors arrive wrapped from some paths; the reason is still found.
	m.ChangeDecided(membership.KindPromote, fmt.Errorf("promote: %w", membership.ErrLearnerNotReady))
	m.ChangeDecided(membership.KindRemove, errTest)
	_, fams := scrape(t, m)
	wantValue(t, fams, 1, "clusterd_membership_changes_total", "add", "applied")
	wantValue(t, fams, 1, "clusterd_membership_changes_total", "add", "refused")
	wantValue(t, fams, 1, "clusterd_membership_changes_total", "promote", "refused")
	wantValue(t, fams, 1, "clusterd_membership_changes_total", "remove", "failed")
	wantValue(t, fams, 0, "clusterd_membership_changes_total", "update", "applied")
	wantValue(t, fams, 1, "clusterd_membership_refusals_total", "peer_urls_exist")
	wantValue(t, fams, 1, "clusterd_membership_refusals_total", "learner_not_ready")
	wantValue(t, fams, 0, "clusterd_membership_refusals_total", "too_many_learners")
}

// TestEveryMembershipErrorHasAReason parses pkg/membership's errors.go: an error added there
// without a reason here would count as a failure, hiding a refusal from the refusal alerts.
func TestEveryMembershipErrorHasAReason(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../membership/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Err") {
					names = append(names, n.Name)
				}
			}
		}
	}
	if len(names) != len(refusalReasons) {
		t.Errorf("pkg/membership has %d errors %v, refusalReasons has %d", len(names), names, len(refusalReasons))
	}
	seen := map[string]bool{}
	for _, r := range refusalReasons {
		if seen[r.reason] {
			t.Errorf("reason %q used twice", r.reason)
		}
		seen[r.reason] = true
	}
}
