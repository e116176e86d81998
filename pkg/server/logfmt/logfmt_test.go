package logfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestJSONHasEtcdsFields(t *testing.T) {
	var buf bytes.Buffer
	l := WithMember(New(&buf, JSON, slog.LevelInfo), 0x8e9e05c52164694d)
	l.Info("raft.node: elected leader", "term", 2, "took", 1500*time.Millisecond, "error", errors.New("boom"))
	l.Debug("filtered out")
	l.Warn("slow", "group", slog.GroupValue(slog.Duration("d", time.Second)))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (debug filtered):\n%s", len(lines), buf.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, lines[0])
	}
	want := map[string]any{
		"level":           "info",
		"msg":             "raft.node: elected leader",
		"local-member-id": "8e9e05c52164694d",
		"term":            float64(2),
		"took":            "1.5s",
		"error":           "boom",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	// etcd's layout: microseconds and a numeric zone, or Z.
	if ts, _ := got["ts"].(string); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d{4})$`).MatchString(ts) {
		t.Errorf("ts = %q, want etcd's 2006-01-02T15:04:05.000000Z0700", got["ts"])
	}
	if c, _ := got["caller"].(string); !regexp.MustCompile(`^logfmt/logfmt_test\.go:\d+$`).MatchString(c) {
		t.Errorf("caller = %q, want logfmt/logfmt_test.go:LINE", got["caller"])
	}
	for _, slogKey := range []string{"time", "source"} {
		if _, ok := got[slogKey]; ok {
			t.Errorf("slog's own key %q is still there", slogKey)
		}
	}

	var warn map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &warn); err != nil {
		t.Fatal(err)
	}
	if warn["level"] != "warn" {
		t.Errorf("level = %v, want warn", warn["level"])
	}
	// A duration inside a group is a string too, and the group's own keys are not renamed.
	if g, _ := warn["group"].(map[string]any); g["d"] != "1s" {
		t.Errorf("group = %v, want d=1s", warn["group"])
	}
}

func TestLevelNames(t *testing.T) {
	for l, want := range map[slog.Level]string{
		slog.LevelDebug: "debug", slog.LevelInfo: "info", slog.LevelWarn: "warn",
		slog.LevelError: "error", slog.LevelWarn + 2: "warn+2",
	} {
		if got := etcdFields(nil, slog.Any(slog.LevelKey, l)).Value.String(); got != want {
			t.Errorf("level %v is %q, want %q", l, got, want)
		}
	}
}

func TestTextIsSlogsText(t *testing.T) {
	var buf bytes.Buffer
	WithMember(New(&buf, Text, slog.LevelInfo), 1).Info("clusterd started", "name", "m1")
	line := buf.String()
	for _, part := range []string{"level=INFO", `msg="clusterd started"`, "name=m1", "local-member-id=0000000000000001"} {
		if !strings.Contains(line, part) {
			t.Errorf("text line %q lacks %q", line, part)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"text", "json"} {
		if f, err := ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "JSON", "logfmt"} {
		if _, err := ParseFormat(s); err == nil || !strings.Contains(err.Error(), "must be text or json") {
			t.Errorf("ParseFormat(%q): %v, want a refusal", s, err)
		}
	}
}
