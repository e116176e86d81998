package client

import (
	"context"
	"strings"
)

// isFullID reports whether s has the form FormatID writes. An argument of that form is an ID
// without asking the cluster, so changing a member by ID costs no extra request.
func isFullID(s string) bool {
	return len(s) == 16 && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

// Resolve returns the ID of the member ref names: ref is a 16-hex-digit ID, a name, or a shorter
// hex ID. A name matching several members is an *AmbiguousNameError; a ref matching nothing is
// a *NotFoundError, except a hex ref, which is returned for the server to judge, as etcd would.
func (c *Client) Resolve(ctx context.Context, ref string) (uint64, error) {
	if isFullID(ref) {
		return ParseID(ref)
	}
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return 0, err
	}
	return ResolveIn(list.Members, ref)
}

// ResolveIn is Resolve against a list of members already fetched.
func ResolveIn(members []Member, ref string) (uint64, error) {
	if isFullID(ref) {
		return ParseID(ref)
	}
	hexID, hexErr := ParseID(ref)
	var ids []uint64
	for _, m := range members {
		if m.Name == ref || (hexErr == nil && m.ID == hexID) {
			ids = append(ids, m.ID)
		}
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) > 1:
		return 0, &AmbiguousNameError{Name: ref, IDs: ids}
	case hexErr == nil:
		return hexID, nil
	}
	return 0, notFound(members, ref)
}
