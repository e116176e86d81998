package membership

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCanonicalURL: no URL panics; a URL ValidateURL accepts has a canonical form that is
// itself valid and canonical, and the address key of both spellings is one; ValidatePeerURLs
// agrees with ValidateURL.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:2380", "HTTPS://[::FFFF:10.0.0.1]:1", "unix:///tmp/s",
		"unix://localhost:42380", "http://localhost.:2380", "http://:1", "http://a:0", "http://a:02380",
		"http://a:99999", "http://a:1/", "http://a:1?x", "http://[fe80::1%25eth0]:1", "http://u@a:1", "%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := CanonicalURL(s)
		if (err == nil) != (ValidateURL(s) == nil) {
			t.Fatalf("%q: CanonicalURL and ValidateURL disagree: %v", s, err)
		}
		if err != nil {
			if ValidatePeerURLs([]string{s}) == nil {
				t.Fatalf("%q: ValidatePeerURLs accepts a URL ValidateURL refuses", s)
			}
			return
		}
		again, err := CanonicalURL(c)
		if err != nil || again != c {
			t.Fatalf("%q: canonical %q is not canonical: %q %v", s, c, again, err)
		}
		if AddressKey(s) != AddressKey(c) {
			t.Fatalf("%q and its canonical form %q are two addresses", s, c)
		}
		if ValidatePeerURLs([]string{s, c}) == nil {
			t.Fatalf("%q given twice by two spellings was accepted", s)
		}
	})
}

// FuzzValidateName: no name panics, and an accepted name has the properties the rule promises.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", " a", "a ", " ", "", "a,b", "a=b", "a\nb", "$HOME", "ü", "\xff", "a\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateName(s) != nil {
			return
		}
		if s == "" || len(s) > MaxNameLen || !utf8.ValidString(s) || strings.TrimSpace(s) != s ||
			strings.ContainsAny(s, ",=\n\r\x00") {
			t.Fatalf("%q was accepted", s)
		}
	})
}
