package contexts

import (
	"bytes"
	"strings"
)

// scan reads a contexts file written in the plain block form Save writes (and most people
// write): top-level "key: value" lines, a contexts list whose items are "key: value" lines,
// values plain or single-quoted scalars or, for a context's endpoints, a flow list of them; blank lines and
// whole-line comments anywhere; printable ASCII alone. It is what every command pays to load the file, ten times faster
// than the YAML parser. ok is false for anything else (quotes, anchors, nested blocks, tabs, a
// context without a name or twice, a key twice...): the caller then parses the file as YAML,
// which reads it, or says what is wrong with it, as before.
func scan(b []byte) (current string, list []Context, ok bool) {
	const (
		top = iota
		inList
	)
	// Printable ASCII alone: YAML refuses control characters, and reads some non-ASCII ones
	// (U+0085, U+2028) as line breaks.
	for _, c := range b {
		if (c < ' ' && c != '\n') || c > '~' {
			return "", nil, false
		}
	}
	state, dash := top, -1
	var cur map[string]any
	seenTop := map[string]bool{}
	names := map[string]bool{}
	end := func() bool {
		if cur == nil {
			return true
		}
		name, _ := cur["name"].(string)
		if name == "" || names[name] {
			return false
		}
		names[name] = true
		c := Context{Name: name, Settings: make(map[string]any, len(cur))}
		for _, k := range Keys {
			if v, ok := cur[k]; ok {
				c.Settings[k] = v
			}
		}
		list = append(list, c)
		cur = nil
		return true
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		s := string(line)
		trimmed := strings.TrimLeft(s, " ")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		indent := len(s) - len(trimmed)
		switch {
		case state == inList && strings.HasPrefix(trimmed, "- ") && (dash < 0 || indent == dash):
			if !end() {
				return "", nil, false
			}
			dash, cur = indent, map[string]any{}
			if !contextLine(cur, strings.TrimLeft(trimmed[2:], " ")) {
				return "", nil, false
			}
		case indent == 0:
			// contexts: with no item is YAML's null, not a list.
			if !end() || (state == inList && dash < 0) {
				return "", nil, false
			}
			key, value, ok := keyValue(trimmed)
			if !ok || seenTop[key] {
				return "", nil, false
			}
			seenTop[key] = true
			state = top
			v, ok := scalar1(value)
			switch {
			case key == "contexts" && value == "":
				state = inList
			case key == "contexts" || !ok:
				return "", nil, false
			case key == "current-context":
				current = v
			}
		case state == inList && cur != nil && indent == dash+2:
			if !contextLine(cur, trimmed) {
				return "", nil, false
			}
		default:
			return "", nil, false
		}
	}
	if !end() || (state == inList && dash < 0) {
		return "", nil, false
	}
	return current, list, true
}

// contextLine adds one "key: value" line of a context to cur; false for a line scan does not
// read, or a key already there.
func contextLine(cur map[string]any, line string) bool {
	key, value, ok := keyValue(line)
	if _, twice := cur[key]; !ok || twice {
		return false
	}
	if inner, isList := strings.CutPrefix(value, "["); isList {
		inner, closed := strings.CutSuffix(inner, "]")
		if !closed || key != "endpoints" {
			return false
		}
		items := []string{}
		if strings.TrimSpace(inner) != "" {
			for _, it := range strings.Split(inner, ",") {
				it, ok := scalar1(strings.TrimSpace(it))
				if !ok || strings.ContainsAny(it, "[]{}") {
					return false
				}
				items = append(items, it)
			}
		}
		cur[key] = items
		return true
	}
	v, ok := scalar1(value)
	if !ok {
		return false
	}
	cur[key] = v
	return true
}

// scalar1 is the value of s, a plain scalar or one in single quotes (” standing for ').
func scalar1(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		inner := s[1 : len(s)-1]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return "", false
		}
		return strings.ReplaceAll(inner, "''", "'"), true
	}
	return s, plain(s)
}

// keyValue splits "key: value" with a key of letters, digits, '-', '_' and '.'; the value is
// trimmed, "" when the line is "key:".
func keyValue(line string) (key, value string, ok bool) {
	key, value, found := strings.Cut(line, ":")
	if !found || key == "" || strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
		return "", "", false
	}
	if value != "" && value[0] != ' ' {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}

// plain reports whether s is a YAML plain scalar whose value is s itself: not empty, no
// indicator first, no ": " or " #" inside, no ':' last.
func plain(s string) bool {
	return s != "" && !strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.HasSuffix(s, ":")
}
