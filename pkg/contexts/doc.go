// Package contexts reads and writes clusterctl's contexts file: named sets of the global
// settings (endpoints, TLS files, user, timeouts) and the current one, as kubectl's contexts.
//
// The file is YAML:
//
//	current-context: prod
//	contexts:
//	  - name: prod
//	    endpoints: [https://10.0.0.1:2379, https://10.0.0.2:2379]
//	    cacert: /etc/clusterctl/prod/ca.crt
//
// Invariants:
//
//   - The file is edited as a YAML document, never re-encoded from a struct: every key this
//     package does not know, at the top or in a context, and every comment, stays as it was.
//   - A write is atomic: the new content goes to a temporary file beside it, synced, renamed over
//     it, and the directory synced (pkg/fsync); a reader sees the old file or the new one, never
//     half of either. The file is written with mode 0600 whatever it had.
//   - Writers are serialized: a writer takes Lock (an flock on the file's name plus ".lock",
//     beside it), then reads the file, changes it and saves it, and only then lets go, so that
//     writers at once each start from the others' result and no change is lost. Readers take no
//     lock: the rename shows them one whole file.
//   - Loading is linear in the file's size: every context is decoded once, on load and after a
//     change, duplicates found through a set; Get and Contexts hand out copies.
//   - A file that holds a password (a context's password, or a user given as name:password) and
//     that its group or others may read is refused on load, in one line that says how to fix it.
//   - A context holds only Keys; other keys in it are kept but never read.
//   - Nothing here reads flags or the environment besides Path's variables, nor prints.
package contexts
