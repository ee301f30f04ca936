package webhook

import (
	"fmt"
	"net/textproto"
	"net/url"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"k8s.io/client-go/util/jsonpath"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// config is a store's spec, checked and compiled once per client.
type config struct {
	read          *request
	put, del      *request
	valuePath     *jsonpath.JSONPath // nil: the whole answer
	versionPath   *jsonpath.JSONPath // nil: versionHeader or none
	versionHeader string
	ownerPath     *jsonpath.JSONPath // nil: the API keeps no marker
	timeout       time.Duration
	maxBytes      int64
}

// request is one request made of templates.
type request struct {
	// field is where it is in the spec, such as "webhook.push.put", for
	// messages.
	field   string
	method  string
	url     *template.Template
	headers map[string]*template.Template
	body    *template.Template
	// host is the scheme and host of the url when the template fixes
	// them (no action before the path), for messages; empty otherwise.
	host string
	// usesVersion tells that the url inserts .remoteRef.version.
	usesVersion bool
}

// compile checks spec and compiles its templates and JSONPaths. Every
// error wraps ErrInvalidConfig and names the field to fix.
func compile(spec *v1alpha1.WebhookProvider) (*config, error) {
	cfg := &config{timeout: defaultTimeout, maxBytes: defaultMaxBytes}
	if spec.Timeout != nil {
		if d := spec.Timeout.Duration; d <= 0 || d > maxTimeout {
			return nil, invalid("webhook.timeout must be more than 0 and at most %s", maxTimeout)
		}
		cfg.timeout = spec.Timeout.Duration
	}
	if n := spec.MaxResponseBytes; n != 0 {
		if n < 1024 || n > maxMaxBytes {
			return nil, invalid("webhook.maxResponseBytes must be from 1024 to %d", maxMaxBytes)
		}
		cfg.maxBytes = n
	}
	if len(spec.CABundle) > 0 && spec.CAProvider != nil {
		return nil, invalid("webhook: set caBundle or caProvider, not both")
	}
	seen := map[string]bool{}
	for i, s := range spec.Secrets {
		switch {
		case !identifier(s.Name):
			return nil, invalid("webhook.secrets[%d].name %q must be letters, digits and '_', not starting with a digit: templates use it as {{ .%s.KEY }}", i, s.Name, "NAME")
		case reserved[s.Name]:
			return nil, invalid("webhook.secrets[%d].name %q is a name of the templates' own data (remoteRef, fields, owner, version); choose another", i, s.Name)
		case seen[s.Name+"/"+s.SecretRef.Key]:
			return nil, invalid("webhook.secrets[%d]: another entry named %q has the Secret key %q already", i, s.Name, s.SecretRef.Key)
		}
		seen[s.Name+"/"+s.SecretRef.Key] = true
	}
	method := spec.Method
	if method == "" {
		method = "GET"
	}
	if method != "GET" && method != "POST" {
		return nil, invalid("webhook.method must be GET or POST")
	}
	if method == "GET" && spec.Body != "" {
		return nil, invalid("webhook.body needs method POST: a GET request carries no body")
	}
	var err error
	if cfg.read, err = newRequest("webhook", method, spec.URL, spec.Headers, spec.Body, nil); err != nil {
		return nil, err
	}
	if r := spec.Result; r != nil {
		if r.VersionJSONPath != "" && r.VersionHeader != "" {
			return nil, invalid("webhook.result: set versionJSONPath or versionHeader, not both")
		}
		if r.VersionHeader != "" && !headerName.MatchString(r.VersionHeader) {
			return nil, invalid("webhook.result.versionHeader %q is not a header name", r.VersionHeader)
		}
		cfg.versionHeader = canonical(r.VersionHeader)
		if cfg.valuePath, err = newPath("webhook.result.jsonPath", r.JSONPath); err != nil {
			return nil, err
		}
		if cfg.versionPath, err = newPath("webhook.result.versionJSONPath", r.VersionJSONPath); err != nil {
			return nil, err
		}
	}
	if p := spec.Push; p != nil {
		if err = cfg.compilePush(spec, p); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func (cfg *config) compilePush(spec *v1alpha1.WebhookProvider, p *v1alpha1.WebhookPush) error {
	var err error
	switch p.Put.Method {
	case "PUT", "POST", "PATCH":
	default:
		return invalid("webhook.push.put.method must be PUT, POST or PATCH")
	}
	if cfg.put, err = newRequest("webhook.push.put", p.Put.Method, p.Put.URL, p.Put.Headers, p.Put.Body, spec.Headers); err != nil {
		return err
	}
	if d := p.Delete; d != nil {
		if d.Method != "DELETE" && d.Method != "POST" {
			return invalid("webhook.push.delete.method must be DELETE or POST")
		}
		if cfg.del, err = newRequest("webhook.push.delete", d.Method, d.URL, d.Headers, d.Body, spec.Headers); err != nil {
			return err
		}
	}
	cfg.ownerPath, err = newPath("webhook.push.ownerJSONPath", p.OwnerJSONPath)
	return err
}

// newRequest compiles the templates of a request; inherited are the
// store's headers, sent unless the request names them itself.
func newRequest(field, method, rawURL string, headers map[string]string, body string, inherited map[string]string) (*request, error) {
	r := &request{field: field, method: method, headers: map[string]*template.Template{}}
	if !strings.HasPrefix(rawURL, "https://") && !strings.HasPrefix(rawURL, "http://") {
		return nil, invalid("%s.url must start with https:// (or http://)", field)
	}
	var err error
	if r.url, err = parseTemplate(field+".url", rawURL, true); err != nil {
		return nil, err
	}
	r.usesVersion = strings.Contains(rawURL, ".remoteRef.version")
	r.host = fixedHost(rawURL)
	if body != "" {
		if r.body, err = parseTemplate(field+".body", body, false); err != nil {
			return nil, err
		}
	}
	all := map[string]string{}
	for k, v := range inherited {
		all[canonical(k)] = v
	}
	for k, v := range headers {
		all[canonical(k)] = v
	}
	for k, v := range all {
		if !headerName.MatchString(k) {
			return nil, invalid("%s.headers: %q is not a header name", field, k)
		}
		if r.headers[k], err = parseTemplate(fmt.Sprintf("%s.headers[%s]", field, k), v, false); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// canonical is the canonical form of a header name, so that two spellings
// of one header are one entry.
func canonical(name string) string { return textproto.CanonicalMIMEHeaderKey(name) }

// parseTemplate parses a template with Watchword's template functions.
// In a url, the output of every action is escaped (escapeURL).
func parseTemplate(name, text string, inURL bool) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(engine.FuncMap()).
		Funcs(template.FuncMap{escapeFunc: escapeURL}).Parse(text)
	if err != nil {
		return nil, invalid("%s does not parse: %s", name, strings.TrimPrefix(err.Error(), "template: "+name+":"))
	}
	if inURL {
		escapeActions(t.Tree, t.Root)
	}
	return t, nil
}

// escapeFunc is the name under which escapeURL is appended to each
// action of a url template; it is not one of the documented functions.
const escapeFunc = "_webhookEscape"

// escapeActions appends escapeURL to the pipeline of every action that
// prints, as html/template appends its escapers: whatever the functions
// of an action make of a value, what reaches the URL is escaped.
func escapeActions(tr *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			escapeActions(tr, c)
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) > 0 {
			return
		}
		id := parse.NewIdentifier(escapeFunc).SetTree(tr).SetPos(n.Pos)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
	case *parse.IfNode:
		escapeActions(tr, n.List)
		escapeActions(tr, n.ElseList)
	case *parse.RangeNode:
		escapeActions(tr, n.List)
		escapeActions(tr, n.ElseList)
	case *parse.WithNode:
		escapeActions(tr, n.List)
		escapeActions(tr, n.ElseList)
	}
}

// fixedHost is the scheme and host of a url template whose host holds no
// action, such as "https://secrets.example.com"; empty otherwise.
func fixedHost(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if strings.Contains(host, "{{") || host == "" {
		return ""
	}
	u := url.URL{Scheme: scheme, Host: host}
	if strings.Contains(u.Host, "@") { // user info is a credential
		return ""
	}
	return u.String()
}

// newPath compiles a JSONPath, such as $.data or {.data}; nil for "".
func newPath(field, expr string) (*jsonpath.JSONPath, error) {
	if expr == "" {
		return nil, nil
	}
	text := expr
	if !strings.HasPrefix(text, "{") {
		text = "{" + text + "}"
	}
	p := jsonpath.New(field).AllowMissingKeys(true)
	if err := p.Parse(text); err != nil {
		return nil, invalid("%s %q does not parse as a JSONPath", field, expr)
	}
	return p, nil
}

func identifier(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrInvalidConfig}, args...)...)
}

// remoteNameInvalid is a key that no URL of this store may carry.
func remoteNameInvalid(key string) error {
	return failure.Terminalf(failure.RemoteNameInvalid,
		"remote key %q has a '.' or '..' segment, which would leave the path the store's url gives; change the remote key", key)
}
