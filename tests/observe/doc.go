// Package observe runs clusterd as SREs do, from outside: real member processes scraped by a
// real Prometheus with the shipped alert rules, and started with their own systemd notify
// socket.
//
// They rest on the composition root building each member's metrics, serving /metrics on
// --listen-metrics-urls and sending READY=1 and STOPPING=1 (pkg/server/observe.go).
package observe
