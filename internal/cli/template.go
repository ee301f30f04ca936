// Package cli holds the commands of watchword that help people work with
// its resources: rendering a template offline and reading the status of
// the ExternalSecrets and PushSecrets of a cluster. Each command is a
// function of its inputs and an output, tested without a terminal.
package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// TemplateInput is what `watchword template` renders: an ExternalSecret
// manifest, sample remote data, and the ConfigMaps its templateFrom names.
type TemplateInput struct {
	// ExternalSecret is the manifest (YAML or JSON).
	ExternalSecret []byte
	// Data is a YAML map of remote key to its sample: a string (a store
	// with one value per key, or JSON that properties select from), or a
	// map of field to value (a structured secret, such as Vault's).
	Data []byte
	// ConfigMaps are ConfigMap manifests for templateFrom.
	ConfigMaps [][]byte
	// ShowValues prints the values of the rendered Secret; without it,
	// only keys and sizes.
	ShowValues bool
}

// Template renders the target Secret an ExternalSecret would get from the
// sample data, as the controller renders it, and writes it to out. No
// store and no cluster is involved.
func Template(in TemplateInput, out io.Writer) error {
	es, err := readExternalSecret(in.ExternalSecret)
	if err != nil {
		return err
	}
	samples := map[string]any{}
	if err = yaml.Unmarshal(in.Data, &samples); err != nil {
		return fmt.Errorf("reading the sample data: %w", err)
	}
	objs := map[engine.Ref]engine.Object{}
	for _, ref := range engine.Refs(&es.Spec) {
		sample, ok := samples[ref.Key]
		if !ok {
			return fmt.Errorf("the sample data has no remote key %q, which the ExternalSecret reads; add it to the data file", ref.Key)
		}
		obj, oerr := object(ref.Key, sample)
		if oerr != nil {
			return oerr
		}
		objs[ref] = obj
	}
	sources, err := configMapSources(in.ConfigMaps)
	if err != nil {
		return err
	}
	return render(es, objs, sources, in.ShowValues, out)
}

// readExternalSecret decodes an ExternalSecret manifest strictly.
func readExternalSecret(manifest []byte) (*v1alpha1.ExternalSecret, error) {
	var es v1alpha1.ExternalSecret
	if err := yaml.UnmarshalStrict(manifest, &es); err != nil {
		return nil, fmt.Errorf("reading the ExternalSecret: %w", err)
	}
	if es.Kind != "" && es.Kind != "ExternalSecret" {
		return nil, fmt.Errorf("the manifest is a %s, not an ExternalSecret", es.Kind)
	}
	return &es, nil
}

// configMapSources reads ConfigMap manifests into the template sources
// that templateFrom names.
func configMapSources(manifests [][]byte) (map[string]map[string]string, error) {
	sources := map[string]map[string]string{}
	for i, raw := range manifests {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(raw, &cm); err != nil {
			return nil, fmt.Errorf("reading ConfigMap manifest %d: %w", i+1, err)
		}
		sources[cm.Name] = cm.Data
	}
	return sources, nil
}

// render renders and prints the target as the controller would.
func render(es *v1alpha1.ExternalSecret, objs map[engine.Ref]engine.Object, sources map[string]map[string]string, showValues bool, out io.Writer) error {
	res, err := engine.Render(&es.Spec, objs, sources, time.Now())
	if err != nil {
		return err
	}
	return printSecret(out, es, res, showValues)
}

// object turns one sample into what a store would return.
func object(key string, sample any) (engine.Object, error) {
	switch v := sample.(type) {
	case string:
		return engine.Object{Value: []byte(v)}, nil
	case map[string]any:
		fields := make(map[string][]byte, len(v))
		for f, fv := range v {
			switch x := fv.(type) {
			case string:
				fields[f] = []byte(x)
			default:
				b, err := yaml.Marshal(x)
				if err != nil {
					return engine.Object{}, fmt.Errorf("sample of remote key %q, field %q: %w", key, f, err)
				}
				j, err := yaml.YAMLToJSON(b)
				if err != nil {
					return engine.Object{}, fmt.Errorf("sample of remote key %q, field %q: %w", key, f, err)
				}
				fields[f] = j
			}
		}
		return engine.Object{Fields: fields}, nil
	default:
		return engine.Object{}, fmt.Errorf("sample of remote key %q: give a string or a map of fields", key)
	}
}

// printSecret writes the rendered Secret: its type, labels, annotations
// and keys with their sizes, and values only when asked.
func printSecret(out io.Writer, es *v1alpha1.ExternalSecret, res *engine.Result, showValues bool) error {
	name := es.Spec.Target.Name
	if name == "" {
		name = es.Name
	}
	typ := res.Type
	if typ == "" {
		typ = string(corev1.SecretTypeOpaque)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Secret %q (type %s)\n", name, typ)
	// Labels and annotations are rendered from the data too: their values
	// are values.
	writeMap(&b, "labels", res.Labels, showValues)
	writeMap(&b, "annotations", res.Annotations, showValues)
	b.WriteString("data:\n")
	for _, k := range slices.Sorted(maps.Keys(res.Data)) {
		if showValues {
			fmt.Fprintf(&b, "  %s: %q\n", k, res.Data[k])
		} else {
			fmt.Fprintf(&b, "  %s: (%d bytes)\n", k, len(res.Data[k]))
		}
	}
	if !showValues {
		b.WriteString("(values hidden; --show-values prints them)\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func writeMap(b *strings.Builder, title string, m map[string]string, showValues bool) {
	if len(m) == 0 {
		return
	}
	b.WriteString(title + ":\n")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if showValues {
			fmt.Fprintf(b, "  %s: %q\n", k, m[k])
		} else {
			fmt.Fprintf(b, "  %s: (%d bytes)\n", k, len(m[k]))
		}
	}
}
