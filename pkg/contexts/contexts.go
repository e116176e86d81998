package contexts

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/clusterctl/clusterctl/pkg/fsync"
)

// Keys are the settings a context holds: the global flags' names, as in a --config-file.
var Keys = []string{
	"endpoints", "cacert", "cert", "key", "user", "password", "password-file",
	"dial-timeout", "command-timeout", "insecure-skip-tls-verify", "insecure-transport",
}

// ErrNoPath is Path's answer when none of its variables is set.
var ErrNoPath = errors.New("no contexts file: set CLUSTERCTL_CONFIG, XDG_CONFIG_HOME or HOME")

// Path is where the contexts file is: $CLUSTERCTL_CONFIG, else
// $XDG_CONFIG_HOME/clusterctl/config.yaml, else ~/.config/clusterctl/config.yaml.
func Path(getenv func(string) string) (string, error) {
	if p := getenv("CLUSTERCTL_CONFIG"); p != "" {
		return p, nil
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "clusterctl", "config.yaml"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", ErrNoPath
	}
	return filepath.Join(home, ".config", "clusterctl", "config.yaml"), nil
}

// Context is one named set of settings: Settings maps a key of Keys to a string, or for
// endpoints to a list of strings.
type Context struct {
	Name     string
	Settings map[string]any
}

// Endpoints are the context's endpoints, split at commas.
func (c Context) Endpoints() []string {
	var out []string
	switch v := c.Settings["endpoints"].(type) {
	case string:
		out = append(out, strings.Split(v, ",")...)
	case []string:
		for _, e := range v {
			out = append(out, strings.Split(e, ",")...)
		}
	}
	return out
}

// TLS reports whether the context reaches its cluster over TLS: a TLS file, an https://
// endpoint, or insecure-transport false.
func (c Context) TLS() bool {
	for _, k := range []string{"cacert", "cert", "key"} {
		if c.Settings[k] != nil && c.Settings[k] != "" {
			return true
		}
	}
	if c.Settings["insecure-transport"] == "false" || c.Settings["insecure-skip-tls-verify"] == "true" {
		return true
	}
	for _, e := range c.Endpoints() {
		if strings.HasPrefix(e, "https://") {
			return true
		}
	}
	return false
}

// User is the context's user name, without a password given as name:password.
func (c Context) User() string {
	u, _ := c.Settings["user"].(string)
	name, _, _ := strings.Cut(u, ":")
	return name
}

// holdsPassword reports whether the context holds a password itself.
func (c Context) holdsPassword() bool {
	pw, _ := c.Settings["password"].(string)
	u, _ := c.Settings["user"].(string)
	return pw != "" || strings.Contains(u, ":")
}

// File is the contexts file as read, to be changed and saved.
type File struct {
	Path string
	// doc is the whole YAML document parsed from the file; its root is a mapping.
	doc *yaml.Node
	// current and list are what the file holds, decoded once on load and after each change.
	current string
	list    []Context
}

// UnknownContextError names a context that is not in the file, and those that are.
type UnknownContextError struct {
	Name, Path string
	Known      []string
}

func (e *UnknownContextError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("context %q not found in %s (known: %s)", e.Name, e.Path, known)
}

// Load reads the file at path; a file that does not exist is an empty one. It refuses a file
// that is not a YAML mapping with a contexts list, and one that holds a password and is readable
// by its group or others.
func Load(path string) (*File, error) {
	f := &File{Path: path}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("contexts file %s: %w", path, err)
	}
	if err := f.decodeDoc(b); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(f.list, Context.holdsPassword) {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("contexts file %s: %w", path, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("contexts file %s holds a password and is readable by others (mode %04o): run chmod 600 %s", path, fi.Mode().Perm(), path)
		}
	}
	return f, nil
}

// decodeDoc parses raw as YAML into doc, and decodes the current context and the list from it.
func (f *File) decodeDoc(raw []byte) error {
	f.doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("contexts file %s: %v", f.Path, oneLine(err.Error()))
	}
	if len(doc.Content) > 0 {
		if doc.Content[0].Kind != yaml.MappingNode {
			return fmt.Errorf("contexts file %s: not a YAML mapping", f.Path)
		}
		f.doc = &doc
	}
	if l := f.root().lookup("contexts"); l != nil && l.Kind != yaml.SequenceNode {
		return fmt.Errorf("contexts file %s: contexts is not a list", f.Path)
	}
	return f.refresh()
}

// refresh decodes the current context and the list from doc.
func (f *File) refresh() error {
	f.current = ""
	if n := f.root().lookup("current-context"); n != nil {
		f.current = n.Value
	}
	nodes := f.contextNodes()
	list := make([]Context, 0, len(nodes))
	seen := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		c, err := decode(n)
		if err != nil {
			return fmt.Errorf("contexts file %s: context %d: %v", f.Path, i+1, err)
		}
		if seen[c.Name] {
			return fmt.Errorf("contexts file %s: context %q is there twice", f.Path, c.Name)
		}
		seen[c.Name] = true
		list = append(list, c)
	}
	f.list = list
	return nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// node is a YAML node with the lookups this package needs.
type node struct{ *yaml.Node }

func (f *File) root() node { return node{f.doc.Content[0]} }

// lookup is the value of key in a mapping, nil when absent.
func (n node) lookup(key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// set gives key the value v in a mapping, in place when the key is there, else at the end.
func (n node) set(key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// Current is the current context's name, "" when none is set.
func (f *File) Current() string { return f.current }

// contextNodes are the mappings of the contexts list, in the file's order.
func (f *File) contextNodes() []node {
	l := f.root().lookup("contexts")
	if l == nil {
		return nil
	}
	out := make([]node, 0, len(l.Content))
	for _, c := range l.Content {
		out = append(out, node{c})
	}
	return out
}

// Contexts are the file's contexts, in its order; the error is always nil (Load checked them),
// kept for the callers that check it.
func (f *File) Contexts() ([]Context, error) {
	out := make([]Context, len(f.list))
	for i, c := range f.list {
		out[i] = Context{Name: c.Name, Settings: maps.Clone(c.Settings)}
	}
	return out, nil
}

func decode(n node) (Context, error) {
	if n.Kind != yaml.MappingNode {
		return Context{}, errors.New("not a mapping")
	}
	c := Context{Settings: map[string]any{}}
	if name := n.lookup("name"); name != nil && name.Kind == yaml.ScalarNode {
		c.Name = name.Value
	}
	if c.Name == "" {
		return Context{}, errors.New("no name")
	}
	for _, k := range Keys {
		v := n.lookup(k)
		switch {
		case v == nil:
		case v.Kind == yaml.ScalarNode:
			c.Settings[k] = v.Value
		case k == "endpoints" && v.Kind == yaml.SequenceNode:
			var eps []string
			if err := v.Decode(&eps); err != nil {
				return Context{}, fmt.Errorf("%s %s: %v", c.Name, k, err)
			}
			c.Settings[k] = eps
		default:
			return Context{}, fmt.Errorf("%s: %s is not a single value", c.Name, k)
		}
	}
	return c, nil
}

// Names are the contexts' names, in the file's order.
func (f *File) Names() []string {
	out := make([]string, len(f.list))
	for i, c := range f.list {
		out[i] = c.Name
	}
	return out
}

// Get is the context called name, or an *UnknownContextError.
func (f *File) Get(name string) (Context, error) {
	for _, c := range f.list {
		if c.Name == name {
			return Context{Name: c.Name, Settings: maps.Clone(c.Settings)}, nil
		}
	}
	return Context{}, &UnknownContextError{Name: name, Path: f.Path, Known: f.Names()}
}

// Set creates the context called name, or updates it: the keys of settings get their values
// (a string, or a list of strings), every other key stays as it was. It reports whether the
// context is new.
func (f *File) Set(name string, settings map[string]any) (created bool, err error) {
	var ctx node
	for _, n := range f.contextNodes() {
		if v := n.lookup("name"); v != nil && v.Value == name {
			ctx = n
		}
	}
	if ctx.Node == nil {
		ctx = node{&yaml.Node{Kind: yaml.MappingNode}}
		ctx.set("name", scalar(name))
		l := f.root().lookup("contexts")
		if l == nil {
			l = &yaml.Node{Kind: yaml.SequenceNode}
			f.root().set("contexts", l)
		}
		l.Content = append(l.Content, ctx.Node)
		created = true
	}
	for _, k := range Keys {
		switch v := settings[k].(type) {
		case string:
			ctx.set(k, scalar(v))
		case []string:
			seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, e := range v {
				seq.Content = append(seq.Content, scalar(e))
			}
			ctx.set(k, seq)
		}
	}
	return created, f.refresh()
}

// Use makes name the current context; it must exist.
func (f *File) Use(name string) error {
	if _, err := f.Get(name); err != nil {
		return err
	}
	f.root().set("current-context", scalar(name))
	return f.refresh()
}

// Delete removes the context called name, and the current context when it was that one.
func (f *File) Delete(name string) error {
	if _, err := f.Get(name); err != nil {
		return err
	}
	l := f.root().lookup("contexts")
	l.Content = slices.DeleteFunc(l.Content, func(n *yaml.Node) bool {
		v := node{n}.lookup("name")
		return v != nil && v.Value == name
	})
	if f.Current() == name {
		root := f.root()
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "current-context" {
				root.Content = slices.Delete(root.Content, i, i+2)
				break
			}
		}
	}
	return f.refresh()
}

// Save writes the file atomically with mode 0600, creating its directory (0700) when needed;
// its error is the file system's, unwrapped.
func (f *File) Save() error {
	b, err := f.encode(f.doc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return err
	}
	return fsync.WriteFile(f.Path, b, 0o600)
}

func (f *File) encode(doc *yaml.Node) ([]byte, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("contexts file %s: %w", f.Path, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// Masked is the file as YAML with every password replaced by "REDACTED", in a context's
// password or after the colon of its user; the file itself is unchanged.
func (f *File) Masked() ([]byte, error) {
	b, err := f.encode(f.doc)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	copied := &File{Path: f.Path, doc: &doc}
	if len(doc.Content) == 0 {
		return b, nil
	}
	for _, n := range copied.contextNodes() {
		if n.Kind != yaml.MappingNode {
			continue
		}
		if pw := n.lookup("password"); pw != nil && pw.Value != "" {
			n.set("password", scalar(redacted))
		}
		if u := n.lookup("user"); u != nil {
			if name, _, ok := strings.Cut(u.Value, ":"); ok {
				n.set("user", scalar(name+":"+redacted))
			}
		}
	}
	return copied.encode(&doc)
}

const redacted = "REDACTED"
