package logfmt

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// Format is a --log-format value.
type Format string

const (
	Text Format = "text"
	JSON Format = "json"
)

// MemberKey is the key etcd logs its own member's ID under.
const MemberKey = "local-member-id"

// tsLayout is etcd's timestamp layout (etcd's logutil, kept from its older capnslog lines).
const tsLayout = "2006-01-02T15:04:05.000000Z0700"

// ParseFormat checks a --log-format value before anything starts.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Text, JSON:
		return f, nil
	}
	return "", fmt.Errorf("log format %q: must be text or json", s)
}

// New returns a logger that writes f lines at level and above to w.
func New(w io.Writer, f Format, level slog.Leveler) *slog.Logger {
	if f == JSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
			Level: level,
			// The caller costs a runtime.Callers per line written (none for a line filtered
			// out by level): little next to the write itself, and etcd's lines have it.
			AddSource:   true,
			ReplaceAttr: etcdFields,
		}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// WithMember returns l with this member's ID on every line, under etcd's key and in the form
// clusterctl prints.
func WithMember(l *slog.Logger, id uint64) *slog.Logger {
	return l.With(MemberKey, membership.ID(id).String())
}

// etcdFields renames the record's own fields to etcd's and writes values as etcd's encoder
// does.
func etcdFields(groups []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if a.Value.Kind() == slog.KindTime {
			return slog.String("ts", a.Value.Time().Format(tsLayout))
		}
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			// zap's names are slog's in lower case (debug, info, warn, error); a level
			// between them (WARN+2) has no zap name and keeps slog's, in lower case too.
			return slog.String("level", strings.ToLower(l.String()))
		}
	case slog.SourceKey:
		if s, ok := a.Value.Any().(*slog.Source); ok {
			// zap's short caller: the file's directory and name, and the line.
			return slog.String("caller", fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(s.File)), filepath.Base(s.File), s.Line))
		}
	}
	return a
}
