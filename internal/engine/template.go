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
	"sort"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// TemplateError says which template failed and why. Its message never
// holds a rendered or fetched value.
type TemplateError struct {
	// Name is the Secret key (or label/annotation) being rendered, or the
	// ConfigMap item.
	Name    string
	Problem string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("template %q: %s", e.Name, e.Problem)
}

// maxRendered bounds the output of one template, so that a template cannot
// exhaust memory or exceed what a Secret can hold.
const maxRendered = 1 << 20

// FuncMap is the function set available to templates. It reaches nothing
// outside the data it is given: no environment, files, network or cluster.
func FuncMap() template.FuncMap {
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
		"nindent":    func(n int, s string) string { return "\n" + indent(n, s) },
		"default":    dflt,
		"required":   required,
		"keys":       keys,
		"get":        get,
		"list":       func(items ...any) []any { return items },
		"dict":       dict,
		// PEM and certificates
		"pemBlocks":       pemBlocks,
		"pemCertificates": pemCertificates,
		"pemLeaf":         pemLeaf,
		"pemChain":        pemChain,
		"pemPrivateKey":   pemPrivateKey,
		"certSubject":     certSubject,
		"certNotAfter":    certNotAfter,
	}
}

// renderTemplate renders text over ctx.
func renderTemplate(name, text string, ctx any) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(FuncMap()).Parse(text)
	if err != nil {
		return nil, &TemplateError{Name: name, Problem: "does not parse: " + scrub(err.Error(), name)}
	}
	var out limitedBuffer
	if err := t.Execute(&out, ctx); err != nil {
		return nil, &TemplateError{Name: name, Problem: "failed: " + scrub(err.Error(), name)}
	}
	return out.Bytes(), nil
}

// scrub removes the "template: NAME:" prefix that text/template adds. The
// errors of text/template and of our functions name fields and functions,
// not data values: our functions never put their input into an error.
func scrub(msg, name string) string {
	return strings.TrimPrefix(msg, "template: "+name+":")
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

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func dflt(def any, v any) any {
	switch t := v.(type) {
	case nil:
		return def
	case string:
		if t == "" {
			return def
		}
	}
	return v
}

func required(msg string, v any) (any, error) {
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

// pemBlocks splits a PEM bundle into its blocks, each re-encoded.
func pemBlocks(s string) []string {
	var out []string
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		out = append(out, string(pem.EncodeToMemory(b)))
	}
}

func pemOfType(s string, match func(string) bool) []*pem.Block {
	var out []*pem.Block
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		if match(b.Type) {
			out = append(out, b)
		}
	}
}

func isCert(t string) bool { return t == "CERTIFICATE" }
func isKey(t string) bool  { return strings.HasSuffix(t, "PRIVATE KEY") }

func encodeBlocks(bs []*pem.Block) string {
	var buf bytes.Buffer
	for _, b := range bs {
		_ = pem.Encode(&buf, b)
	}
	return buf.String()
}

// pemCertificates keeps only the certificates of a bundle.
func pemCertificates(s string) (string, error) {
	certs := pemOfType(s, isCert)
	if len(certs) == 0 {
		return "", errors.New("pemCertificates: no CERTIFICATE block in input")
	}
	return encodeBlocks(certs), nil
}

// pemLeaf returns the first certificate of a bundle.
func pemLeaf(s string) (string, error) {
	certs := pemOfType(s, isCert)
	if len(certs) == 0 {
		return "", errors.New("pemLeaf: no CERTIFICATE block in input")
	}
	return encodeBlocks(certs[:1]), nil
}

// pemChain returns every certificate after the first (the intermediates
// and root).
func pemChain(s string) (string, error) {
	certs := pemOfType(s, isCert)
	if len(certs) == 0 {
		return "", errors.New("pemChain: no CERTIFICATE block in input")
	}
	return encodeBlocks(certs[1:]), nil
}

// pemPrivateKey returns the first private key of a bundle.
func pemPrivateKey(s string) (string, error) {
	ks := pemOfType(s, isKey)
	if len(ks) == 0 {
		return "", errors.New("pemPrivateKey: no PRIVATE KEY block in input")
	}
	return encodeBlocks(ks[:1]), nil
}

func firstCert(fn, s string) (*x509.Certificate, error) {
	certs := pemOfType(s, isCert)
	if len(certs) == 0 {
		return nil, errors.New(fn + ": no CERTIFICATE block in input")
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
