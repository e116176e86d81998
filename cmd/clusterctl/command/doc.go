// Package command is the clusterctl command line: the root command, one file per verb, and
// exit.go, the single place where an error becomes the "Error: ..." line and an exit code.
//
// Invariants:
//
//   - Nothing is sent before every argument, flag and the output format have been checked:
//     noArgs (the Args of a verb that takes no argument), a command's validate(), which is pure,
//     and the format's check for the verb's kind run first (Globals.start), and every error they
//     return exits 128.
//   - Global settings (endpoints, timeouts, output format) are resolved once, flag over
//     CLUSTERCTL_* over ETCDCTL_* over config file over the context (--context,
//     CLUSTERCTL_CONTEXT, the current one) over the defaults, when a verb or its completion
//     runs; help and the completion scripts never read them. The config verbs never read a
//     context's settings, so a broken one can be mended.
//   - The login (user, password, password file) is the one exception: it is taken whole from
//     the first place that gives any of it, the command line, else the environment, else the
//     config file, else the context (login.go), and every error names its setting as that place
//     gives it. `--user=` gives no login and drops the others.
//   - The config verbs that write the contexts file hold its writers' lock (contexts.Lock) from
//     before they read it until it is saved.
//   - The client is built by Globals.Client, which only the verbs that talk to a cluster call:
//     the offline verbs (snapshot status, snapshot restore) never fail on a client setting.
//   - The CLI imports nothing of the server (pkg/server/...); offline work is package datadir's,
//     and its typed errors are mapped to exit codes in exit.go like the client's.
//   - stdout carries only the requested output; stderr carries the one Error: line, and, for
//     member promote --wait, progress lines, and, before removing a voter from a cluster of two
//     voters, one Warning: line. No logging reaches either.
//   - --dry-run exits with the code the real command would, and prints the same stderr: a
//     refusal is returned as the same error, after the verdict is printed on stdout.
//   - No os.Exit here: Main returns the exit code and main passes it to os.Exit.
//   - Exit codes are docs/exit-codes.md; a number never changes meaning.
package command
