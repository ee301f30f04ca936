package cli

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// secretKeyName is what a key of a SecretKeySelector may be.
var secretKeyName = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// webhook carries ESO's webhook block to Watchword's, which has the same
// name and, for reads, the same fields. What differs: an entry of ESO's
// secrets names a whole Secret, Watchword's one key of it, so each key the
// templates use ({{ .auth.token }}, {{ index .auth "api-key" }}) becomes
// an entry; the templates have no .remoteRef.property (the property is
// selected from the answer's fields); and every value a url inserts is
// percent-encoded. ESO's NTLM auth has no counterpart.
func (c *converter) webhook(dst, b map[string]any, path string) bool {
	out := map[string]any{}
	rawURL := takeString(b, "url")
	if !strings.HasPrefix(rawURL, "https://") && !strings.HasPrefix(rawURL, "http://") {
		c.drop(path+".url", "unset or not an http(s) URL: the store is not converted")
		return false
	}
	out["url"] = rawURL
	templates := map[string]string{path + ".url": rawURL}
	switch m := strings.ToUpper(takeString(b, "method")); m {
	case "", "GET":
	case "POST":
		out["method"] = "POST"
	default:
		c.drop(path+".method", fmt.Sprintf("Watchword reads with GET or POST, not %s: the store is not converted", m))
		return false
	}
	if body := takeString(b, "body"); body != "" {
		if out["method"] == nil {
			c.drop(path+".body", "a GET request carries no body in Watchword: not carried (set method POST if the API reads one)")
		} else {
			out["body"] = body
			templates[path+".body"] = body
		}
	}
	if h := takeMap(b, "headers"); len(h) > 0 {
		headers := map[string]any{}
		for k, v := range h {
			s, _ := v.(string)
			headers[k] = s
			templates[fmt.Sprintf("%s.headers[%s]", path, k)] = s
		}
		out["headers"] = headers
	}
	if t := takeString(b, "timeout"); t != "" {
		if d, err := time.ParseDuration(t); err != nil || d <= 0 || d > engine.CallTimeout {
			c.drop(path+".timeout", fmt.Sprintf("not a duration of at most %s: not carried, the default 10s applies", engine.CallTimeout))
		} else {
			out["timeout"] = t
		}
	}
	if r := takeMap(b, "result"); r != nil {
		if jp := takeString(r, "jsonPath"); jp != "" {
			out["result"] = map[string]any{"jsonPath": jp}
		}
		c.leftovers(r, path+".result")
	}
	if ca, ok := take(b, "caBundle"); ok {
		out["caBundle"] = ca
	}
	if ca := takeMap(b, "caProvider"); ca != nil {
		out["caProvider"] = c.carry(ca, reflect.TypeFor[v1alpha1.CAProvider](), path+".caProvider")
	}
	if _, ok := take(b, "auth"); ok {
		c.drop(path+".auth", "Watchword's webhook store has no NTLM auth: send credentials in headers from secrets")
	}
	used := c.webhookTemplates(templates)
	if secrets := c.webhookSecrets(takeList(b, "secrets"), used, path+".secrets"); len(secrets) > 0 {
		out["secrets"] = secrets
	}
	c.leftovers(b, path)
	dst["webhook"] = out
	return true
}

// webhookTemplates parses ESO's templates and returns, by the name of
// their first field, the keys they use of it: .auth.token is auth→token.
// It reports what Watchword's templates do not have.
func (c *converter) webhookTemplates(templates map[string]string) map[string][]string {
	used := map[string][]string{}
	for _, p := range slices.Sorted(mapKeys(templates)) {
		text := templates[p]
		t, err := template.New(p).Funcs(engine.FuncMap()).Parse(text)
		if err != nil {
			c.drop(p, "does not parse with Watchword's template functions (docs/templates.md): rewrite it")
			continue
		}
		walkTemplate(t.Root, func(name, key string) {
			if !slices.Contains(used[name], key) {
				used[name] = append(used[name], key)
			}
		})
		if strings.Contains(text, ".remoteRef.property") {
			c.drop(p, "Watchword's templates have no .remoteRef.property: the property is selected from the fields of the answer (set result.jsonPath to the object that holds them); rewrite the template")
		}
		if p == mapFirst(templates, ".url") && strings.Contains(text, "{{") && (strings.Contains(text, "urlquery") || strings.Contains(text, "urlencode")) {
			c.note(p, "Watchword percent-encodes every value a url template inserts: remove urlquery, or the value is encoded twice")
		}
	}
	return used
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// mapFirst is the key of m that ends with suffix.
func mapFirst(m map[string]string, suffix string) string {
	for k := range m {
		if strings.HasSuffix(k, suffix) {
			return k
		}
	}
	return ""
}

// walkTemplate calls use for every NAME.KEY a template reads: a field
// .NAME.KEY, or index .NAME "KEY".
func walkTemplate(n parse.Node, use func(name, key string)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			walkTemplate(x, use)
		}
	case *parse.ActionNode:
		walkTemplate(n.Pipe, use)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, cmd := range n.Cmds {
			walkTemplate(cmd, use)
		}
	case *parse.CommandNode:
		if len(n.Args) >= 3 {
			if id, ok := n.Args[0].(*parse.IdentifierNode); ok && id.Ident == "index" {
				f, fok := n.Args[1].(*parse.FieldNode)
				s, sok := n.Args[2].(*parse.StringNode)
				if fok && sok && len(f.Ident) == 1 {
					use(f.Ident[0], s.Text)
				}
			}
		}
		for _, a := range n.Args {
			walkTemplate(a, use)
		}
	case *parse.FieldNode:
		if len(n.Ident) >= 2 {
			use(n.Ident[0], n.Ident[1])
		}
	case *parse.IfNode:
		walkTemplate(n.Pipe, use)
		walkTemplate(n.List, use)
		walkTemplate(n.ElseList, use)
	case *parse.RangeNode:
		walkTemplate(n.Pipe, use)
		walkTemplate(n.List, use)
		walkTemplate(n.ElseList, use)
	case *parse.WithNode:
		walkTemplate(n.Pipe, use)
		walkTemplate(n.List, use)
		walkTemplate(n.ElseList, use)
	}
}

// webhookSecrets turns ESO's entries (a name and a whole Secret) into one
// entry per key the templates use.
func (c *converter) webhookSecrets(list []any, used map[string][]string, path string) []any {
	var out []any
	for i, e := range list {
		ep := pathIndex(path, i)
		entry, _ := e.(map[string]any)
		name := takeString(entry, "name")
		ref := takeMap(entry, "secretRef")
		secret := takeString(ref, "name")
		ns := takeString(ref, "namespace")
		take(ref, "key")
		c.leftovers(ref, ep+".secretRef")
		c.leftovers(entry, ep)
		if name == "" || secret == "" {
			c.drop(ep, "no name or no secretRef.name: not carried")
			continue
		}
		keys := used[name]
		if len(keys) == 0 {
			c.drop(ep, fmt.Sprintf("no template reads a key of %q as .%s.KEY or index .%s \"KEY\": not carried (Watchword reads only the keys a store names)", name, name, name))
			continue
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !secretKeyName.MatchString(k) {
				c.drop(ep, fmt.Sprintf("key %q of %q is not a Secret key: not carried", k, name))
				continue
			}
			sel := map[string]any{"name": secret, "key": k}
			set(sel, "namespace", ns)
			out = append(out, map[string]any{"name": name, "secretRef": sel})
		}
	}
	return out
}
