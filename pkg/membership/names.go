package membership

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest member name, in bytes: a DNS name's limit, so that a host's fully
// qualified name, the usual choice, always fits.
const MaxNameLen = 253

// ValidateName is the one rule for a member name, applied by clusterctl before it sends an add,
// by clusterd to --name and --initial-cluster, and by Validate to an add. A name is what
// operators, ETCD_INITIAL_CLUSTER and the printed environment tell members apart by, so it must
// come back from each of them letter for letter:
//   - not empty, at most MaxNameLen bytes of valid UTF-8;
//   - no white space at either end: clusterd trims --initial-cluster's entries, so " a" there is
//     "a", and a member named " a" could never find itself;
//   - no ',' or '=': they separate the entries of --initial-cluster and a name from its URL;
//   - only printable characters (spaces inside are fine): a control character or a line break
//     would split the printed environment and `member list` lines.
//
// Anything else (quotes, '$', '\', '#', non-ASCII letters) survives the double-quoted environment
// clusterctl prints, which escapes what a shell would otherwise expand.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("member name must not be empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("member name is %d bytes long; at most %d are allowed", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("member name %q is not valid UTF-8", name)
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("member name %q is only white space", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("member name %q must not begin or end with white space", name)
	case strings.ContainsAny(name, ",="):
		return fmt.Errorf("member name %q must not contain ',' or '=', which separate --initial-cluster's entries", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("member name %q must not contain the unprintable character %U", name, r)
		}
	}
	return nil
}
