// Package logtest is a slog handler for tests that count and read the lines a component logs
// while it runs. Nothing a user imports.
//
// Invariants:
//   - A Recorder is safe for the component and the test at once; it keeps every record whole.
package logtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Recorder is a slog.Handler that keeps every record: give a component slog.New(r).
type Recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *Recorder) WithGroup(string) slog.Handler            { return r }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// Count is how many records so far have msg in their message.
func (r *Recorder) Count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if strings.Contains(rec.Message, msg) {
			n++
		}
	}
	return n
}

// Attrs are the attributes of the i-th record, as strings by key.
func (r *Recorder) Attrs(i int) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]string{}
	r.records[i].Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

// String is every record so far, one a line: the message and the attributes.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rec := range r.records {
		b.WriteString(rec.Message)
		rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
		b.WriteString("\n")
	}
	return b.String()
}
