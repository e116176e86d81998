// Package manpage writes the man pages of a cobra command tree (github.com/spf13/cobra/doc)
// and tells whether the committed ones are out of date.
//
// Invariants:
//   - Only the generator (scripts/genman) and tests import it: neither binary links cobra/doc
//     and its markdown renderer.
//   - The pages carry a fixed date, not the time they were made, so that generating them again
//     from unchanged definitions changes no byte and a test can compare.
//   - Placeholders in angle brackets survive (CLUSTERCTL_<FLAG>); the renderer would drop them
//     as HTML tags.
package manpage
