package command

import (
	"errors"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/registry"
)

func TestDiscoveryValidate(t *testing.T) {
	simple, _ := printer.New(printer.Simple)
	table, _ := printer.New(printer.Table)
	env, _ := printer.New(printer.Env)
	g := func(p printer.Printer) *Globals { return &Globals{Printer: p} }
	tests := []struct {
		name string
		cmd  command
		args []string
		want string
	}{
		{"new", &discoveryNewOptions{Globals: g(simple), Size: 3}, nil, ""},
		{"new env", &discoveryNewOptions{Globals: g(env), Size: 3, Token: "abc"}, nil, ""},
		{"new table", &discoveryNewOptions{Globals: g(table), Size: 3}, nil, `output format "table" is not supported by discovery new (supported: simple, json, env)`},
		{"new size 0", &discoveryNewOptions{Globals: g(simple)}, nil, "--size 0: a cluster has at least one member"},
		{"new bad token", &discoveryNewOptions{Globals: g(simple), Size: 1, Token: "a/b"}, nil, `--token: discovery token "a/b": must not contain '/' or spaces, nor be . or ..`},
		{"new argument", &discoveryNewOptions{Globals: g(simple), Size: 1}, []string{"x"}, "too many arguments"},
		{"status", &discoveryStatusOptions{Globals: g(table)}, []string{"abc"}, ""},
		{"status no token", &discoveryStatusOptions{Globals: g(simple)}, nil, "discovery token not provided"},
		{"status two", &discoveryStatusOptions{Globals: g(simple)}, []string{"a", "b"}, "too many arguments"},
		{"status env", &discoveryStatusOptions{Globals: g(env)}, []string{"abc"}, `output format "env" is not supported by discovery status (supported: simple, table, json)`},
	}
	for _, tt := range tests {
		err := tt.cmd.validate(tt.args)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReadToken(t *testing.T) {
	kvs := []client.KeyValue{
		{Key: registry.SizeKey("t"), Value: "2", CreateRevision: 2},
		{Key: registry.MemberKey("t", 0xb), Value: "b=http://b:1", CreateRevision: 4},
		{Key: registry.MemberKey("t", 0xa), Value: "a=http://a:1", CreateRevision: 3},
		{Key: registry.MemberKey("t", 0xc), Value: "garbage", CreateRevision: 5},
		{Key: registry.BootstrappedKey("t", 0xa), Value: "a", CreateRevision: 6},
	}
	cl, err := readToken(kvs, "t")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Size != 2 || cl.InitialCluster() != "a=http://a:1,b=http://b:1" || len(cl.All) != 2 {
		t.Errorf("cluster %+v", cl)
	}
	if _, err := readToken(kvs[1:], "t"); !errors.Is(err, registry.ErrSizeNotFound) {
		t.Errorf("no size: %v", err)
	}
	if _, err := readToken([]client.KeyValue{{Key: registry.SizeKey("t"), Value: "x"}}, "t"); !errors.Is(err, registry.ErrBadSizeKey) {
		t.Errorf("bad size: %v", err)
	}
}
