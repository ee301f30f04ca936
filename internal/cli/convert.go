package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// `watchword convert` reads External Secrets Operator (ESO) manifests and
// writes Watchword's. Each converted object is built field by field from
// the ESO object: a field is either carried (as is, or rewritten to the
// form Watchword's API has) or reported in a Finding that names its path
// and the reason. Whatever is left of an ESO object after its known fields
// were taken is reported too, so no field is lost without a word. The
// result is decoded strictly into Watchword's Go types before it is
// written, so the output has only fields the API knows.
//
// Findings hold field paths, kinds, names and enum values: never a value
// of a manifest, which could be a secret (a Secret passed through, a
// fake store's data).

// Severity says what a Finding means for the converted manifests.
type Severity string

const (
	// Dropped means a setting with an effect was not carried (or was
	// carried with a different meaning); the converted object may behave
	// differently. `watchword convert` exits 3 when there is one.
	Dropped Severity = "dropped"
	// Note is something the user should know; nothing was lost.
	Note Severity = "note"
)

// Finding is one thing the conversion could not carry, or a note about
// what it did.
type Finding struct {
	Severity Severity
	// Source is the input and the document in it, such as
	// "stores.yaml#2".
	Source string
	// Object is the kind and name of the ESO object, such as
	// "ExternalSecret payments/db".
	Object string
	// Path is the field path in the ESO object, such as
	// "spec.dataFrom[0].rewrite[0].transform"; empty for the whole object.
	Path   string
	Reason string
}

// String is the finding as `watchword convert` prints it.
func (f Finding) String() string {
	where := f.Object
	if f.Path != "" {
		where += " " + f.Path
	}
	return fmt.Sprintf("%s: %s: %s: %s", f.Severity, f.Source, where, f.Reason)
}

// ConvertInput is one file (or stdin) of manifests.
type ConvertInput struct {
	Name string
	Data []byte
}

// ConvertResult is the converted manifests, as one multi-document YAML
// stream, and the findings.
type ConvertResult struct {
	Output   []byte
	Findings []Finding
}

// Dropped tells whether a setting was not carried.
func (r *ConvertResult) Dropped() bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Severity == Dropped })
}

// Convert converts every document of the inputs, in order.
func Convert(inputs []ConvertInput) (*ConvertResult, error) {
	res := &ConvertResult{}
	var docs [][]byte
	for _, in := range inputs {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in.Data)))
		for n := 1; ; n++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: reading document %d: %w", in.Name, n, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				n--
				continue
			}
			src := fmt.Sprintf("%s#%d", in.Name, n)
			out, err := convertDoc(src, doc, &res.Findings)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			docs = append(docs, out...)
		}
	}
	for i, d := range docs {
		if i > 0 {
			res.Output = append(res.Output, "---\n"...)
		}
		res.Output = append(res.Output, d...)
	}
	return res, nil
}

// stripComments drops the lines that hold only a YAML comment.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// esoGroup is ESO's API group; esoVersions the versions converted.
const esoGroup = "external-secrets.io"

var esoVersions = map[string]bool{"v1": true, "v1beta1": true, "v1alpha1": true}

// convertDoc converts one document into zero or more documents.
func convertDoc(src string, doc []byte, findings *[]Finding) ([][]byte, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, errors.New("not a Kubernetes manifest (YAML or JSON with apiVersion and kind)")
	}
	if head.Kind == "List" && head.APIVersion == "v1" {
		// What kubectl get -o yaml writes: convert each item.
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := yaml.Unmarshal(doc, &list); err != nil {
			return nil, errors.New("a List whose items do not parse")
		}
		var out [][]byte
		for i, item := range list.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return nil, err
			}
			docs, err := convertDoc(fmt.Sprintf("%s.items[%d]", src, i), b, findings)
			if err != nil {
				return nil, err
			}
			out = append(out, docs...)
		}
		return out, nil
	}
	obj := head.Kind + " " + qualified(head.Metadata.Namespace, head.Metadata.Name)
	group, version, _ := strings.Cut(head.APIVersion, "/")
	passThrough := func(reason string, sev Severity) [][]byte {
		*findings = append(*findings, Finding{Severity: sev, Source: src, Object: obj, Reason: reason})
		return [][]byte{ensureNewline(doc)}
	}
	if group == generatorGroup && head.Kind == ecrGenerator && version == "v1alpha1" {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, errors.New("the document does not parse as YAML")
		}
		c := &converter{src: src, obj: obj, findings: findings}
		out := c.ecrAuthorizationToken(m)
		if len(out) == 0 {
			return passThrough("no SecretStore could be written from it (see above): passed through unchanged (it stays an External Secrets Operator object)", Dropped), nil
		}
		return marshalObjects(out)
	}
	if strings.HasSuffix(group, "."+esoGroup) {
		return passThrough(fmt.Sprintf("Watchword has no %s (%s): passed through unchanged (it stays an External Secrets Operator object)", head.Kind, group), Dropped), nil
	}
	if group != esoGroup {
		if head.APIVersion == "" || head.Kind == "" {
			return nil, errors.New("not a Kubernetes manifest: apiVersion and kind are needed")
		}
		return passThrough("not an External Secrets Operator object: passed through unchanged", Note), nil
	}
	if !esoVersions[version] || (version == "v1alpha1" && head.Kind != "PushSecret" && head.Kind != "ClusterPushSecret") {
		return passThrough(fmt.Sprintf("API version %s of %s is not converted (v1 and v1beta1 are, and v1alpha1 for PushSecret; ESO converts older versions when it serves them as v1): passed through unchanged", version, head.Kind), Dropped), nil
	}
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return nil, errors.New("the document does not parse as YAML")
	}
	c := &converter{src: src, obj: obj, findings: findings}
	var out []map[string]any
	switch head.Kind {
	case "ExternalSecret":
		out = c.externalSecret(m)
	case "SecretStore", "ClusterSecretStore":
		out = c.store(head.Kind, m)
	case "PushSecret":
		out = c.pushSecret(m)
	case "ClusterExternalSecret":
		if out = c.clusterExternalSecret(m); len(out) == 0 {
			return passThrough("no ClusterExternalSecret could be written from it (see above): passed through unchanged (it stays an External Secrets Operator object)", Dropped), nil
		}
	case "ClusterPushSecret":
		if out = c.clusterPushSecret(m); len(out) == 0 {
			return passThrough("no ClusterPushSecret could be written from it (see above): passed through unchanged (it stays an External Secrets Operator object)", Dropped), nil
		}
	default:
		return passThrough(fmt.Sprintf("Watchword has no %s: passed through unchanged (it stays an External Secrets Operator object)", head.Kind), Dropped), nil
	}
	return marshalObjects(out)
}

// marshalObjects checks the converted objects against Watchword's types
// and writes them as YAML.
func marshalObjects(out []map[string]any) ([][]byte, error) {
	var docs [][]byte
	for _, o := range out {
		if err := checkTyped(o); err != nil {
			return nil, err
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		docs = append(docs, b)
	}
	return docs, nil
}

func ensureNewline(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	return append(append([]byte{}, b...), '\n')
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// checkTyped decodes a converted object strictly into its Watchword type:
// the output never holds a field the API does not know.
func checkTyped(o map[string]any) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	var target any
	switch o["kind"] {
	case "ExternalSecret":
		target = &v1alpha1.ExternalSecret{}
	case "SecretStore":
		target = &v1alpha1.SecretStore{}
	case "ClusterSecretStore":
		target = &v1alpha1.ClusterSecretStore{}
	case "PushSecret":
		target = &v1alpha1.PushSecret{}
	case "ClusterExternalSecret":
		target = &v1alpha1.ClusterExternalSecret{}
	case "ClusterPushSecret":
		target = &v1alpha1.ClusterPushSecret{}
	default:
		return fmt.Errorf("internal error: converted an object to kind %v", o["kind"])
	}
	if err := yaml.UnmarshalStrict(b, target); err != nil {
		// The decoder's message may quote a value, so it is not passed
		// on: a conversion bug is what this is.
		return fmt.Errorf("the converted %v does not decode as Watchword's type (a bug of convert; please report it with the manifest's shape, not its values)", o["kind"])
	}
	return nil
}

// converter converts one ESO object and records its findings.
type converter struct {
	src, obj string
	findings *[]Finding
}

func (c *converter) add(sev Severity, path, reason string) {
	*c.findings = append(*c.findings, Finding{Severity: sev, Source: c.src, Object: c.obj, Path: path, Reason: reason})
}

func (c *converter) drop(path, reason string) { c.add(Dropped, path, reason) }
func (c *converter) note(path, reason string) { c.add(Note, path, reason) }

// leftovers reports every key still in m: the fields that no rule took.
func (c *converter) leftovers(m map[string]any, path string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		c.drop(pathJoin(path, k), "Watchword's API has no such field")
	}
}

func pathJoin(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathIndex(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// take removes key from m and returns its value.
func take(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	delete(m, key)
	return v, ok
}

func takeMap(m map[string]any, key string) map[string]any {
	v, _ := take(m, key)
	mm, _ := v.(map[string]any)
	return mm
}

func takeList(m map[string]any, key string) []any {
	v, _ := take(m, key)
	l, _ := v.([]any)
	return l
}

func takeString(m map[string]any, key string) string {
	v, _ := take(m, key)
	s, _ := v.(string)
	return s
}

// set puts v into m when it is not empty.
func set(m map[string]any, key string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case map[string]any:
		if len(x) == 0 {
			return
		}
	case []any:
		if len(x) == 0 {
			return
		}
	}
	m[key] = v
}

// carry copies v into the shape of t (a Watchword API type): the fields t
// has are kept, recursively; every other field is reported as dropped.
// Types that decode from a scalar (durations, byte slices, quantities)
// and maps are copied whole.
func (c *converter) carry(v any, t reflect.Type, path string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[metav1.Duration]() {
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		fields := jsonFields(t)
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				c.drop(pathJoin(path, k), "Watchword's API has no such field")
				continue
			}
			out[k] = c.carry(m[k], ft, pathJoin(path, k))
		}
		return out
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return v
		}
		l, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = c.carry(e, t.Elem(), pathIndex(path, i))
		}
		return out
	default:
		return v
	}
}

// jsonFields maps the JSON names of t's fields (those of inlined
// structs included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// metadata carries the object metadata a user writes: name, namespace,
// labels and annotations. What the API server or ESO set is left out.
// open takes a manifest apart as every kind's conversion starts: the
// metadata carried over, the spec to convert, and every other top-level
// field but apiVersion, kind and status reported as left over.
func (c *converter) open(m map[string]any) (meta, spec map[string]any) {
	meta = c.metadata(m)
	delete(m, "apiVersion")
	delete(m, "kind")
	delete(m, "status")
	spec = takeMap(m, "spec")
	c.leftovers(m, "")
	return meta, spec
}

func (c *converter) metadata(m map[string]any) map[string]any {
	src := takeMap(m, "metadata")
	out := map[string]any{}
	for _, k := range []string{"name", "generateName", "namespace", "labels"} {
		set(out, k, src[k])
		delete(src, k)
	}
	if ann := takeMap(src, "annotations"); len(ann) > 0 {
		kept := map[string]any{}
		for k, v := range ann {
			switch k {
			case "kubectl.kubernetes.io/last-applied-configuration":
				// A copy of the ESO manifest: not carried.
			case "force-sync":
				c.note("metadata.annotations.force-sync", "ESO's force-sync annotation is not carried: Watchword's is watchword.io/force-sync")
			default:
				kept[k] = v
			}
		}
		set(out, "annotations", kept)
	}
	if _, ok := take(src, "finalizers"); ok {
		c.note("metadata.finalizers", "ESO's finalizers are not carried")
	}
	if _, ok := take(src, "ownerReferences"); ok {
		c.drop("metadata.ownerReferences", "owner references point at objects by UID (often ESO's own): not carried; add them again if you need them")
	}
	// Set by the API server: not carried, without a word.
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		delete(src, k)
	}
	c.leftovers(src, "metadata")
	return out
}

// newObject is the skeleton of a converted object.
func newObject(kind string, meta map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   meta,
	}
}
