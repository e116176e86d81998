package printer

import (
	"io"
	"strings"
)

// ContextRow is one context of config get-contexts, with its JSON (docs/output.md): never rename
// a field.
type ContextRow struct {
	Name      string       `json:"name"`
	Current   bool         `json:"current"`
	Endpoints list[string] `json:"endpoints"`
	TLS       bool         `json:"tls"`
	User      string       `json:"user"`
}

var contextRowColumns = []column[ContextRow]{
	{name: "CURRENT", value: func(r ContextRow) string {
		if r.Current {
			return "*"
		}
		return ""
	}},
	{name: "NAME", value: func(r ContextRow) string { return r.Name }},
	{name: "ENDPOINTS", value: func(r ContextRow) string { return strings.Join(r.Endpoints, ",") }},
	{name: "TLS", value: func(r ContextRow) string {
		if r.TLS {
			return "yes"
		}
		return "no"
	}},
	{name: "USER", value: func(r ContextRow) string { return r.User }},
}

// Contexts prints config get-contexts: a line (simple) or a row (table) a context, in the file's
// order; in json an array.
func (p Printer) Contexts(w io.Writer, rs []ContextRow) error {
	return printRows(p, w, ConfigContexts, list[ContextRow](rs), contextRowColumns, rs)
}

// ConfigText prints what the other config verbs print, a line or the file, as it is.
func (p Printer) ConfigText(w io.Writer, s string) error {
	if err := p.Check(ConfigText); err != nil {
		return err
	}
	_, err := io.WriteString(w, s)
	return err
}
