package command

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

func globals(t *testing.T, f printer.Format) *Globals {
	t.Helper()
	p, err := printer.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return &Globals{Printer: p}
}

func check(t *testing.T, name string, err error, want string) {
	t.Helper()
	got := ""
	if err != nil {
		got = err.Error()
	}
	if got != want {
		t.Errorf("%s: got %q, want %q", name, got, want)
	}
}

func TestMemberAddValidate(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		urls   string
		format printer.Format
		want   string
	}{
		{"ok", []string{"infra3"}, "http://127.0.0.1:42380", printer.Simple, ""},
		{"two URLs", []string{"infra3"}, "http://127.0.0.1:42380,https://infra3:2380", printer.Env, ""},
		{"unix URL", []string{"infra3"}, "unix://localhost:42380", printer.JSON, ""},
		{"no name", nil, "", printer.Simple, "member name not provided"},
		{"empty name", []string{""}, "http://127.0.0.1:42380", printer.Simple, "member name not provided"},
		{"no peer URLs", []string{"infra5"}, "", printer.Simple, "member peer urls not provided"},
		{"URL as argument", []string{"infra3", "http://127.0.0.1:42380"}, "", printer.Simple,
			"too many arguments, did you mean --peer-urls=http://127.0.0.1:42380"},
		{"two URLs as arguments", []string{"infra3", "http://a:1", "x", "https://b:2"}, "", printer.Simple,
			"too many arguments, did you mean --peer-urls=http://a:1, did you mean --peer-urls=https://b:2"},
		{"extra argument", []string{"infra3", "x"}, "http://a:1", printer.Simple, "too many arguments"},
		{"not a URL", []string{"infra6"}, "notaurl", printer.Simple, "URL scheme must be http, https, unix, or unixs: notaurl"},
		{"bad scheme", []string{"infra6"}, "ftp://a:1", printer.Simple, "URL scheme must be http, https, unix, or unixs: ftp://a:1"},
		{"no port", []string{"infra6"}, "http://127.0.0.1", printer.Simple, `URL address does not have the form "host:port": http://127.0.0.1`},
		{"path", []string{"infra6"}, "http://127.0.0.1:2380/x", printer.Simple, "URL must not contain a path: http://127.0.0.1:2380/x"},
		{"second URL bad", []string{"infra6"}, "http://a:1,b:2", printer.Simple, "URL scheme must be http, https, unix, or unixs: b:2"},
		{"comma in name", []string{"a,b"}, "http://a:1", printer.Simple, `member name "a,b" must not contain ',' or '=', which separate --initial-cluster's entries`},
		{"equals in name", []string{"a=b"}, "http://a:1", printer.Simple, `member name "a=b" must not contain ',' or '=', which separate --initial-cluster's entries`},
		{"leading space", []string{" infra3"}, "http://a:1", printer.Simple, `member name " infra3" must not begin or end with white space`},
		{"trailing space", []string{"infra3 "}, "http://a:1", printer.Simple, `member name "infra3 " must not begin or end with white space`},
		{"only spaces", []string{"   "}, "http://a:1", printer.Simple, `member name "   " is only white space`},
		{"too long", []string{strings.Repeat("n", 100000)}, "http://a:1", printer.Simple, "member name is 100000 bytes long; at most 253 are allowed"},
		{"space inside", []string{"rack 3 node"}, "http://a:1", printer.Simple, ""},
		{"odd but valid", []string{`a"b$c\d#e'f`}, "http://a:1", printer.Simple, ""},
		{"non-ASCII name", []string{"nœud"}, "http://a:1", printer.Simple, `member name "nœud": clusterctl sends the name as gRPC metadata, which carries printable ASCII only`},
		// URLs: the validator's one-line messages (membership.ValidateURL), for add and update.
		{"port 0", []string{"infra6"}, "http://10.0.0.1:0", printer.Simple, "URL port must be a number from 1 to 65535 without leading zeros: http://10.0.0.1:0"},
		{"port 99999", []string{"infra6"}, "http://10.0.0.1:99999", printer.Simple, "URL port must be a number from 1 to 65535 without leading zeros: http://10.0.0.1:99999"},
		{"empty host", []string{"infra6"}, "http://:2380", printer.Simple, "URL host must not be empty: http://:2380"},
		{"leading zero port", []string{"infra6"}, "http://10.0.0.1:02380", printer.Simple, "URL port must be a number from 1 to 65535 without leading zeros: http://10.0.0.1:02380"},
	}
	for _, tt := range tests {
		o := &memberAddOptions{Globals: globals(t, tt.format), PeerURLsFlag: tt.urls}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

func TestMemberChangeValidate(t *testing.T) {
	tests := []struct {
		name   string
		kind   printer.Kind
		args   []string
		format printer.Format
		want   string
	}{
		{"remove by ID", printer.MemberRemove, []string{"96dbf27657837fe1"}, printer.Simple, ""},
		{"remove by name", printer.MemberRemove, []string{"infra3"}, printer.JSON, ""},
		{"remove nothing", printer.MemberRemove, nil, printer.Simple, "member ID is not provided"},
		{"remove two", printer.MemberRemove, []string{"a", "b"}, printer.Simple, "too many arguments"},
		{"promote nothing", printer.MemberPromote, []string{""}, printer.Simple, "member ID is not provided"},
	}
	for _, tt := range tests {
		o := &memberChangeOptions{Globals: globals(t, tt.format), kind: tt.kind}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

func TestMemberUpdateValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		urls string
		want string
	}{
		{"ok", []string{"infra0"}, "http://127.0.0.1:12380,http://localhost:12380", ""},
		{"no ID", nil, "http://a:1", "member ID is not provided"},
		{"no URLs", []string{"infra0"}, "", "member peer urls not provided"},
		{"URL as argument", []string{"infra0", "http://a:1"}, "", "too many arguments, did you mean --peer-urls=http://a:1"},
		{"bad URL", []string{"infra0"}, "http://a", `URL address does not have the form "host:port": http://a`},
		{"port 0", []string{"infra0"}, "http://a:0", "URL port must be a number from 1 to 65535 without leading zeros: http://a:0"},
		{"port 99999", []string{"infra0"}, "http://a:99999", "URL port must be a number from 1 to 65535 without leading zeros: http://a:99999"},
		{"empty host", []string{"infra0"}, "http://:2380", "URL host must not be empty: http://:2380"},
		{"leading zero port", []string{"infra0"}, "http://a:02380", "URL port must be a number from 1 to 65535 without leading zeros: http://a:02380"},
	}
	for _, tt := range tests {
		o := &memberUpdateOptions{memberChangeOptions: memberChangeOptions{Globals: globals(t, printer.Simple), kind: printer.MemberUpdate}, PeerURLsFlag: tt.urls}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

func TestMemberPromoteValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		wait time.Duration
		want string
	}{
		{"ok", []string{"infra3"}, 0, ""},
		{"wait", []string{"infra3"}, time.Minute, ""},
		{"negative wait", []string{"infra3"}, -time.Second, "--wait must not be negative, not -1s"},
		{"no ID", nil, 0, "member ID is not provided"},
	}
	for _, tt := range tests {
		o := &memberPromoteOptions{memberChangeOptions: memberChangeOptions{Globals: globals(t, printer.Simple), kind: printer.MemberPromote}, Wait: tt.wait}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

func TestMemberListValidate(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		consistency string
		format      printer.Format
		want        string
	}{
		{"linearizable", nil, "l", printer.Simple, ""},
		{"serializable table", nil, "s", printer.Table, ""},
		{"json", nil, "l", printer.JSON, ""},
		{"bad consistency", nil, "x", printer.Simple, `unknown consistency flag "x"`},
	}
	for _, tt := range tests {
		o := &memberListOptions{Globals: globals(t, tt.format), Consistency: tt.consistency}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

// TestDryRunValidate covers --dry-run on every command that has it: the rest of the command line
// is checked as without it.
func TestDryRunValidate(t *testing.T) {
	add := func(f printer.Format, args []string, urls string) func() error {
		return func() error {
			o := &memberAddOptions{Globals: globals(t, f), PeerURLsFlag: urls, DryRun: true}
			return o.validate(args)
		}
	}
	change := func(k printer.Kind, f printer.Format, args []string) func() error {
		return func() error {
			o := &memberChangeOptions{Globals: globals(t, f), kind: k, DryRun: true}
			return o.validate(args)
		}
	}
	update := func(f printer.Format, args []string, urls string) func() error {
		return func() error {
			o := &memberUpdateOptions{memberChangeOptions: memberChangeOptions{Globals: globals(t, f), kind: printer.MemberUpdate, DryRun: true}, PeerURLsFlag: urls}
			return o.validate(args)
		}
	}
	promote := func(args []string, wait time.Duration) func() error {
		return func() error {
			o := &memberPromoteOptions{memberChangeOptions: memberChangeOptions{Globals: globals(t, printer.Simple), kind: printer.MemberPromote, DryRun: true}, Wait: wait}
			return o.validate(args)
		}
	}
	tests := []struct {
		name     string
		validate func() error
		want     string
	}{
		{"add simple", add(printer.Simple, []string{"infra3"}, "http://a:1"), ""},
		{"add json", add(printer.JSON, []string{"infra3"}, "http://a:1"), ""},
		{"add no URLs", add(printer.Simple, []string{"infra3"}, ""), "member peer urls not provided"},
		{"add no name", add(printer.Simple, nil, "http://a:1"), "member name not provided"},
		{"remove", change(printer.MemberRemove, printer.Simple, []string{"infra1"}), ""},
		{"remove json", change(printer.MemberRemove, printer.JSON, []string{"96dbf27657837fe1"}), ""},
		{"remove nothing", change(printer.MemberRemove, printer.Simple, nil), "member ID is not provided"},
		{"update", update(printer.JSON, []string{"infra0"}, "http://a:1"), ""},
		{"update bad URL", update(printer.Simple, []string{"infra0"}, "http://a"), `URL address does not have the form "host:port": http://a`},
		{"promote", promote([]string{"infra3"}, 0), ""},
		{"promote with wait", promote([]string{"infra3"}, time.Minute), "--dry-run and --wait cannot be used together"},
		{"promote nothing", promote(nil, 0), "member ID is not provided"},
	}
	for _, tt := range tests {
		check(t, tt.name, tt.validate(), tt.want)
	}
}

func TestRemovesOneOfTwoVoters(t *testing.T) {
	voter := func(id uint64) client.Member { return client.Member{ID: id} }
	learner := func(id uint64) client.Member { return client.Member{ID: id, IsLearner: true} }
	tests := []struct {
		name    string
		members []client.Member
		id      uint64
		want    bool
	}{
		{"voter of two", []client.Member{voter(1), voter(2)}, 1, true},
		{"voter of two, with a learner", []client.Member{voter(1), voter(2), learner(3)}, 2, true},
		{"learner beside two voters", []client.Member{voter(1), voter(2), learner(3)}, 3, false},
		{"voter of three", []client.Member{voter(1), voter(2), voter(3)}, 1, false},
		{"voter of one", []client.Member{voter(1), learner(2)}, 1, false},
		{"no such member", []client.Member{voter(1), voter(2)}, 9, false},
	}
	for _, tt := range tests {
		if got := removesOneOfTwoVoters(tt.members, tt.id); got != tt.want {
			t.Errorf("%s: got %v", tt.name, got)
		}
	}
}

func TestMemberReplaceValidate(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		urls   string
		format printer.Format
		dryRun bool
		wait   time.Duration
		want   string
	}{
		{"ok", []string{"infra1", "infra3"}, "http://a:1", printer.Simple, false, time.Minute, ""},
		{"env", []string{"infra1", "infra3"}, "http://a:1", printer.Env, false, time.Minute, ""},
		{"json", []string{"infra1", "infra3"}, "http://a:1", printer.JSON, false, time.Minute, ""},
		{"dry run", []string{"infra1", "infra3"}, "http://a:1", printer.Simple, true, time.Minute, ""},
		{"json dry run", []string{"infra1", "infra3"}, "http://a:1", printer.JSON, true, time.Minute, ""},
		{"no old", nil, "http://a:1", printer.Simple, false, time.Minute, "member ID is not provided"},
		{"no new name", []string{"infra1"}, "http://a:1", printer.Simple, false, time.Minute, "member name not provided"},
		// a machine rebuilt under its old name: the old member must be dead, which the run checks
		{"same name", []string{"infra1", "infra1"}, "http://a:1", printer.Simple, false, time.Minute, ""},
		{"URL as argument", []string{"infra1", "infra3", "http://a:1"}, "", printer.Simple, false, time.Minute,
			"too many arguments, did you mean --peer-urls=http://a:1"},
		{"no peer URLs", []string{"infra1", "infra3"}, "", printer.Simple, false, time.Minute, "member peer urls not provided"},
		{"bad name", []string{"infra1", "a,b"}, "http://a:1", printer.Simple, false, time.Minute,
			`member name "a,b" must not contain ',' or '=', which separate --initial-cluster's entries`},
		{"zero wait", []string{"infra1", "infra3"}, "http://a:1", printer.Simple, false, 0, "--wait-timeout must be positive, not 0s"},
	}
	for _, tt := range tests {
		o := &memberReplaceOptions{Globals: globals(t, tt.format), PeerURLsFlag: tt.urls, DryRun: tt.dryRun, WaitTimeout: tt.wait}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

func TestIdempotentFlagsValidate(t *testing.T) {
	add := &memberAddOptions{Globals: globals(t, printer.Simple), PeerURLsFlag: "http://a:1", IfNotExists: true, DryRun: true}
	check(t, "add", add.validate([]string{"infra3"}), "--if-not-exists and --dry-run cannot be used together")
	rm := &memberRemoveOptions{memberChangeOptions: memberChangeOptions{Globals: globals(t, printer.Simple), kind: printer.MemberRemove, DryRun: true}, IgnoreNotFound: true}
	check(t, "remove", rm.validate([]string{"infra3"}), "--ignore-not-found and --dry-run cannot be used together")
}

func TestMemberHistoryValidate(t *testing.T) {
	tests := []struct {
		name   string
		o      memberHistoryOptions
		args   []string
		format printer.Format
		want   string
	}{
		{"all", memberHistoryOptions{Consistency: "l"}, nil, printer.Simple, ""},
		{"selected", memberHistoryOptions{Consistency: "s", Member: "infra1", Since: "2026-11-26T15:04:05+01:00", Limit: 3}, nil, printer.Table, ""},
		{"json", memberHistoryOptions{Consistency: "l", Since: "2026-11-26T15:04:05.5Z"}, nil, printer.JSON, ""},
		{"consistency", memberHistoryOptions{Consistency: "x"}, nil, printer.Simple, `unknown consistency flag "x"`},
		{"negative limit", memberHistoryOptions{Consistency: "l", Limit: -1}, nil, printer.Simple, "--limit -1: must be 0 or more"},
		{"since a duration", memberHistoryOptions{Consistency: "l", Since: "1h30m"}, nil, printer.Simple, ""},
		{"since not RFC 3339", memberHistoryOptions{Consistency: "l", Since: "2026-11-26"}, nil, printer.Simple,
			`--since "2026-11-26": neither an RFC 3339 time such as 2026-11-26T15:04:05Z nor a duration such as 90m`},
		{"since a negative duration", memberHistoryOptions{Consistency: "l", Since: "-1h"}, nil, printer.Simple,
			`--since "-1h": neither an RFC 3339 time such as 2026-11-26T15:04:05Z nor a duration such as 90m`},
		{"since zero", memberHistoryOptions{Consistency: "l", Since: "0s"}, nil, printer.Simple,
			`--since "0s": neither an RFC 3339 time such as 2026-11-26T15:04:05Z nor a duration such as 90m`},
	}
	for _, tt := range tests {
		o := tt.o
		o.Globals = globals(t, tt.format)
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                       now.Add(-90 * time.Minute),
		"2026-11-26T15:04:05+01:00": time.Date(2026, 11, 26, 14, 4, 5, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("--since %s: %v, %v; want %v", in, got, err, want)
		}
	}
	o := &memberHistoryOptions{Globals: globals(t, printer.Simple), Consistency: "l", Since: "2026-11-26T16:04:05+01:00"}
	if err := o.validate(nil); err != nil || !o.since.Equal(time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC)) {
		t.Errorf("--since read as %v, %v", o.since, err)
	}
}
