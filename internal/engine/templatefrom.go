package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// SecretSourceKey is the key of a templateFrom Secret's items among the
// template sources, beside ConfigMaps' (keyed by their names, which
// cannot hold a '/').
func SecretSourceKey(name string) string { return "Secret/" + name }

// fromTemplates is what templateFrom renders: Secret data, labels and
// annotations.
type fromTemplates struct {
	data        map[string][]byte
	labels      map[string]string
	annotations map[string]string
}

// renderTemplateFrom renders the templateFrom entries in order, a later
// one winning.
func renderTemplateFrom(entries []v1alpha1.TemplateFrom, sources map[string]map[string]string, ctx any) (fromTemplates, error) {
	out := fromTemplates{data: map[string][]byte{}}
	for i, from := range entries {
		put := out.putter(from.Target)
		switch {
		case from.Literal != nil:
			name := fmt.Sprintf("templateFrom[%d].literal", i)
			if err := renderKeysAndValues(name, *from.Literal, ctx, put); err != nil {
				return out, err
			}
		case from.ConfigMap != nil || from.Secret != nil:
			ref, kind, key := from.ConfigMap, "ConfigMap", ""
			if ref != nil {
				key = ref.Name
			} else {
				ref, kind, key = from.Secret, "Secret", SecretSourceKey(from.Secret.Name)
			}
			src, ok := sources[key]
			if !ok {
				return out, &TemplateError{Name: ref.Name, Problem: kind + " not found in the ExternalSecret's namespace"}
			}
			for _, item := range ref.Items {
				text, ok := src[item.Key]
				if !ok {
					return out, &TemplateError{Name: ref.Name + "/" + item.Key, Problem: fmt.Sprintf("%s %q has no key %q", kind, ref.Name, item.Key)}
				}
				if item.TemplateAs == v1alpha1.TemplateScopeKeysAndValues {
					if err := renderKeysAndValues(ref.Name+"/"+item.Key, text, ctx, put); err != nil {
						return out, err
					}
					continue
				}
				b, err := renderTemplate(item.Key, text, ctx)
				if err != nil {
					return out, err
				}
				if err := put(item.Key, b); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// putter writes one rendered key to target, checking a label or an
// annotation as the API server would, without its message (which would
// repeat the value).
func (f *fromTemplates) putter(target v1alpha1.TemplateTarget) func(string, []byte) error {
	switch target {
	case v1alpha1.TemplateTargetLabels:
		return func(k string, v []byte) error {
			checked, err := renderLabels(map[string]string{k: "{{ .v }}"}, map[string]any{"v": string(v)})
			if err != nil {
				return err
			}
			f.labels = mergeMeta(f.labels, checked)
			return nil
		}
	case v1alpha1.TemplateTargetAnnotations:
		return func(k string, v []byte) error {
			checked, err := renderAnnotations(map[string]string{k: "{{ .v }}"}, map[string]any{"v": string(v)})
			if err != nil {
				return err
			}
			f.annotations = mergeMeta(f.annotations, checked)
			return nil
		}
	default:
		return func(k string, v []byte) error {
			if !validSecretKey(k) {
				return &TemplateError{Name: k, Problem: "is not a valid Secret key (letters, digits, '-', '_', '.')"}
			}
			f.data[k] = v
			return nil
		}
	}
}

// renderKeysAndValues renders text and reads its output as a YAML map of
// keys to scalar values (strings as they are, numbers and booleans as
// written), each put in turn, in key order. The parser's message is not
// shown: it may quote the rendered text, which holds secret data.
func renderKeysAndValues(name, text string, ctx any, put func(string, []byte) error) error {
	b, err := renderTemplate(name, text, ctx)
	if err != nil {
		return err
	}
	raw, err := yaml.YAMLToJSON(b)
	if err != nil {
		return &TemplateError{Name: name, Problem: "rendered output is not YAML (a map of keys to values is expected)"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		if strings.TrimSpace(string(raw)) == "null" {
			return nil
		}
		return &TemplateError{Name: name, Problem: "rendered output is not a YAML map of keys to values"}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
		case json.Number:
			v = x.String()
		case bool:
			v = fmt.Sprint(x)
		case nil:
			v = ""
		default:
			// Keys of the output may come from secret data: the entry is
			// named, never the key.
			return &TemplateError{Name: name, Problem: "a rendered value is a list or a map, not a string: quote it or render it with toJson"}
		}
		if err := put(k, []byte(v)); err != nil {
			var te *TemplateError
			if errors.As(err, &te) {
				what := "a key"
				switch te.Kind {
				case "label":
					what = "a label"
				case "annotation":
					what = "an annotation"
				}
				return &TemplateError{Name: name, Problem: fmt.Sprintf("in the rendered output, %s %s", what, strings.TrimPrefix(te.Problem, "rendered "))}
			}
			return err
		}
	}
	return nil
}
