// Package observe runs clusterd as SREs do, from outside: real member processes scraped by a
// real Prometheus with the shipped alert rules, and started with their own systemd notify
// socket.
//
// The tests carry the build tag metricswire and run only with it (go test -tags metricswire
// ./tests/observe): they need the composition root to build each member's metrics, serve
// /metrics on --listen-metrics-urls and send READY=1 and STOPPING=1 (pkg/server/observe.go).
// Once that is wired, the tag comes off.
package observe
