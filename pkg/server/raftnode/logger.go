package raftnode

import (
	"context"
	"fmt"
	"log/slog"
)

// raftLogger routes raft's own log lines into the member's logger.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) logf(level slog.Level, format string, args ...any) {
	if r.l.Enabled(context.Background(), level) {
		r.l.Log(context.Background(), level, fmt.Sprintf(format, args...), "component", "raft")
	}
}

func (r raftLogger) Debug(v ...any)                   { r.logf(slog.LevelDebug, "%s", fmt.Sprint(v...)) }
func (r raftLogger) Debugf(format string, v ...any)   { r.logf(slog.LevelDebug, format, v...) }
func (r raftLogger) Info(v ...any)                    { r.logf(slog.LevelInfo, "%s", fmt.Sprint(v...)) }
func (r raftLogger) Infof(format string, v ...any)    { r.logf(slog.LevelInfo, format, v...) }
func (r raftLogger) Warning(v ...any)                 { r.logf(slog.LevelWarn, "%s", fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) { r.logf(slog.LevelWarn, format, v...) }
func (r raftLogger) Error(v ...any)                   { r.logf(slog.LevelError, "%s", fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any)   { r.logf(slog.LevelError, format, v...) }

// raft calls Fatal and Panic on a broken invariant of its own; there is no safe way on. Both
// panic rather than exit: nothing under pkg/ ends the process, and a panic still stops the
// member, with the stack of the broken invariant.
func (r raftLogger) Fatal(v ...any) {
	r.Error(v...)
	panic(fmt.Sprint(v...))
}
func (r raftLogger) Fatalf(format string, v ...any) {
	r.Errorf(format, v...)
	panic(fmt.Sprintf(format, v...))
}
func (r raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
