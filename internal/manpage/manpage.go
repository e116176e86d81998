package manpage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Date is the date every page carries. Bump it when a release's pages should say when they
// were made; it is a constant so that regenerating is reproducible.
var Date = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

// Write writes a page for root and for each of its available commands into dir, named as the
// command path with dashes (clusterctl-member-add.1). It changes root's tree to suit the pages:
// pass a tree built for them.
func Write(root *cobra.Command, dir string) error {
	prepare(root)
	date := Date
	return doc.GenManTree(root, &doc.GenManHeader{
		Section: "1",
		Date:    &date,
		Source:  "clusterctl",
		Manual:  "clusterctl and clusterd",
	}, dir)
}

// placeholder is a word in angle brackets (CLUSTERCTL_<FLAG>), which the markdown renderer
// would take for an HTML tag and drop.
var placeholder = regexp.MustCompile(`<([A-Za-z][A-Za-z_-]*)>`)

// prepare leaves out cobra's "Auto generated" history line, on every command (cobra reads the
// flag of each page's own command), and escapes the placeholders of each description, outside
// its indented code lines.
func prepare(c *cobra.Command) {
	c.DisableAutoGenTag = true
	lines := strings.Split(c.Long, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "    ") {
			lines[i] = placeholder.ReplaceAllString(l, `\<$1\>`)
		}
	}
	c.Long = strings.Join(lines, "\n")
	for _, sub := range c.Commands() {
		prepare(sub)
	}
}

// Stale regenerates root's pages into a temporary directory and returns the names of the pages
// in dir that differ from them, are missing, or belong to no command of root's. A page in dir
// whose name does not start with root's name is another tree's and is not looked at.
func Stale(root *cobra.Command, dir string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "manpage")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := Write(root, tmp); err != nil {
		return nil, err
	}
	want, err := pages(tmp, root.Name())
	if err != nil {
		return nil, err
	}
	have, err := pages(dir, root.Name())
	if err != nil {
		return nil, err
	}
	var stale []string
	for name, w := range want {
		if h, ok := have[name]; !ok || !bytes.Equal(h, w) {
			stale = append(stale, name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	return stale, nil
}

// pages reads the pages of the tree named root in dir: root.1 and root-*.1.
func pages(dir, root string) (map[string][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, root+"-*.1"))
	if err != nil {
		return nil, err
	}
	names = append(names, filepath.Join(dir, root+".1"))
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("man page: %w", err)
		}
		out[filepath.Base(n)] = b
	}
	return out, nil
}
