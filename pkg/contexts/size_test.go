package contexts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manyContexts is a contexts file of n contexts, each with what a real one holds, the last one
// current.
func manyContexts(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "current-context: c%d\ncontexts:\n", n-1)
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    endpoints: [https://10.%d.%d.1:2379, https://10.%d.%d.2:2379]\n    cacert: /etc/c%d/ca.crt\n    cert: /etc/c%d/c.crt\n    key: /etc/c%d/c.key\n    user: root\n    password-file: /etc/c%d/pw\n",
			i, i/256%256, i%256, i/256%256, i%256, i, i, i, i)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadsManyContexts: a file of 20,000 contexts loads whole, and the current one is found
// with its settings (BenchmarkLoadManyContexts measures how fast).
func TestLoadsManyContexts(t *testing.T) {
	const n = 20000
	f, err := Load(manyContexts(t, n))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := f.Contexts()
	if err != nil || len(cs) != n {
		t.Fatalf("%d contexts (%v), want %d", len(cs), err, n)
	}
	c, err := f.Get(f.Current())
	if err != nil || c.Name != fmt.Sprintf("c%d", n-1) || c.Settings["password-file"] != fmt.Sprintf("/etc/c%d/pw", n-1) {
		t.Fatalf("the current context: %+v (%v)", c, err)
	}
}

// BenchmarkLoadManyContexts is what every command pays for a contexts file of 20,000 contexts:
// Load and the current context's settings.
func BenchmarkLoadManyContexts(b *testing.B) {
	p := manyContexts(b, 20000)
	for b.Loop() {
		f, err := Load(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Get(f.Current()); err != nil {
			b.Fatal(err)
		}
	}
}
