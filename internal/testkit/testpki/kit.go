package testpki

import "testing"

// Must returns what NewCA or an Issue call made, or ends the test on its error:
// testpki.Must[*testpki.Pair](t)(ca.Server("m1")).
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// NewCAs makes two unrelated CAs in dir, "ca" and "other": one signs what a test expects
// accepted, the other what it expects refused as from an unknown authority.
func NewCAs(t testing.TB, dir string, alg Algorithm) (ca, other *CA) {
	t.Helper()
	return Must[*CA](t)(NewCA(dir, "ca", alg)), Must[*CA](t)(NewCA(dir, "other", alg))
}
