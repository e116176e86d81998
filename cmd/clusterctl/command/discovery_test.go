package command

import (
	"testing"

	"github.com/clusterctl/clusterctl/pkg/printer"
)

func TestDiscoveryValidate(t *testing.T) {
	simple, _ := printer.New(printer.Simple)
	table, _ := printer.New(printer.Table)
	env, _ := printer.New(printer.Env)
	g := func(p printer.Printer) *Globals { return &Globals{Printer: p} }
	tests := []struct {
		name string
		cmd  validator
		args []string
		want string
	}{
		{"new", &discoveryNewOptions{Globals: g(simple), Size: 3}, nil, ""},
		{"new env", &discoveryNewOptions{Globals: g(env), Size: 3, Token: "abc"}, nil, ""},
		{"new size 0", &discoveryNewOptions{Globals: g(simple)}, nil, "--size 0: a cluster has at least one member"},
		{"new bad token", &discoveryNewOptions{Globals: g(simple), Size: 1, Token: "a/b"}, nil, `--token: discovery token "a/b": must not contain '/' or spaces, nor be . or ..`},
		{"status", &discoveryStatusOptions{Globals: g(table)}, []string{"abc"}, ""},
		{"status no token", &discoveryStatusOptions{Globals: g(simple)}, nil, "discovery token not provided"},
		{"status two", &discoveryStatusOptions{Globals: g(simple)}, []string{"a", "b"}, "too many arguments"},
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
