// Package logfmt makes clusterd's logger for --log-format=text|json. Text is slog's text
// handler, the lines clusterd has always written. JSON lines carry etcd's field names, so log
// pipelines built for etcd's zap JSON logs parse clusterd's unchanged.
//
// Invariants:
//   - A JSON line has etcd's keys for what etcd's lines carry: "level" (lower case: debug, info,
//     warn, error), "ts" (etcd's layout, 2006-01-02T15:04:05.000000Z0700), "caller" (dir/file.go:line,
//     zap's short caller), "msg", and this member's ID under "local-member-id" (WithMember).
//   - Durations are strings ("1.5s") as zap's StringDurationEncoder that etcd configures writes
//     them, not slog's integer nanoseconds.
//   - Keys of attributes are the caller's: only the record's own fields are renamed.
//   - A line that peers can make a member repeat (a refused handshake, a refused or disbelieved
//     peer call) goes through a Limiter: once per interval and key, in bounded memory.
package logfmt
