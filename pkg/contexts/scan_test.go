package contexts

import (
	"reflect"
	"strings"
	"testing"
)

// scanned are files scan reads itself, and others it leaves to the YAML parser; either way Load
// must find what the YAML parser finds.
var scanned = []struct {
	content string
	fast    bool
}{
	{"", true},
	{"# nothing yet\n", true},
	{kept, false}, // a comment after a value
	{"current-context: a\ncontexts:\n  - name: a\n    endpoints: [https://h:1, https://h:2]\n    user: root\n", true},
	{"contexts:\n- name: a\n  endpoints: h:1,h:2\n- name: b\n  endpoints: []\n", true},
	{"contexts:\n  - name: a\n    owner: someone\n\n    cacert: /ca.crt\n", true},
	{"current-context: a\n  b\ncontexts:\n  - name: a b\n", false},
	{"contexts:\n  - name: a\n    cacert: /a\n      /b\n", false},
	{"contexts:\n  - name: a\n    tags: [x]\n", false},
	{"contexts:\n  - name: a\n    endpoints:\n      - h:1\n", false},
	{"contexts:\n  - name: a\n    endpoints: [h:1] # the lab\n", false},
	{"contexts:\n  - name: a\n    user: root\n    user: admin\n", false},
	{"contexts:\n  - name: a\n  - name: a\n", false},
	{"contexts:\n", false},
	{"contexts: []\n", false},
	{"contexts:\n\t- name: a\n", false},
	{"---\ncontexts:\n  - name: a\n", false},
	{"contexts:\n  - name: a\n    cacert: ~\n    user: null\n    dial-timeout: 2s\n", true},
	{"contexts:\n  - name: &x a\n", false},
	{"contexts:\n  - name: a\n    endpoints: [h:1,  h:2 ]\n", true},
	{"contexts:\n  - name: a\n   - name: b\n", false},
	{"contexts:\n  - name: 'a''s'\n    endpoints: ['https://h:1', 'h,2']\n", false},
	{"contexts:\n  - name: 'a''s'\n    endpoints: ['https://h:1', h:2]\n    user: 'root'\n", true},
	{"contexts:\n  - name: 'a'b'\n", false},
	{"#00\xf5", false},
	{"0: \x0e", false},
	{"contexts:\n  -  name: a\n     user: b\n", false},
}

// TestScanAgreesWithYAML: for every file above, scan reads it or leaves it as said, and what it
// reads is what the YAML parser reads.
func TestScanAgreesWithYAML(t *testing.T) {
	for _, tt := range scanned {
		cur, list, ok := scan([]byte(tt.content))
		if ok != tt.fast {
			t.Errorf("%q: scan ok %v, want %v", tt.content, ok, tt.fast)
		}
		if ok {
			agree(t, tt.content, cur, list)
		}
	}
}

// agree checks that scan's reading of content is the YAML parser's.
func agree(t *testing.T, content, cur string, list []Context) {
	t.Helper()
	f := &File{Path: "config.yaml", raw: []byte(content)}
	if err := f.decodeDoc(); err != nil {
		t.Errorf("%q: scan read it, YAML refuses it: %v", content, err)
		return
	}
	if len(list) == 0 && len(f.list) == 0 {
		list = f.list
	}
	if cur != f.current || !reflect.DeepEqual(list, f.list) {
		t.Errorf("%q: scan read %q %v, YAML %q %v", content, cur, list, f.current, f.list)
	}
}

// The file Save writes is one scan reads.
func TestScanReadsSavedFiles(t *testing.T) {
	f, err := Load(write(t, "", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"prod", "lab"} {
		if _, err := f.Set(name, map[string]any{"endpoints": []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, "cacert": "/etc/ca.crt", "user": "root", "password-file": "/etc/pw", "command-timeout": "5s"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Use("lab"); err != nil {
		t.Fatal(err)
	}
	b, err := f.encode(f.doc)
	if err != nil {
		t.Fatal(err)
	}
	cur, list, ok := scan(b)
	if !ok {
		t.Fatalf("scan does not read what Save writes:\n%s", b)
	}
	agree(t, string(b), cur, list)
}

// FuzzScan: whatever scan reads, the YAML parser reads the same.
func FuzzScan(f *testing.F) {
	for _, tt := range scanned {
		f.Add(tt.content)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if strings.Count(content, "\n") > 50 {
			return
		}
		if cur, list, ok := scan([]byte(content)); ok {
			agree(t, content, cur, list)
		}
	})
}
