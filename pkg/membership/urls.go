package membership

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// This file is the one home of what a member URL may look like: clusterd checks its flags and
// every proposed peer URL with it, and clusterctl checks --peer-urls with it before sending, so
// the two can never disagree about a URL. It is also the one definition of when two URLs name the
// same address: Validate compares URLs only through CanonicalURL and AddressKey, never as
// strings. Everything here is a pure function of its input (no DNS, no clock), because Validate
// runs again at apply time on every member.

// schemes are the schemes a member speaks, in the order the message names them.
var schemes = []string{"http", "https", "unix", "unixs"}

// ValidateURL returns the contract's message (etcd's words) for the first thing wrong with one
// URL: its length (MaxURLLen), its scheme, then its host:port, then any path ("/" included), then a query or fragment,
// which a member would silently drop when it dials and so would make two spellings of one
// address; then an empty host, and a port that is not a number from 1 to 65535 written without
// leading zeros (":02380" would be a second spelling of ":2380").
func ValidateURL(s string) error {
	_, err := CanonicalURL(s)
	return err
}

// CanonicalURL returns the one spelling of a valid member URL, or ValidateURL's error: the
// scheme and host in lower case, an IP address in its shortest form (an IPv4-mapped IPv6 address
// as IPv4), a DNS name without its trailing dot. A unix socket's address is a file name and is
// kept as given. There are no default ports to fill in: an http or https URL without its port is
// refused, so ":80" is never implied and one address has one spelling.
//
// URLs are stored as given; the canonical form is only what they are compared by.
func CanonicalURL(s string) (string, error) {
	if err := checkURLLen(s); err != nil {
		return "", err
	}
	u, err := url.Parse(s)
	if err != nil || !slices.Contains(schemes, u.Scheme) {
		return "", fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", s)
	}
	// A unix socket's address is its path: it has neither a port nor a path to refuse.
	if strings.HasPrefix(u.Scheme, "unix") {
		if err := checkNoExtras(u, s); err != nil {
			return "", err
		}
		// A file name holds no NUL, and no control character belongs in one ("%00" decodes to
		// one); the escaped form is kept, so that the canonical form parses back to itself.
		if strings.ContainsFunc(u.Path, unicode.IsControl) {
			return "", fmt.Errorf("URL path must not contain control characters: %s", s)
		}
		return u.Scheme + "://" + u.Host + u.EscapedPath(), nil
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || port == "" {
		return "", fmt.Errorf(`URL address does not have the form "host:port": %s`, s)
	}
	if u.Path != "" || u.RawPath != "" {
		return "", fmt.Errorf("URL must not contain a path: %s", s)
	}
	if err := checkNoExtras(u, s); err != nil {
		return "", err
	}
	if host == "" || strings.Trim(host, ".") == "" {
		return "", fmt.Errorf("URL host must not be empty: %s", s)
	}
	if host = canonicalHost(host); host == "" {
		return "", fmt.Errorf("URL host must be a host name or an IP address: %s", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("URL port must be a number from 1 to 65535 without leading zeros: %s", s)
	}
	// url.URL writes an IPv6 zone's '%' as "%25", as it must be read back.
	return (&url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(host, port)}).String(), nil
}

// checkNoExtras refuses a query, a fragment or a user in u, parsed from s.
func checkNoExtras(u *url.URL, s string) error {
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("URL must not contain a query or fragment: %s", s)
	}
	if u.User != nil {
		return fmt.Errorf("URL must not contain a user: %s", s)
	}
	return nil
}

// canonicalHost is a host's one spelling, or "" if it is neither an IP address (an IPv6 zone
// of letters, digits, '-', '_' and '.') nor a name of those characters: an IP address in
// netip's form, a name in lower case without trailing dots.
func canonicalHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		if !hostChars(a.Zone()) {
			return ""
		}
		return a.Unmap().String()
	}
	host = strings.TrimRight(strings.ToLower(host), ".")
	if !hostChars(host) {
		return ""
	}
	return host
}

// hostChars reports whether s holds only the characters of a host name.
func hostChars(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// loopbackNames are the spellings of this machine's own loopback address that a URL may use:
// "localhost" resolves to 127.0.0.1 and ::1, so a listener on one may answer the others.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// AddressKey is what two URLs are compared by when one member's address must not be another's:
// the canonical URL with every spelling of the loopback address made one. It over-approximates
// on purpose: refusing "localhost:2380" beside "127.0.0.1:2380" costs nothing, while accepting it
// gives two members one listener. Only the well-known loopback spellings are folded; other names
// are never resolved, which would make Validate depend on DNS.
func AddressKey(s string) string {
	c, err := CanonicalURL(s)
	if err != nil {
		return s
	}
	u, err := url.Parse(c)
	if err != nil || strings.HasPrefix(u.Scheme, "unix") {
		// A unix socket's address is its path, which the canonical form keeps as given (and
		// which may not parse back: "unix:/0000%000").
		return c
	}
	scheme := strings.TrimSuffix(u.Scheme, "s") // http and https on one port are one listener
	if slices.Contains(loopbackNames, u.Hostname()) {
		return scheme + "://loopback:" + u.Port()
	}
	return scheme + "://" + u.Host
}

// listenerKey is AddressKey without the loopback folding: the same host and port in any case
// and either scheme, one listener whatever its name.
func listenerKey(s string) string {
	c, err := CanonicalURL(s)
	if err != nil {
		return s
	}
	if strings.HasPrefix(c, "https://") {
		return "http://" + strings.TrimPrefix(c, "https://")
	}
	return c
}

// ValidatePeerURLs checks the peer URLs of a change the way a member will use them: at least
// one, each valid by ValidateURL, and no host and port twice (listenerKey). Two names of one
// address (localhost and 127.0.0.1) may both be given for one member, as etcd allows: a member
// may be reached under several names; only another member's use of the address is a clash. It
// answers with the contract's one error, which is all etcd's clients understand, wrapped with the
// reason for the server's log.
func ValidatePeerURLs(urls []string) error {
	if len(urls) == 0 {
		return fmt.Errorf("%w: no peer URL given", ErrInvalidPeerURLs)
	}
	if len(urls) > MaxURLs {
		return fmt.Errorf("%w: %d peer URLs, more than a member may have (%d)", ErrInvalidPeerURLs, len(urls), MaxURLs)
	}
	seen := map[string]string{}
	for _, s := range urls {
		if err := ValidateURL(s); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidPeerURLs, err)
		}
		k := listenerKey(s)
		if first, ok := seen[k]; ok {
			return fmt.Errorf("%w: %s and %s are the same address", ErrInvalidPeerURLs, first, s)
		}
		seen[k] = s
	}
	return nil
}

// MaxURLs is how many peer URLs, and how many client URLs, a member may have. etcd has no limit;
// no real member comes near this one (a URL per address family and name it is reached by), and
// it bounds what one request can make every member store, send and compare.
const MaxURLs = 64

// ValidateClientURLs checks the client URLs a member publishes: at most MaxURLs of them, each at
// most MaxURLLen bytes long. (Each one's form is its flags' business, checked at the member's
// start.)
func ValidateClientURLs(urls []string) error {
	if len(urls) > MaxURLs {
		return fmt.Errorf("%d client URLs, more than a member may have (%d)", len(urls), MaxURLs)
	}
	for _, s := range urls {
		if err := checkURLLen(s); err != nil {
			return err
		}
	}
	return nil
}

// MaxURLLen is the longest member URL, in bytes. etcd has no limit; the longest URL a member can
// listen on is far shorter (a DNS name is at most 253 bytes, a unix socket's path 107, three
// times that escaped), and the bound keeps what one request makes every member store, send in
// every raft stream's metadata and log, small: MaxURLs of them are 32 KiB.
const MaxURLLen = 512

// checkURLLen refuses a URL longer than MaxURLLen in one line that quotes only its beginning.
func checkURLLen(s string) error {
	if len(s) <= MaxURLLen {
		return nil
	}
	return fmt.Errorf("URL is %d bytes long; at most %d are allowed: %s...", len(s), MaxURLLen, strings.ToValidUTF8(s[:64], ""))
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
