package membership

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// This file is the one home of what a member URL may look like: clusterd checks its flags and
// every proposed peer URL with it, and clusterctl checks --peer-urls with it before sending, so
// the two can never disagree about a URL.

// schemes are the schemes a member speaks, in the order the message names them.
var schemes = []string{"http", "https", "unix", "unixs"}

// ValidateURL returns the contract's message (etcd's words) for the first thing wrong with one
// URL: its scheme, then its host:port, then any path ("/" included), then a query or fragment,
// which a member would silently drop when it dials and so would make two spellings of one
// address.
func ValidateURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", s)
	}
	// A unix socket's address is its path: it has neither a port nor a path to refuse.
	if !strings.HasPrefix(u.Scheme, "unix") {
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return fmt.Errorf(`URL address does not have the form "host:port": %s`, s)
		}
		if u.Path != "" {
			return fmt.Errorf("URL must not contain a path: %s", s)
		}
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("URL must not contain a query or fragment: %s", s)
	}
	return nil
}

// ValidatePeerURLs checks the peer URLs of a change the way a member will use them: at least
// one, each valid by ValidateURL, and no URL twice. It answers with the contract's one error,
// which is all etcd's clients understand.
func ValidatePeerURLs(urls []string) error {
	if len(urls) == 0 {
		return ErrInvalidPeerURLs
	}
	seen := map[string]bool{}
	for _, s := range urls {
		if err := ValidateURL(s); err != nil || seen[s] {
			return ErrInvalidPeerURLs
		}
		seen[s] = true
	}
	return nil
}

// SplitURLs splits a comma-separated list of URLs as flags and ETCD_* variables give it,
// trimming spaces around each and dropping empty entries, so "a, b," is the two URLs a and b.
func SplitURLs(list string) []string {
	var out []string
	for _, part := range strings.Split(list, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
