package cli

import (
	"fmt"
	"maps"
	"strings"
)

// clusterExternalSecret converts an ESO ClusterExternalSecret, which
// stamps one ExternalSecret into each namespace it selects. Watchword has
// no such kind, so it is written out as those ExternalSecrets: one per
// namespace that spec.namespaces lists, each converted from
// spec.externalSecretSpec by the ExternalSecret rule (its findings
// reported once, under spec.externalSecretSpec). Namespaces chosen by
// label selectors cannot be known offline: the selectors are listed as
// not carried, and without a listed namespace nothing is written.
func (c *converter) clusterExternalSecret(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	name := takeString(spec, "externalSecretName")
	if name == "" {
		name, _ = meta["name"].(string)
	}
	esMeta := map[string]any{"name": name}
	if em := takeMap(spec, "externalSecretMetadata"); em != nil {
		set(esMeta, "labels", takeMap(em, "labels"))
		set(esMeta, "annotations", takeMap(em, "annotations"))
		c.leftovers(em, "spec.externalSecretMetadata")
	}
	for _, k := range []string{"namespaceSelector", "namespaceSelectors"} {
		if _, ok := take(spec, k); ok {
			c.drop("spec."+k, "namespaces chosen by labels are not carried: Watchword has no ClusterExternalSecret, and convert cannot see the cluster's namespaces; list them in spec.namespaces, or write an ExternalSecret into each")
		}
	}
	if _, ok := take(spec, "refreshTime"); ok {
		c.note("spec.refreshTime", "how often ESO looks for new namespaces: not needed for ExternalSecrets written out per namespace")
	}
	var namespaces []string
	for i, n := range takeList(spec, "namespaces") {
		if s, ok := n.(string); ok && s != "" {
			namespaces = append(namespaces, s)
		} else {
			c.drop(pathIndex("spec.namespaces", i), "not a namespace name")
		}
	}
	esSpec := takeMap(spec, "externalSecretSpec")
	c.leftovers(spec, "spec")
	if esSpec == nil {
		c.drop("spec.externalSecretSpec", "no ExternalSecret spec: nothing is converted")
		return nil
	}
	// The spec is converted, and its findings listed, even when no
	// namespace is listed: they tell what listing them would carry. The
	// ExternalSecret rule reports paths from spec; here they are under
	// spec.externalSecretSpec.
	first := len(*c.findings)
	converted := c.externalSecret(map[string]any{"metadata": maps.Clone(esMeta), "spec": esSpec})
	for i := first; i < len(*c.findings); i++ {
		f := &(*c.findings)[i]
		if rest, ok := strings.CutPrefix(f.Path, "spec"); ok {
			f.Path = "spec.externalSecretSpec" + rest
		}
	}
	if len(namespaces) == 0 {
		c.drop("spec", "no namespace is listed in spec.namespaces: no ExternalSecret is written")
		return nil
	}
	if len(converted) == 0 {
		return nil
	}
	out := make([]map[string]any, 0, len(namespaces))
	for _, ns := range namespaces {
		es := deepCopyJSON(converted[0])
		es["metadata"].(map[string]any)["namespace"] = ns
		out = append(out, es)
	}
	c.note("", fmt.Sprintf("written as %d ExternalSecrets named %q, one in each namespace of spec.namespaces", len(out), name))
	return out
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
