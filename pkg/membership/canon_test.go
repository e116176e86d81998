package membership

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	valid := []string{"a", "m1", "a b", "ü-ñ", `$HOME`, "`id`", `"q"`, `\`, "'", "#x", "-x", "日本",
		strings.Repeat("x", MaxNameLen)}
	for _, n := range valid {
		if err := ValidateName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	invalid := map[string]string{
		"":                          "member name must not be empty",
		strings.Repeat("x", 100000): "member name is 100000 bytes long; at most 253 are allowed",
		" ":                         `member name " " is only white space`,
		"\t\n":                      `member name "\t\n" is only white space`,
		" a":                        `member name " a" must not begin or end with white space`,
		"a ":                        `member name "a " must not begin or end with white space`,
		"a\u00a0":                   `member name "a\u00a0" must not begin or end with white space`,
		"a,b":                       `member name "a,b" must not contain ',' or '=', which separate --initial-cluster's entries`,
		"a=b":                       `member name "a=b" must not contain ',' or '=', which separate --initial-cluster's entries`,
		"a\nb":                      `member name "a\nb" must not contain the unprintable character U+000A`,
		"a\x00b":                    `member name "a\x00b" must not contain the unprintable character U+0000`,
		"a\xffb":                    `member name "a\xffb" is not valid UTF-8`,
	}
	for n, want := range invalid {
		err := ValidateName(n)
		if err == nil || err.Error() != want {
			t.Errorf("%.20q: got %v, want %s", n, err, want)
		}
	}
}

func TestCanonicalURL(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"http://127.0.0.1:2380", "http://127.0.0.1:2380", ""},
		{"HTTP://Example.COM.:2380", "http://example.com:2380", ""},
		{"https://[0:0::1]:2380", "https://[::1]:2380", ""},
		{"http://[::ffff:10.0.0.1]:2380", "http://10.0.0.1:2380", ""},
		{"unix://localhost:42380", "unix://localhost:42380", ""},
		{"unix:///tmp/S", "unix:///tmp/S", ""},
		{"http://127.0.0.1:0", "", "URL port must be a number from 1 to 65535 without leading zeros: http://127.0.0.1:0"},
		{"http://127.0.0.1:99999", "", "URL port must be a number from 1 to 65535 without leading zeros: http://127.0.0.1:99999"},
		{"http://127.0.0.1:02380", "", "URL port must be a number from 1 to 65535 without leading zeros: http://127.0.0.1:02380"},
		{"http://127.0.0.1:65536", "", "URL port must be a number from 1 to 65535 without leading zeros: http://127.0.0.1:65536"},
		{"http://127.0.0.1:65535", "http://127.0.0.1:65535", ""},
		{"http://:2380", "", "URL host must not be empty: http://:2380"},
		{"http://u@a:1", "", "URL must not contain a user: http://u@a:1"},
	}
	for _, tt := range tests {
		got, err := CanonicalURL(tt.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tt.want || msg != tt.err {
			t.Errorf("%s: got %q %q, want %q %q", tt.in, got, msg, tt.want, tt.err)
		}
		if err == nil {
			// The canonical form is a fixed point: canonicalising twice changes nothing.
			if again, err := CanonicalURL(got); again != got || err != nil {
				t.Errorf("%s: canonical %q is not canonical: %q %v", tt.in, got, again, err)
			}
		}
	}
}

// Two spellings of one address clash; different addresses do not.
func TestAddressKey(t *testing.T) {
	same := [][2]string{
		{"http://127.0.0.1:2380", "HTTP://127.0.0.1:2380"},
		{"http://localhost:2380", "http://127.0.0.1:2380"},
		{"http://LOCALHOST.:2380", "https://[::1]:2380"},
		{"http://a.example:1", "https://A.example.:1"},
	}
	for _, p := range same {
		if AddressKey(p[0]) != AddressKey(p[1]) {
			t.Errorf("%s and %s must be one address", p[0], p[1])
		}
	}
	different := [][2]string{
		{"http://127.0.0.1:2380", "http://127.0.0.2:2380"},
		{"http://127.0.0.1:2380", "http://127.0.0.1:2381"},
		{"unix:///tmp/a", "unix:///tmp/A"},
	}
	for _, p := range different {
		if AddressKey(p[0]) == AddressKey(p[1]) {
			t.Errorf("%s and %s must be two addresses", p[0], p[1])
		}
	}
}

// The address checks of add and update: another member's peer URL in any spelling keeps etcd's
// error; a client URL, another member's or the member's own, has its own; a bad name is refused
// with the reason wrapped in; all leave the cluster unchanged.
func TestValidateCanonical(t *testing.T) {
	c := cluster(3, 0)
	c, _ = c.Apply(Change{Kind: KindPublish, Member: Member{ID: 2, ClientURLs: []string{"http://127.0.0.1:2379"}}})
	add := func(name string, urls ...string) Change {
		return Change{Kind: KindAdd, Member: Member{ID: 9, Name: name, PeerURLs: urls}}
	}
	update := func(id ID, urls ...string) Change {
		return Change{Kind: KindUpdate, Member: Member{ID: id, PeerURLs: urls}}
	}
	tests := []struct {
		name string
		ch   Change
		want error
		msg  string
	}{
		{"peer url upper case", add("n", "HTTP://127.0.0.1:2380"), ErrPeerURLExists,
			`etcdserver: Peer URLs already exists: HTTP://127.0.0.1:2380 is the peer URL http://127.0.0.1:2380 of member 0000000000000002 ("m2")`},
		{"peer url as localhost", add("n", "http://localhost:2380"), ErrPeerURLExists, ""},
		{"client url as peer url", add("n", "http://localhost:2379"), ErrURLIsClientURL,
			`etcdserver: peer URL is already a member's client URL: http://localhost:2379 is the client URL http://127.0.0.1:2379 of member 0000000000000002 ("m2")`},
		{"update to another's client url", update(1, "http://127.0.0.1:2379"), ErrURLIsClientURL, ""},
		{"update to own client url", update(2, "https://127.0.0.1:2379"), ErrURLIsClientURL, ""},
		{"port 0", add("n", "http://10.0.0.1:0"), ErrInvalidPeerURLs, ""},
		{"port 99999", add("n", "http://10.0.0.1:99999"), ErrInvalidPeerURLs, ""},
		{"empty host", add("n", "http://:7"), ErrInvalidPeerURLs,
			"etcdserver: given member URLs are invalid: URL host must not be empty: http://:7"},
		{"leading zero", add("n", "http://10.0.0.1:07"), ErrInvalidPeerURLs, ""},
		{"name with space around", add(" n", "http://10.0.0.1:7"), ErrInvalidName,
			`etcdserver: member name is invalid: member name " n" must not begin or end with white space`},
		{"name only space", add("  ", "http://10.0.0.1:7"), ErrInvalidName, ""},
		{"long name", add(strings.Repeat("n", 100000), "http://10.0.0.1:7"), ErrInvalidName, ""},
		{"no name (etcd's clients)", add("", "http://10.0.0.1:7"), nil, ""},
		{"odd but valid", add(`a "b" $c`, "http://10.0.0.1:7"), nil, ""},
	}
	for _, tt := range tests {
		err := c.Validate(tt.ch)
		if !errors.Is(err, tt.want) || (tt.msg != "" && err.Error() != tt.msg) {
			t.Errorf("%s: got %v, want %v %s", tt.name, err, tt.want, tt.msg)
		}
	}
}

func TestCanonicalURLHosts(t *testing.T) {
	for in, want := range map[string]string{
		"http://.:1":                "URL host must not be empty: http://.:1",
		"http://[::%25%FF]:1":       "URL scheme must be http, https, unix, or unixs: http://[::%25%FF]:1",
		"http://[::%25\xff]:1":      "URL host must be a host name or an IP address: http://[::%25\xff]:1",
		"http://a_b.:1":             "",
		"http://a\xff:1":            "URL host must be a host name or an IP address: http://a\xff:1",
		"http://a%20b:1":            "URL scheme must be http, https, unix, or unixs: http://a%20b:1",
		"http://[fe80::1%25eth0]:1": "",
	} {
		got := ""
		if err := ValidateURL(in); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}
