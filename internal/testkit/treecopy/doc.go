// Package treecopy copies a directory tree for tests that doctor a copy of a real data
// directory and never the original.
//
// Invariants:
//   - Copy writes only under dst, which must not exist yet; it reads src and changes nothing
//     there. Directories are made 0700 and files 0600, as members make theirs.
package treecopy
