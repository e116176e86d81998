package chaos

import (
	"slices"
	"testing"
)

// What the printer prints for a membership must read back as the environment a joining member
// needs, or the chaos run would start members from something else. (How shells read the quoting
// back is pkg/printer's TestEnvThroughShells.)
func TestPrintedEnvReadsBack(t *testing.T) {
	third := "http://127.0.0.1:3"
	v := &view{members: []mem{
		{ID: 0xb, Name: "b", URL: "http://127.0.0.1:2"},
		{ID: 0xa, Name: "a", URL: "http://127.0.0.1:1", Learner: true},
		{ID: 0xc, URL: third},
	}, started: map[uint64]bool{0xa: true, 0xb: true}}
	r := addResult(v, 0xc, "c")
	if r == nil {
		t.Fatal("no add result for a member of the view")
	}
	text, err := printEnv(r)
	if err != nil {
		t.Fatal(err)
	}
	env, err := parseEnv(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	want := []string{
		"ETCD_NAME=c",
		"ETCD_INITIAL_CLUSTER=a=http://127.0.0.1:1,b=http://127.0.0.1:2,c=" + third,
		"ETCD_INITIAL_ADVERTISE_PEER_URLS=" + third,
		"ETCD_INITIAL_CLUSTER_STATE=existing",
	}
	if !slices.Equal(env, want) {
		t.Errorf("printed\n%sread back as %q, want %q", text, env, want)
	}
	if addResult(v, 0xd, "d") != nil {
		t.Error("an add result for a member the view does not have")
	}
	for _, bad := range []string{
		"ETCD_NAME=\"c\"\n", // too few lines
		`ETCD_NAME="c` + "\n" + text[len("ETCD_NAME=\"c\"\n"):],  // unterminated quote
		text[len("ETCD_NAME=\"c\"\n"):] + "ETCD_NAME=\"c\"\n",    // keys out of order
		"ETCD_NAME=\"c$x\"\n" + text[len("ETCD_NAME=\"c\"\n"):],  // unescaped $
		"ETCD_NAME=\"c\\n\"\n" + text[len("ETCD_NAME=\"c\"\n"):], // a backslash that escapes nothing
	} {
		if env, err := parseEnv(bad); err == nil {
			t.Errorf("parseEnv(%q) = %q, want an error", bad, env)
		}
	}
}
