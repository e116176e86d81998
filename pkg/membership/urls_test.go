package membership

import (
	"errors"
	"slices"
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
