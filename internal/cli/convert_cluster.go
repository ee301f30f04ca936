package cli

import (
	"fmt"
	"maps"
	"strings"
)

// Bounds of Watchword's namespace selection (api/v1alpha1).
const (
	maxNamespaceSelectors = 8
	maxNamespaceRegexes   = 16
)

// clusterExternalSecret converts an ESO ClusterExternalSecret into
// Watchword's: the same namespace selection (ESO's single
// namespaceSelector of v1beta1 becomes the first of namespaceSelectors),
// name and metadata of the stamped ExternalSecrets, and their spec
// converted by the ExternalSecret rule (its findings reported under
// spec.externalSecretSpec).
func (c *converter) clusterExternalSecret(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	dst := map[string]any{}
	set(dst, "externalSecretName", takeString(spec, "externalSecretName"))
	set(dst, "externalSecretMetadata", c.stampedMetadata(spec, "externalSecretMetadata"))
	c.namespaceTargets(spec, dst)
	esSpec := takeMap(spec, "externalSecretSpec")
	c.leftovers(spec, "spec")
	if esSpec == nil {
		c.drop("spec.externalSecretSpec", "no ExternalSecret spec: nothing is converted")
		return nil
	}
	if !selects(dst) {
		c.drop("spec", "no namespace is selected (no namespaceSelectors, namespaces or namespaceRegexes): Watchword needs at least one")
		return nil
	}
	converted := c.nested("spec.externalSecretSpec", func() []map[string]any {
		return c.externalSecret(map[string]any{"metadata": map[string]any{"name": meta["name"]}, "spec": esSpec})
	})
	if len(converted) == 0 {
		return nil
	}
	dst["externalSecretSpec"] = converted[0]["spec"]
	out := newObject("ClusterExternalSecret", meta)
	out["spec"] = dst
	return []map[string]any{out}
}

// clusterPushSecret converts an ESO ClusterPushSecret into Watchword's.
// Its pushSecretSpec is converted by the PushSecret rule; when that makes
// several PushSecrets (one per remote secret), each becomes a
// ClusterPushSecret of its own, named as those PushSecrets are (NAME-1,
// NAME-2, …).
func (c *converter) clusterPushSecret(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	base := map[string]any{}
	psName := takeString(spec, "pushSecretName")
	set(base, "pushSecretMetadata", c.stampedMetadata(spec, "pushSecretMetadata"))
	c.namespaceTargets(spec, base)
	psSpec := takeMap(spec, "pushSecretSpec")
	c.leftovers(spec, "spec")
	if psSpec == nil {
		c.drop("spec.pushSecretSpec", "no PushSecret spec: nothing is converted")
		return nil
	}
	if !selects(base) {
		c.drop("spec", "no namespace is selected (no namespaceSelectors, namespaces or namespaceRegexes): Watchword needs at least one")
		return nil
	}
	name, _ := meta["name"].(string)
	if psName == "" {
		psName = name
	}
	converted := c.nested("spec.pushSecretSpec", func() []map[string]any {
		return c.pushSecret(map[string]any{"metadata": map[string]any{"name": psName}, "spec": psSpec})
	})
	out := make([]map[string]any, 0, len(converted))
	for i, ps := range converted {
		md, spec := maps.Clone(meta), deepCopyJSON(base)
		if len(converted) > 1 {
			md["name"] = fmt.Sprintf("%s-%d", name, i+1)
		}
		psMeta, _ := ps["metadata"].(map[string]any)
		if n, _ := psMeta["name"].(string); n != name {
			spec["pushSecretName"] = n
		}
		spec["pushSecretSpec"] = ps["spec"]
		o := newObject("ClusterPushSecret", md)
		o["spec"] = spec
		out = append(out, o)
	}
	if len(out) > 1 {
		c.note("", fmt.Sprintf("written as %d ClusterPushSecrets named %s-1 to %s-%d, one for each remote secret", len(out), name, name, len(out)))
	}
	return out
}

// nested runs the conversion of a spec embedded at path, and moves the
// paths of its findings (which start at spec) under path.
func (c *converter) nested(path string, convert func() []map[string]any) []map[string]any {
	first := len(*c.findings)
	out := convert()
	for i := first; i < len(*c.findings); i++ {
		f := &(*c.findings)[i]
		if rest, ok := strings.CutPrefix(f.Path, "spec"); ok {
			f.Path = path + rest
		}
	}
	return out
}

// stampedMetadata takes the labels and annotations of the stamped
// objects from spec[key].
func (c *converter) stampedMetadata(spec map[string]any, key string) map[string]any {
	src := takeMap(spec, key)
	if src == nil {
		return nil
	}
	out := map[string]any{}
	set(out, "labels", takeMap(src, "labels"))
	set(out, "annotations", takeMap(src, "annotations"))
	c.leftovers(src, "spec."+key)
	return out
}

// namespaceTargets moves the namespace selection of spec into dst:
// namespaceSelector (v1beta1) and namespaceSelectors, namespaces,
// namespaceRegexes, and refreshTime.
func (c *converter) namespaceTargets(spec, dst map[string]any) {
	var selectors []any
	if s, ok := take(spec, "namespaceSelector"); ok && s != nil {
		selectors = append(selectors, s)
	}
	selectors = append(selectors, takeList(spec, "namespaceSelectors")...)
	if len(selectors) > maxNamespaceSelectors {
		c.drop("spec.namespaceSelectors", fmt.Sprintf("Watchword takes at most %d label selectors: those after the %dth are not carried; join them with matchExpressions", maxNamespaceSelectors, maxNamespaceSelectors))
		selectors = selectors[:maxNamespaceSelectors]
	}
	set(dst, "namespaceSelectors", selectors)
	var names []any
	for i, n := range takeList(spec, "namespaces") {
		if s, ok := n.(string); ok && s != "" {
			names = append(names, s)
		} else {
			c.drop(pathIndex("spec.namespaces", i), "not a namespace name")
		}
	}
	set(dst, "namespaces", names)
	regexes := takeList(spec, "namespaceRegexes")
	if len(regexes) > maxNamespaceRegexes {
		c.drop("spec.namespaceRegexes", fmt.Sprintf("Watchword takes at most %d regular expressions: those after the %dth are not carried", maxNamespaceRegexes, maxNamespaceRegexes))
		regexes = regexes[:maxNamespaceRegexes]
	}
	set(dst, "namespaceRegexes", regexes)
	if rt := takeString(spec, "refreshTime"); rt != "" {
		dst["refreshTime"] = rt
		c.note("spec.refreshTime", "how often the namespaces are listed again; Watchword also watches namespaces, so a new or relabelled one is seen at once")
	}
}

// selects tells whether a converted spec selects namespaces at all.
func selects(spec map[string]any) bool {
	for _, k := range []string{"namespaceSelectors", "namespaces", "namespaceRegexes"} {
		if l, _ := spec[k].([]any); len(l) > 0 {
			return true
		}
	}
	return false
}

// deepCopyJSON copies a decoded JSON object.
func deepCopyJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyJSON(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopyValue(e)
		}
		return l
	default:
		return x
	}
}
