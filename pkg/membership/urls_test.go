package membership

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:2380", ""},
		{"https://[::1]:2380", ""},
		{"unix://localhost:42380", ""},
		{"unix:///tmp/s", ""},
		{"notaurl", "URL scheme must be http, https, unix, or unixs: notaurl"},
		{"b:2", "URL scheme must be http, https, unix, or unixs: b:2"},
		{"ftp://a:1", "URL scheme must be http, https, unix, or unixs: ftp://a:1"},
		{"http://[::1", "URL scheme must be http, https, unix, or unixs: http://[::1"},
		{"http://127.0.0.1", `URL address does not have the form "host:port": http://127.0.0.1`},
		{"http://127.0.0.1:", `URL address does not have the form "host:port": http://127.0.0.1:`},
		// The port is checked before the path, as etcd does.
		{"http://127.0.0.1/x", `URL address does not have the form "host:port": http://127.0.0.1/x`},
		{"http://127.0.0.1:1/x", "URL must not contain a path: http://127.0.0.1:1/x"},
		// "/" is a path too: the CLI and the server used to disagree on it.
		{"http://127.0.0.1:1/", "URL must not contain a path: http://127.0.0.1:1/"},
		{"http://127.0.0.1:1/?q=", "URL must not contain a path: http://127.0.0.1:1/?q="},
		{"http://127.0.0.1:1?q=1", "URL must not contain a query or fragment: http://127.0.0.1:1?q=1"},
		{"http://127.0.0.1:1?", "URL must not contain a query or fragment: http://127.0.0.1:1?"},
		{"http://127.0.0.1:1#f", "URL must not contain a query or fragment: http://127.0.0.1:1#f"},
		{"unix:///tmp/s?q=1", "URL must not contain a query or fragment: unix:///tmp/s?q=1"},
		// At the limit, and one byte past it: the refusal quotes the beginning only.
		{longURL(MaxURLLen), ""},
		{longURL(MaxURLLen + 1), "URL is 513 bytes long; at most 512 are allowed: " + longURL(MaxURLLen)[:64] + "..."},
		// What is not UTF-8 in the part quoted is left out of the line.
		{"unix:///" + strings.Repeat("\xff", 600), "URL is 608 bytes long; at most 512 are allowed: unix:///..."},
	}
	for _, tt := range tests {
		got := ""
		if err := ValidateURL(tt.in); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidatePeerURLs(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		want error
	}{
		{"one", []string{"http://a:1"}, nil},
		{"two", []string{"http://a:1", "https://b:2"}, nil},
		{"none", nil, ErrInvalidPeerURLs},
		{"bad", []string{"http://a:1", "http://b:2/"}, ErrInvalidPeerURLs},
		{"twice", []string{"http://a:1", "http://a:1"}, ErrInvalidPeerURLs},
		{"twice spelt two ways", []string{"http://a:1", "HTTPS://A:1"}, ErrInvalidPeerURLs},
		{"as many as a member may have", manyURLs(MaxURLs), nil},
		{"more than a member may have", manyURLs(MaxURLs + 1), ErrInvalidPeerURLs},
	}
	for _, tt := range tests {
		if err := ValidatePeerURLs(tt.urls); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestSplitURLs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"http://a:1", []string{"http://a:1"}},
		{"http://a:1, http://b:2,", []string{"http://a:1", "http://b:2"}},
	}
	for _, tt := range tests {
		if got := SplitURLs(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// manyURLs is n distinct peer URLs.
func manyURLs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("http://10.%d.%d.1:2380", i/256, i%256)
	}
	return out
}

// A member publishes at most MaxURLs client URLs; the refusal says how many, and the limit.
func TestValidateClientURLs(t *testing.T) {
	if err := ValidateClientURLs(manyURLs(MaxURLs)); err != nil {
		t.Fatal(err)
	}
	c := NewCluster(7, []*Member{{ID: 1, PeerURLs: []string{"http://a:1"}}})
	err := c.Validate(Change{Kind: KindPublish, Member: Member{ID: 1, ClientURLs: manyURLs(MaxURLs + 1)}})
	if err == nil || err.Error() != "65 client URLs, more than a member may have (64)" {
		t.Fatalf("publish of 65 client URLs: %v", err)
	}
	err = c.Validate(Change{Kind: KindPublish, Member: Member{ID: 1, ClientURLs: []string{longURL(MaxURLLen + 1)}}})
	if err == nil || !strings.HasPrefix(err.Error(), "URL is 513 bytes long; at most 512 are allowed: ") {
		t.Fatalf("publish of a client URL of 513 bytes: %v", err)
	}
}

// longURL is a valid http URL of n bytes (n at least 20), with a DNS name of dotted labels.
func longURL(n int) string {
	const head, tail = "http://", ":2380"
	host := []byte(strings.Repeat("a", n-len(head)-len(tail)))
	for i := 63; i < len(host)-1; i += 64 {
		host[i] = '.'
	}
	return head + string(host) + tail
}

// The conflict check is linear: a change of many URLs beside a member of many URLs is refused or
// accepted by one map look-up a URL, and names the URL and member it clashes with.
func TestCheckURLsFreeMany(t *testing.T) {
	const n = 3000
	big := make([]string, n)
	for i := range big {
		big[i] = fmt.Sprintf("http://10.1.%d.%d:2380", i/256, i%256)
	}
	c := NewCluster(7, []*Member{{ID: 1, Name: "big", PeerURLs: big, IsLearner: true}, {ID: 2, Name: "c", PeerURLs: []string{"http://a:1"}, ClientURLs: []string{"http://b:2"}}})
	other := make([]string, n)
	for i := range other {
		other[i] = fmt.Sprintf("http://10.2.%d.%d:2380", i/256, i%256)
	}
	if err := c.checkURLsFree(9, other); err != nil {
		t.Fatal(err)
	}
	other[n-1] = "http://10.1.0.7:2380"
	if err := c.checkURLsFree(9, other); !errors.Is(err, ErrPeerURLExists) || !strings.Contains(err.Error(), `http://10.1.0.7:2380 is the peer URL http://10.1.0.7:2380 of member 0000000000000001 ("big")`) {
		t.Fatalf("clash with the big learner: %v", err)
	}
	if err := c.checkURLsFree(9, []string{"HTTP://B:2"}); !errors.Is(err, ErrURLIsClientURL) {
		t.Fatalf("clash with a client URL: %v", err)
	}
	if err := c.checkURLsFree(1, big); err != nil {
		t.Fatalf("a member's own URLs: %v", err)
	}
}

// BenchmarkValidateBesideLargeLearner is the check of an update of 64 peer URLs in a cluster
// whose learner holds 3,000 (as an older version could store): the maps make it linear.
func BenchmarkValidateBesideLargeLearner(b *testing.B) {
	big := make([]string, 3000)
	for i := range big {
		big[i] = fmt.Sprintf("http://10.1.%d.%d:2380", i/256, i%256)
	}
	c := NewCluster(7, []*Member{{ID: 1, Name: "big", PeerURLs: big, IsLearner: true}, {ID: 2, Name: "v", PeerURLs: []string{"http://a:1"}}})
	ch := Change{Kind: KindUpdate, Member: Member{ID: 2, PeerURLs: manyURLs(MaxURLs)}}
	for b.Loop() {
		if err := c.Validate(ch); err != nil {
			b.Fatal(err)
		}
	}
}
