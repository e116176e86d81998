//go:build !crashpoints

package crashpoint

// Hit is a crash point; without the crashpoints tag it does nothing.
func Hit(string) {}

// HitIf is a crash point that counts only when cond holds; without the tag it does nothing.
func HitIf(bool, string) {}

// Armed reports whether this build can arm crash points: false without the tag.
const Armed = false
