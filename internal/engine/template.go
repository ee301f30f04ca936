package engine

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/yaml"
)

// TemplateError says which template failed and why. Its message never
// holds a rendered or fetched value.
type TemplateError struct {
	// Kind is "label" or "annotation" for a template of the Secret's
	// metadata, and empty otherwise.
	Kind string
	// Name is the Secret key, label key or annotation key being rendered,
	// or the ConfigMap item.
	Name    string
	Problem string
}

func (e *TemplateError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("template %s %q: %s", e.Kind, e.Name, e.Problem)
	}
	return fmt.Sprintf("template %q: %s", e.Name, e.Problem)
}

// maxRendered bounds the output of one template, so that a template cannot
// exhaust memory or exceed what a Secret can hold.
const maxRendered = 1 << 20

// FuncMap is the function set available to templates: the hermetic
// functions of the sprig library (github.com/Masterminds/sprig) without
// those listed in excludedSprig, our own functions (which win on a name
// they share with sprig), and the format helpers of formats.go. It
// reaches nothing outside the data it is given: no environment, files,
// network, cluster, clock or randomness, so that the same data always
// renders the same Secret. docs/templates.md lists every name (a test
// keeps the two equal).
func FuncMap() template.FuncMap { return maps.Clone(funcs) }

// funcs is built once: wrapping sprig's functions uses reflection.
var funcs = buildFuncMap()

func buildFuncMap() template.FuncMap {
	out := template.FuncMap{}
	for name, fn := range sprigFuncs {
		if _, excluded := excludedSprig[name]; excluded {
			continue
		}
		if name == "fail" {
			// Its message is the template's own text.
			out[name] = fn
			continue
		}
		out[name] = withheldErrors(name, fn)
	}
	maps.Copy(out, boundedFuncs())
	maps.Copy(out, ownFuncs())
	return out
}

// excludedSprig are the functions of sprig's hermetic set that are left
// out, with the reason. (The hermetic set already leaves out env,
// expandenv, getHostByName, now, date and its forms, and the rand* and
// uuid functions.)
var excludedSprig = map[string]string{
	"randInt":                  "random",
	"shuffle":                  "random",
	"bcrypt":                   "random salt: a new value at each rendering",
	"htpasswd":                 "random salt: a new value at each rendering",
	"encryptAES":               "random IV: a new value at each rendering",
	"genPrivateKey":            "random",
	"genCA":                    "random",
	"genCAWithKey":             "random serial number",
	"genSelfSignedCert":        "random",
	"genSelfSignedCertWithKey": "random serial number",
	"genSignedCert":            "random",
	"genSignedCertWithKey":     "random serial number",
	"ago":                      "reads the clock",
	"durationRound":            "reads the clock for a time argument",
	"toDate":                   "depends on the machine's time zone",
	"mustToDate":               "depends on the machine's time zone",
	"unixEpoch":                "takes a time, which only the clock functions give",
	"mustDateModify":           "takes a time, which only the clock functions give",
	"must_date_modify":         "takes a time, which only the clock functions give",
	"derivePassword":           "scrypt, expensive by design: a template could spend the controller's CPU",
	"hello":                    "a placeholder of the library",
}

// withheldErrors wraps a library function so that its errors, and the
// panics text/template would report, say only that the function failed:
// the library's messages may quote the input, which may be a secret.
func withheldErrors(name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func {
		return fn
	}
	failure := fmt.Errorf("%s: failed on its input (the library's message is withheld, as it may quote the input)", name)
	errType := reflect.TypeFor[error]()
	returnsErr := t.NumOut() == 2 && t.Out(1) == errType
	return reflect.MakeFunc(t, func(args []reflect.Value) (out []reflect.Value) {
		defer func() {
			if r := recover(); r != nil {
				panic(failure)
			}
		}()
		if t.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		if returnsErr && !out[1].IsNil() {
			out[1] = reflect.ValueOf(&failure).Elem()
		}
		return out
	}).Interface()
}

// ownFuncs are the functions written here: those Watchword had before it
// took sprig's set (they keep their behaviour where sprig's differs), and
// the format helpers.
func ownFuncs() template.FuncMap {
	return template.FuncMap{
		// encodings
		"b64enc": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"b64dec": b64dec,
		"b64urlenc": func(s string) string {
			return base64.URLEncoding.EncodeToString([]byte(s))
		},
		"hexenc":    func(s string) string { return hex.EncodeToString([]byte(s)) },
		"hexdec":    hexdec,
		"sha256sum": func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) },
		// structured formats
		"toJson":           toJSON,
		"toPrettyJson":     toPrettyJSON,
		"fromJson":         fromJSON,
		"toYaml":           toYAML,
		"fromYaml":         fromYAML,
		"dockerConfigJson": dockerConfigJSON,
		// strings
		"upper":      strings.ToUpper,
		"lower":      strings.ToLower,
		"trim":       strings.TrimSpace,
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"replace":    func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
		"split":      func(sep, s string) []string { return strings.Split(s, sep) },
		"join":       join,
		"quote":      func(s string) string { return fmt.Sprintf("%q", s) },
		"squote":     func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" },
		"indent":     indent,
		"nindent": func(n int, s string) (string, error) {
			out, err := indent(n, s)
			return "\n" + out, err
		},
		"default":  dflt,
		"required": required,
		"keys":     keys,
		"get":      get,
		"list":     func(items ...any) []any { return items },
		"dict":     dict,
		// PEM and certificates
		"pemBlocks":       pemBlocks,
		"pemCertificates": pemCertificates,
		"pemLeaf":         pemLeaf,
		"pemChain":        pemChain,
		"pemPrivateKey":   pemPrivateKey,
		"certSubject":     certSubject,
		"certNotAfter":    certNotAfter,
		"certSANs":        certSANs,
		"filterPEM":       filterPEM,
		// PKCS#12 and JWK (formats.go)
		"pkcs12key":                 pkcs12key,
		"pkcs12keyPass":             pkcs12keyPass,
		"pkcs12cert":                pkcs12cert,
		"pkcs12certPass":            pkcs12certPass,
		"pemToPkcs12":               pemToPkcs12,
		"pemToPkcs12Pass":           pemToPkcs12Pass,
		"fullPemToPkcs12":           fullPemToPkcs12,
		"fullPemToPkcs12Pass":       fullPemToPkcs12Pass,
		"pemTruststoreToPKCS12":     pemTruststoreToPKCS12,
		"pemTruststoreToPKCS12Pass": pemTruststoreToPKCS12Pass,
		"jwkPublicKeyPem":           jwkPublicKeyPem,
		"jwkPrivateKeyPem":          jwkPrivateKeyPem,
	}
}

// renderTemplate renders text over ctx.
func renderTemplate(name, text string, ctx any) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).
		Funcs(template.FuncMap{lookupFunc: fieldOrMissing}).Parse(text)
	if err != nil {
		return nil, &TemplateError{Name: name, Problem: "does not parse: " + scrub(err.Error(), name)}
	}
	tolerateMissingKeys(t)
	var out limitedBuffer
	if err := t.Execute(&out, ctx); err != nil {
		return nil, &TemplateError{Name: name, Problem: "failed: " + scrub(err.Error(), name)}
	}
	return out.Bytes(), nil
}

// Rendered metadata is checked here, right after rendering, because the
// API server's answer to an invalid label or annotation repeats the
// rendered value, which may come from secret data, and that answer would
// reach the ExternalSecret's conditions. The checks are those of
// apimachinery (the rules the API server applies); their messages are not
// used for rendered values, only fixed ones that name the key.

// labelValueRule says what a label value may be, without the value.
var labelValueRule = fmt.Sprintf("at most %d characters: letters, digits, '-', '_', '.'; "+
	"must start and end with a letter or digit", content.LabelValueMaxLength)

// renderLabels renders the label templates and checks the result.
func renderLabels(in map[string]string, ctx any) (map[string]string, error) {
	return renderMetadata("label", in, ctx, func(key, value string) string {
		if errs := content.IsLabelKey(key); len(errs) > 0 {
			// The key is part of the spec, not rendered: its rule may be said.
			return "is not a valid label key: " + strings.Join(errs, "; ")
		}
		if len(content.IsLabelValue(value)) > 0 {
			return "rendered value is not a valid label value (" + labelValueRule + ")"
		}
		return ""
	})
}

// renderAnnotations renders the annotation templates and checks the
// result, the total size included.
func renderAnnotations(in map[string]string, ctx any) (map[string]string, error) {
	out, err := renderMetadata("annotation", in, ctx, func(key, _ string) string {
		// As the API server does: annotation keys are label keys, in any case.
		if errs := content.IsLabelKey(strings.ToLower(key)); len(errs) > 0 {
			return "is not a valid annotation key: " + strings.Join(errs, "; ")
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	// ValidateAnnotationsSize's error holds sizes only; it is not used.
	if apivalidation.ValidateAnnotationsSize(out) != nil {
		return nil, &TemplateError{Name: "metadata.annotations", Problem: fmt.Sprintf(
			"rendered annotations are larger than %d bytes in total (keys and values)", apivalidation.TotalAnnotationSizeLimitB)}
	}
	return out, nil
}

// renderMetadata renders each template of in under its key and returns the
// first problem that check finds in a key or a rendered value.
func renderMetadata(kind string, in map[string]string, ctx any, check func(key, value string) string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		b, err := renderTemplate(kind+" "+k, in[k], ctx)
		if err != nil {
			var te *TemplateError
			if errors.As(err, &te) {
				te.Kind, te.Name = kind, k
			}
			return nil, err
		}
		if problem := check(k, string(b)); problem != "" {
			return nil, &TemplateError{Kind: kind, Name: k, Problem: problem}
		}
		out[k] = string(b)
	}
	return out, nil
}

// scrub removes the "template: NAME:" prefix that text/template adds. The
// errors of text/template and of our functions name fields and functions,
// not data values: our functions never put their input into an error.
func scrub(msg, name string) string {
	return strings.TrimPrefix(msg, "template: "+name+":")
}

// Missing keys and the fallback functions.
//
// Templates run with missingkey=error, so that a typo in a key fails
// loudly instead of rendering an empty string. That made the documented
// form `{{ .data.port | default "5432" }}` fail too: text/template
// evaluates .data.port, and stops, before default is called. No execution
// option tells "missing" from "empty" per use: missingkey=zero renders a
// bare missing key as an empty string (or "<no value>"), which would hide
// the typo. So tolerateMissingKeys rewrites the parse tree once, after
// parsing: where a field (.data.KEY, .KEY, $.data.KEY, $v.KEY or
// (pipeline).KEY) is the value given to one of fallbackFuncs, directly or
// through a pipe, the last step of the field becomes a call of
// fieldOrMissing, which returns a missingKey instead of failing. The
// fallback functions treat a missingKey as empty; every other use of a
// field is left alone, so a missing key used bare, or piped into any other
// function, still fails naming the key. Only the last step may be missing:
// .data itself, or any step before the last, must exist.

// fallbackFuncs are the functions whose value argument may name a missing
// key.
var fallbackFuncs = map[string]bool{"default": true, "required": true}

// lookupFunc is the name under which fieldOrMissing is called in a
// rewritten tree. It is not part of the documented function set.
const lookupFunc = "_fieldOrMissing"

// missingKey is the value of a field whose last key is missing, as seen by
// the fallback functions. It holds the key's name.
type missingKey string

// fieldOrMissing returns m[key], or a missingKey when m has no such key.
func fieldOrMissing(m any, key string) (any, error) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
		return nil, fmt.Errorf("cannot read key %q: not a map", key)
	}
	e := v.MapIndex(reflect.ValueOf(key).Convert(v.Type().Key()))
	if !e.IsValid() {
		return missingKey(key), nil
	}
	return e.Interface(), nil
}

// tolerateMissingKeys rewrites every template of t (the main one and those
// of define and block) as the comment above missingKey describes.
func tolerateMissingKeys(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Root != nil {
			rewriteNode(tt.Tree, tt.Root)
		}
	}
}

func rewriteNode(tr *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			rewriteNode(tr, c)
		}
	case *parse.ActionNode:
		rewritePipe(tr, n.Pipe)
	case *parse.IfNode:
		rewriteBranch(tr, &n.BranchNode)
	case *parse.RangeNode:
		rewriteBranch(tr, &n.BranchNode)
	case *parse.WithNode:
		rewriteBranch(tr, &n.BranchNode)
	case *parse.TemplateNode:
		rewritePipe(tr, n.Pipe)
	case *parse.PipeNode:
		rewritePipe(tr, n)
	case *parse.ChainNode:
		rewriteNode(tr, n.Node)
	}
}

func rewriteBranch(tr *parse.Tree, b *parse.BranchNode) {
	rewritePipe(tr, b.Pipe)
	rewriteNode(tr, b.List)
	rewriteNode(tr, b.ElseList)
}

func rewritePipe(tr *parse.Tree, p *parse.PipeNode) {
	if p == nil {
		return
	}
	for i, cmd := range p.Cmds {
		for _, a := range cmd.Args {
			rewriteNode(tr, a)
		}
		if len(cmd.Args) == 0 {
			continue
		}
		fn, ok := cmd.Args[0].(*parse.IdentifierNode)
		if !ok || !fallbackFuncs[fn.Ident] {
			continue
		}
		switch {
		case i > 0:
			// `.data.KEY | default "x"`: the value is the previous
			// command's result; rewrite it when it is a lone field.
			prev := p.Cmds[i-1]
			if len(prev.Args) == 1 {
				if call := lookupCall(tr, prev.Args[0]); call != nil {
					prev.Args = call
				}
			}
		case len(cmd.Args) > 1:
			// `default "x" .data.KEY`: the value is the last argument.
			last := len(cmd.Args) - 1
			if v := optionalValue(tr, cmd.Args[last]); v != nil {
				cmd.Args[last] = v
			}
		}
	}
}

// optionalValue returns the node to use, as an argument, instead of n:
// a parenthesized call of fieldOrMissing, or nil to leave n alone.
func optionalValue(tr *parse.Tree, n parse.Node) parse.Node {
	if p, ok := n.(*parse.PipeNode); ok {
		// `default "x" (.data.KEY)`
		if len(p.Decl) == 0 && len(p.Cmds) == 1 && len(p.Cmds[0].Args) == 1 {
			if call := lookupCall(tr, p.Cmds[0].Args[0]); call != nil {
				p.Cmds[0].Args = call
			}
		}
		return nil
	}
	call := lookupCall(tr, n)
	if call == nil {
		return nil
	}
	pos := n.Position()
	return &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos,
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: call}}}
}

// lookupCall returns the arguments of a command `_fieldOrMissing RECEIVER
// "KEY"` that reads the field n, or nil when n is not a field. The nodes
// of n are reused for the receiver, which keeps their positions for error
// messages.
func lookupCall(tr *parse.Tree, n parse.Node) []parse.Node {
	var recv parse.Node
	var key string
	switch f := n.(type) {
	case *parse.FieldNode: // .a.b.KEY, or .KEY on dot
		last := len(f.Ident) - 1
		key = f.Ident[last]
		if last == 0 {
			recv = &parse.DotNode{NodeType: parse.NodeDot, Pos: f.Pos}
		} else {
			f.Ident = f.Ident[:last]
			recv = f
		}
	case *parse.VariableNode: // $.data.KEY, $v.KEY; a bare $v is no field
		last := len(f.Ident) - 1
		if last < 1 {
			return nil
		}
		key = f.Ident[last]
		f.Ident = f.Ident[:last]
		recv = f
	case *parse.ChainNode: // (pipeline).KEY
		last := len(f.Field) - 1
		if last < 0 {
			return nil
		}
		key = f.Field[last]
		if last == 0 {
			recv = f.Node
		} else {
			f.Field = f.Field[:last]
			recv = f
		}
	default:
		return nil
	}
	pos := n.Position()
	return []parse.Node{
		parse.NewIdentifier(lookupFunc).SetTree(tr).SetPos(pos),
		recv,
		&parse.StringNode{NodeType: parse.NodeString, Pos: pos, Quoted: strconv.Quote(key), Text: key},
	}
}

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxRendered {
		return 0, fmt.Errorf("output is larger than %d bytes", maxRendered)
	}
	return b.Buffer.Write(p)
}

func b64dec(s string) (string, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return string(b), nil
		}
	}
	return "", errors.New("b64dec: input is not valid base64")
}

func hexdec(s string) (string, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return "", errors.New("hexdec: input is not valid hex")
	}
	return string(b), nil
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", errors.New("toJson: value cannot be rendered as JSON")
	}
	return string(b), nil
}

func toPrettyJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", errors.New("toPrettyJson: value cannot be rendered as JSON")
	}
	return string(b), nil
}

func fromJSON(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, errors.New("fromJson: input is not valid JSON")
	}
	return v, nil
}

func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", errors.New("toYaml: value cannot be rendered as YAML")
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func fromYAML(s string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, errors.New("fromYaml: input is not valid YAML")
	}
	return v, nil
}

// dockerConfigJSON renders a .dockerconfigjson document for one registry.
func dockerConfigJSON(registry, username, password string) (string, error) {
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	doc := map[string]any{"auths": map[string]any{registry: map[string]string{
		"username": username, "password": password, "auth": auth,
	}}}
	return toJSON(doc)
}

func join(sep string, items any) (string, error) {
	switch v := items.(type) {
	case []string:
		return strings.Join(v, sep), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, sep), nil
	}
	return "", errors.New("join: second argument must be a list")
}

func dflt(def any, v any) any {
	switch t := v.(type) {
	case nil, missingKey:
		return def
	case string:
		if t == "" {
			return def
		}
	}
	return v
}

func required(msg string, v any) (any, error) {
	if k, ok := v.(missingKey); ok {
		if msg == "" {
			return nil, fmt.Errorf("key %q is required and missing", string(k))
		}
		return nil, fmt.Errorf("key %q is required and missing: %s", string(k), msg)
	}
	if v == nil {
		return nil, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, errors.New(msg)
	}
	return v, nil
}

func keys(m any) ([]string, error) {
	var out []string
	switch t := m.(type) {
	case map[string]string:
		for k := range t {
			out = append(out, k)
		}
	case map[string]any:
		for k := range t {
			out = append(out, k)
		}
	default:
		return nil, errors.New("keys: argument must be a map")
	}
	sort.Strings(out)
	return out, nil
}

// get returns m[key] and fails with the key's name when it is missing.
func get(m any, key string) (any, error) {
	switch t := m.(type) {
	case map[string]string:
		if v, ok := t[key]; ok {
			return v, nil
		}
	case map[string]any:
		if v, ok := t[key]; ok {
			return v, nil
		}
	default:
		return nil, errors.New("get: first argument must be a map")
	}
	return nil, fmt.Errorf("get: no key %q", key)
}

func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict: needs key and value pairs")
	}
	out := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, errors.New("dict: keys must be strings")
		}
		out[k] = kv[i+1]
	}
	return out, nil
}

// decodePEM returns the blocks of a PEM bundle whose type match accepts,
// in order; a nil match accepts every block. Text around and between the
// blocks is skipped. It is the one walk over PEM blocks that the helpers
// below share.
func decodePEM(s string, match func(string) bool) []*pem.Block {
	var out []*pem.Block
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		if match == nil || match(b.Type) {
			out = append(out, b)
		}
	}
}

func isCert(t string) bool { return t == "CERTIFICATE" }
func isKey(t string) bool  { return strings.HasSuffix(t, "PRIVATE KEY") }

// certBlocks returns the CERTIFICATE blocks of a bundle, or an error that
// names fn when there is none.
func certBlocks(fn, s string) ([]*pem.Block, error) {
	certs := decodePEM(s, isCert)
	if len(certs) == 0 {
		return nil, errors.New(fn + ": no CERTIFICATE block in input")
	}
	return certs, nil
}

func encodeBlocks(bs []*pem.Block) string {
	var buf bytes.Buffer
	for _, b := range bs {
		_ = pem.Encode(&buf, b)
	}
	return buf.String()
}

// pemBlocks splits a PEM bundle into its blocks, each re-encoded.
func pemBlocks(s string) []string {
	var out []string
	for _, b := range decodePEM(s, nil) {
		out = append(out, string(pem.EncodeToMemory(b)))
	}
	return out
}

// pemCertificates keeps only the certificates of a bundle.
func pemCertificates(s string) (string, error) {
	certs, err := certBlocks("pemCertificates", s)
	if err != nil {
		return "", err
	}
	return encodeBlocks(certs), nil
}

// pemLeaf returns the first certificate of a bundle.
func pemLeaf(s string) (string, error) {
	certs, err := certBlocks("pemLeaf", s)
	if err != nil {
		return "", err
	}
	return encodeBlocks(certs[:1]), nil
}

// pemChain returns every certificate after the first (the intermediates
// and root).
func pemChain(s string) (string, error) {
	certs, err := certBlocks("pemChain", s)
	if err != nil {
		return "", err
	}
	return encodeBlocks(certs[1:]), nil
}

// pemPrivateKey returns the first private key of a bundle.
func pemPrivateKey(s string) (string, error) {
	ks := decodePEM(s, isKey)
	if len(ks) == 0 {
		return "", errors.New("pemPrivateKey: no PRIVATE KEY block in input")
	}
	return encodeBlocks(ks[:1]), nil
}

// firstCert parses the first certificate of a bundle.
func firstCert(fn, s string) (*x509.Certificate, error) {
	certs, err := certBlocks(fn, s)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(certs[0].Bytes)
	if err != nil {
		return nil, errors.New(fn + ": the first certificate does not parse")
	}
	return c, nil
}

func certSubject(s string) (string, error) {
	c, err := firstCert("certSubject", s)
	if err != nil {
		return "", err
	}
	return c.Subject.String(), nil
}

func certNotAfter(s string) (string, error) {
	c, err := firstCert("certNotAfter", s)
	if err != nil {
		return "", err
	}
	return c.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), nil
}
