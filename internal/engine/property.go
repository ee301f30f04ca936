package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PropertyError says that a property could not be selected from a remote
// object. Its message names the key and the property, never a value.
type PropertyError struct {
	Key      string
	Property string
	Problem  string
}

func (e *PropertyError) Error() string {
	if e.Property == "" {
		return fmt.Sprintf("remote key %q: %s", e.Key, e.Problem)
	}
	return fmt.Sprintf("remote key %q, property %q: %s", e.Key, e.Property, e.Problem)
}

// ParsePath splits a property into path segments. Segments are separated
// by dots; `\.` is a literal dot and `\\` a literal backslash.
func ParsePath(property string) ([]string, error) {
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(property); i++ {
		c := property[i]
		switch c {
		case '\\':
			if i+1 >= len(property) || (property[i+1] != '.' && property[i+1] != '\\') {
				return nil, fmt.Errorf("a backslash must be followed by . or \\ (at offset %d)", i)
			}
			i++
			cur.WriteByte(property[i])
		case '.':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	segs = append(segs, cur.String())
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("empty path segment (two dots in a row, or a leading or trailing dot)")
		}
	}
	return segs, nil
}

// node is a value on the way down a property path: a JSON value, or the
// raw bytes of a field that may or may not hold JSON.
type node struct {
	raw    []byte // set when the value came as bytes and is not parsed yet
	parsed any    // the parsed JSON value, when raw is nil
}

func rootNode(obj Object) node {
	if obj.Fields == nil {
		return node{raw: obj.Value}
	}
	m := make(map[string]any, len(obj.Fields))
	for k, v := range obj.Fields {
		m[k] = node{raw: v}
	}
	return node{parsed: m}
}

// value returns the parsed form of n, parsing raw bytes as JSON.
func (n node) value() (any, bool) {
	if n.raw == nil {
		if inner, ok := n.parsed.(node); ok {
			return inner.value()
		}
		return n.parsed, true
	}
	var v any
	if err := json.Unmarshal(n.raw, &v); err != nil {
		return nil, false
	}
	return v, true
}

// maxJSONDepth is how deep encoding/json reads nested arrays and objects.
const maxJSONDepth = 10000

// notJSON says why value could not parse n: it is not JSON, or it is JSON
// nested deeper than encoding/json reads.
func (n node) notJSON() string {
	if jsonDepth(n.raw) > maxJSONDepth {
		return fmt.Sprintf("is JSON nested more than %d levels deep, deeper than Watchword reads", maxJSONDepth)
	}
	return "is not JSON"
}

// jsonDepth is the deepest nesting of arrays and objects in raw, outside
// strings. encoding/json reports a value too deep only as a syntax error
// whose text says so, and no JSON library at hand exposes the depth; this
// scan is the smallest way to tell the two apart.
func jsonDepth(raw []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// bytes renders n as the bytes of one Secret key: strings as they are,
// everything else as JSON.
func (n node) bytes() ([]byte, error) {
	if n.raw != nil {
		return n.raw, nil
	}
	switch v := n.parsed.(type) {
	case node:
		return v.bytes()
	case string:
		return []byte(v), nil
	case map[string]any:
		plain := make(map[string]any, len(v))
		for k, e := range v {
			plain[k] = plainValue(e)
		}
		return json.Marshal(plain)
	default:
		return json.Marshal(v)
	}
}

// plainValue turns field nodes back into strings for JSON rendering.
func plainValue(v any) any {
	if n, ok := v.(node); ok {
		if n.raw != nil {
			return string(n.raw)
		}
		return plainValue(n.parsed)
	}
	return v
}

// child descends one segment.
func (n node) child(seg string) (node, bool) {
	v, ok := n.value()
	if !ok {
		return node{}, false
	}
	switch t := v.(type) {
	case map[string]any:
		c, ok := t[seg]
		if !ok {
			return node{}, false
		}
		if cn, isNode := c.(node); isNode {
			return cn, true
		}
		return node{parsed: c}, true
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(t) {
			return node{}, false
		}
		return node{parsed: t[i]}, true
	}
	return node{}, false
}

// selectProperty walks property down obj. An empty property selects the
// whole object. The whole property is first tried as one field name, so
// that names with dots need no escaping.
func selectProperty(key string, obj Object, property string) (node, error) {
	root := rootNode(obj)
	if property == "" {
		return root, nil
	}
	if c, ok := root.child(property); ok {
		return c, nil
	}
	segs, err := ParsePath(property)
	if err != nil {
		return node{}, &PropertyError{Key: key, Property: property, Problem: "invalid property path: " + err.Error()}
	}
	cur := root
	for i, seg := range segs {
		if _, ok := cur.value(); !ok {
			return node{}, &PropertyError{Key: key, Property: property,
				Problem: fmt.Sprintf("the value at %q %s, so it has no fields", strings.Join(segs[:i], "."), cur.notJSON())}
		}
		next, ok := cur.child(seg)
		if !ok {
			return node{}, &PropertyError{Key: key, Property: property, Problem: missingProblem(cur, segs[:i], seg)}
		}
		cur = next
	}
	return cur, nil
}

func missingProblem(parent node, parentPath []string, seg string) string {
	where := "the top level"
	if len(parentPath) > 0 {
		where = fmt.Sprintf("%q", strings.Join(parentPath, "."))
	}
	v, _ := parent.value()
	switch t := v.(type) {
	case map[string]any:
		return fmt.Sprintf("no field %q at %s (fields there: %s)", seg, where, fieldList(t))
	case []any:
		return fmt.Sprintf("no element %q at %s (a list of %d)", seg, where, len(t))
	default:
		return fmt.Sprintf("no field %q at %s: it is not an object", seg, where)
	}
}

// fieldList names at most ten fields, sorted; names are not secret.
func fieldList(m map[string]any) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Extract returns the bytes that one data[] entry maps to a Secret key.
// Without a property, an object that carries its value as a store keeps it
// (Value, as an AWS secret's JSON text) is that value exactly, even when
// the provider also gives its fields.
func Extract(key string, obj Object, property string) ([]byte, error) {
	if property == "" && obj.Value != nil {
		return obj.Value, nil
	}
	n, err := selectProperty(key, obj, property)
	if err != nil {
		return nil, err
	}
	return n.bytes()
}

// ExtractAll returns every field of the object (or of the nested object
// that property selects), as dataFrom maps them to Secret keys.
func ExtractAll(key string, obj Object, property string) (map[string][]byte, error) {
	n, err := selectProperty(key, obj, property)
	if err != nil {
		return nil, err
	}
	v, ok := n.value()
	if !ok {
		return nil, &PropertyError{Key: key, Property: property, Problem: "the value " + n.notJSON() + ", so it cannot be expanded into keys; use data[] with a secretKey instead"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &PropertyError{Key: key, Property: property, Problem: "the value is not a JSON object, so it cannot be expanded into keys"}
	}
	out := make(map[string][]byte, len(m))
	for k, e := range m {
		if !validSecretKey(k) {
			return nil, &PropertyError{Key: key, Property: property, Problem: fmt.Sprintf("field %q is not a valid Secret key (allowed: letters, digits, '-', '_', '.')", k)}
		}
		var child node
		if cn, isNode := e.(node); isNode {
			child = cn
		} else {
			child = node{parsed: e}
		}
		b, err := child.bytes()
		if err != nil {
			return nil, &PropertyError{Key: key, Property: property, Problem: fmt.Sprintf("field %q cannot be rendered: %v", k, err)}
		}
		out[k] = b
	}
	return out, nil
}

func validSecretKey(k string) bool {
	if k == "" || len(k) > 253 || k == "." || k == ".." {
		return false
	}
	for _, c := range k {
		if !(c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}
