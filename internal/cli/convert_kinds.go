package cli

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// The rules of each kind. Each takes the fields it knows out of the ESO
// object (take*), writes Watchword's, and reports what it cannot carry;
// leftovers reports the rest.

// externalSecret converts an ExternalSecret.
func (c *converter) externalSecret(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	out := newObject("ExternalSecret", meta)
	dst := map[string]any{}

	generator := ""
	entries, _ := spec["dataFrom"].([]any)
	for _, e := range entries {
		if name := ecrGeneratorRef(e); name != "" && generator == "" {
			generator = name
		}
	}
	ref := takeMap(spec, "secretStoreRef")
	switch {
	case generator != "":
		if len(ref) > 0 {
			c.note("spec.secretStoreRef", fmt.Sprintf("replaced by SecretStore %q, the converted ECRAuthorizationToken generator: a registryToken is the ExternalSecret's only source", generator))
		}
		dst["secretStoreRef"] = map[string]any{"name": generator, "kind": "SecretStore"}
	case len(ref) > 0:
		dst["secretStoreRef"] = c.carry(ref, reflect.TypeFor[v1alpha1.StoreRef](), "spec.secretStoreRef")
	default:
		c.drop("spec.secretStoreRef", "no store: Watchword reads every key of an ExternalSecret from one store, named by secretStoreRef (sourceRef per entry is not supported); the converted object needs one")
	}

	interval, hasInterval := take(spec, "refreshInterval")
	switch policy := takeString(spec, "refreshPolicy"); policy {
	case "", "Periodic":
		set(dst, "refreshPolicy", policy)
		if hasInterval {
			dst["refreshInterval"] = interval
		}
	case "OnChange", "CreatedOnce":
		// Neither has a periodic refresh: ESO ignores refreshInterval,
		// and Watchword refuses one that is not 0 (or its default).
		dst["refreshPolicy"] = policy
		if s, _ := interval.(string); hasInterval && s != "0" && s != "0s" {
			c.note("spec.refreshInterval", fmt.Sprintf("not used with refreshPolicy %s: left out", policy))
		}
	default:
		c.drop("spec.refreshPolicy", fmt.Sprintf("refreshPolicy %s is not known", policy))
	}
	if _, ok := take(spec, "syncWindows"); ok {
		c.drop("spec.syncWindows", "Watchword has no sync windows: it refreshes at any time")
	}

	if target := takeMap(spec, "target"); target != nil {
		set(dst, "target", c.target(target))
	}
	var data []any
	for i, e := range takeList(spec, "data") {
		if generator != "" {
			c.drop(pathIndex("spec.data", i), "not carried: the ECR token of the generator is the ExternalSecret's only source (dataFrom registryToken); move this entry to an ExternalSecret of its own")
			continue
		}
		if d := c.dataEntry(e, pathIndex("spec.data", i)); d != nil {
			data = append(data, d)
		}
	}
	set(dst, "data", data)
	var dataFrom []any
	for i, e := range takeList(spec, "dataFrom") {
		path := pathIndex("spec.dataFrom", i)
		if generator != "" {
			if name := ecrGeneratorRef(e); name == generator && len(dataFrom) == 0 {
				d, _ := e.(map[string]any)
				dataFrom = append(dataFrom, c.registryTokenEntry(d, path))
			} else {
				c.drop(path, "not carried: the ECR token of the generator is the ExternalSecret's only source (dataFrom registryToken); move this entry to an ExternalSecret of its own")
			}
			continue
		}
		if d := c.dataFromEntry(e, path); d != nil {
			dataFrom = append(dataFrom, d)
		}
	}
	set(dst, "dataFrom", dataFrom)
	c.leftovers(spec, "spec")
	if len(data) == 0 && len(dataFrom) == 0 {
		c.drop("spec", "no data or dataFrom entry could be carried: the ExternalSecret is not converted")
		return nil
	}
	out["spec"] = dst
	return []map[string]any{out}
}

func (c *converter) target(t map[string]any) map[string]any {
	const path = "spec.target"
	out := map[string]any{}
	set(out, "name", takeString(t, "name"))
	switch p := takeString(t, "creationPolicy"); p {
	case "", "Owner", "Merge", "None":
		set(out, "creationPolicy", p)
	case "Orphan":
		out["creationPolicy"] = "Owner"
		out["deletionPolicy"] = "Retain"
		c.drop(path+".creationPolicy", "Orphan has no equivalent: written as Owner with deletionPolicy Retain (Watchword owns the Secret while the ExternalSecret exists and leaves it when the ExternalSecret is deleted)")
	case "CreateOrMerge":
		out["creationPolicy"] = "Owner"
		c.drop(path+".creationPolicy", "CreateOrMerge has no equivalent: written as Owner, which creates the Secret but refuses to write into an existing one it does not own (use Merge when the Secret exists)")
	default:
		c.drop(path+".creationPolicy", fmt.Sprintf("creationPolicy %s is not known", p))
	}
	// ESO's deletionPolicy says what happens when the remote secrets are
	// gone; Watchword's what happens when the ExternalSecret is deleted.
	switch p := takeString(t, "deletionPolicy"); p {
	case "", "Retain":
		// Watchword keeps the last good data and reports the missing key,
		// as ESO's Retain does.
	default:
		c.drop(path+".deletionPolicy", fmt.Sprintf("deletionPolicy %s (what ESO does when the remote secrets are deleted) has no equivalent: Watchword keeps the Secret's last good data and reports the missing key", p))
	}
	if v, ok := take(t, "immutable"); ok && v == true {
		if p, _ := out["creationPolicy"].(string); p == "" || p == "Owner" {
			out["immutable"] = true
		} else {
			c.drop(path+".immutable", fmt.Sprintf("Watchword makes immutable only a Secret it creates and owns (creationPolicy Owner), not with %s", p))
		}
	}
	manifest, hasManifest := take(t, "manifest")
	if tmpl := takeMap(t, "template"); tmpl != nil {
		set(out, "template", c.template(tmpl, path+".template", false))
	}
	if hasManifest {
		c.manifest(manifest, out, path+".manifest")
	}
	c.leftovers(t, path)
	return out
}

// manifest converts ESO's generic target (target.manifest: apiVersion and
// kind) where Watchword has it: a core/v1 ConfigMap becomes
// target.kind: ConfigMap. Any other kind is dropped.
func (c *converter) manifest(v any, out map[string]any, path string) {
	m, _ := v.(map[string]any)
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	switch {
	case kind == "Secret" && (apiVersion == "" || apiVersion == "v1"):
		return // a Secret is the default target
	case kind != "ConfigMap" || (apiVersion != "" && apiVersion != "v1"):
		c.drop(path, fmt.Sprintf("Watchword writes Secrets and ConfigMaps only, not %s %s", apiVersion, kind))
		return
	case out["creationPolicy"] == "Merge":
		c.drop(path, "Watchword merges into Secrets only: the target stays a Secret; use creationPolicy Owner to write a ConfigMap")
		return
	}
	out["kind"] = "ConfigMap"
	if tmpl, _ := out["template"].(map[string]any); tmpl != nil && tmpl["type"] != nil {
		delete(tmpl, "type")
		c.drop(strings.TrimSuffix(path, ".manifest")+".template.type", "a ConfigMap has no type: left out")
	}
	c.note(path, "written as target.kind: ConfigMap; Watchword writes into a ConfigMap only values the store marks as not secret (AWS Parameter Store String and StringList), unless target.allowSecretValues: true says the others are not secret either (docs/api.md, ConfigMap targets)")
}

// template converts an ESO template. A PushSecret's template has only
// data and mergePolicy.
func (c *converter) template(t map[string]any, path string, push bool) map[string]any {
	out := map[string]any{}
	switch v := takeString(t, "engineVersion"); v {
	case "", "v2":
	default:
		c.drop(path+".engineVersion", fmt.Sprintf("engine %s templates are rendered with Watchword's functions (sprig's, like ESO's v2): check them", v))
	}
	set(out, "mergePolicy", takeString(t, "mergePolicy"))
	if data := takeMap(t, "data"); len(data) > 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if s, ok := data[k].(string); ok {
				c.checkTemplate(s, pathJoin(path+".data", k))
			}
		}
		out["data"] = data
	}
	if push {
		for _, k := range []string{"type", "metadata", "templateFrom"} {
			if _, ok := take(t, k); ok {
				c.drop(pathJoin(path, k), "a PushSecret's template has only data and mergePolicy in Watchword")
			}
		}
		c.leftovers(t, path)
		return out
	}
	set(out, "type", takeString(t, "type"))
	if meta := takeMap(t, "metadata"); meta != nil {
		mo := map[string]any{}
		for _, k := range []string{"labels", "annotations"} {
			if v := takeMap(meta, k); len(v) > 0 {
				for _, key := range slices.Sorted(maps.Keys(v)) {
					if s, ok := v[key].(string); ok {
						c.checkTemplate(s, pathJoin(path+".metadata."+k, key))
					}
				}
				mo[k] = v
			}
		}
		if _, ok := take(meta, "finalizers"); ok {
			c.drop(path+".metadata.finalizers", "Watchword does not set finalizers on the target Secret")
		}
		c.leftovers(meta, path+".metadata")
		set(out, "metadata", mo)
	}
	var from []any
	for i, e := range takeList(t, "templateFrom") {
		if f := c.templateFrom(e, pathIndex(path+".templateFrom", i)); f != nil {
			from = append(from, f)
		}
	}
	set(out, "templateFrom", from)
	c.leftovers(t, path)
	return out
}

func (c *converter) templateFrom(e any, path string) map[string]any {
	f, _ := e.(map[string]any)
	if f == nil {
		return nil
	}
	out := map[string]any{}
	switch target := takeString(f, "target"); {
	case target == "" || strings.EqualFold(target, "Data"):
	case strings.EqualFold(target, "Annotations"):
		out["target"] = "Annotations"
	case strings.EqualFold(target, "Labels"):
		out["target"] = "Labels"
	default:
		c.drop(path, fmt.Sprintf("templateFrom with target %s is not known (Data, Annotations and Labels are)", target))
		return nil
	}
	if v := takeString(f, "valuesDecodingStrategy"); v != "" && v != "None" {
		c.drop(path+".valuesDecodingStrategy", "not supported: decode in the template (b64dec)")
	}
	if lit, ok := take(f, "literal"); ok {
		s, _ := lit.(string)
		c.checkTemplate(s, path+".literal")
		out["literal"] = s
	}
	for _, kind := range []string{"configMap", "secret"} {
		if ref := takeMap(f, kind); ref != nil {
			if r := c.templateRef(ref, path+"."+kind); r != nil {
				out[kind] = r
			}
		}
	}
	c.leftovers(f, path)
	sources := 0
	for _, k := range []string{"literal", "configMap", "secret"} {
		if out[k] != nil {
			sources++
		}
	}
	if sources != 1 {
		c.drop(path, "a templateFrom entry needs exactly one of configMap, secret or literal: not carried")
		return nil
	}
	return out
}

// templateRef carries the name and items of a templateFrom configMap or
// secret.
func (c *converter) templateRef(ref map[string]any, path string) map[string]any {
	var items []any
	for i, it := range takeList(ref, "items") {
		item, _ := it.(map[string]any)
		ipath := pathIndex(path+".items", i)
		out := map[string]any{"key": takeString(item, "key")}
		switch as := takeString(item, "templateAs"); as {
		case "", "Values":
		case "KeysAndValues":
			out["templateAs"] = as
		default:
			c.drop(ipath, fmt.Sprintf("templateAs %s is not known (Values and KeysAndValues are)", as))
			continue
		}
		items = append(items, out)
		c.leftovers(item, ipath)
	}
	name := takeString(ref, "name")
	c.leftovers(ref, path)
	if len(items) == 0 {
		return nil
	}
	return map[string]any{"name": name, "items": items}
}

// checkTemplate reports a template that does not parse with Watchword's
// functions (one that calls now or env, say). Templates are part of the
// manifest, not secret values.
func (c *converter) checkTemplate(text, path string) {
	if _, err := template.New("t").Funcs(engine.FuncMap()).Parse(text); err != nil {
		msg := strings.TrimPrefix(err.Error(), "template: t:")
		if m := undefinedFunc.FindStringSubmatch(msg); m != nil && esoOnlyFuncs[m[1]] != "" {
			c.drop(path, fmt.Sprintf("the template calls External Secrets Operator's %s, which Watchword does not carry: %s; see docs/templates.md", m[1], esoOnlyFuncs[m[1]]))
			return
		}
		c.drop(path, "the template does not parse with Watchword's functions ("+msg+"); see docs/templates.md")
	}
}

// undefinedFunc finds the function named in a template parse error.
var undefinedFunc = regexp.MustCompile(`function "([A-Za-z0-9_]+)" not defined`)

// esoOnlyFuncs are External Secrets Operator's own template functions that
// Watchword does not offer, with what to use instead.
var esoOnlyFuncs = map[string]string{
	"filterCertChain": `for filterCertChain "leaf" use pemLeaf (the first certificate of the bundle); for "intermediate" and "root" use pemChain (every certificate after the first, in order), or filterPEM "CERTIFICATE" for all of them`,
	"rsaDecrypt":      "templates do not decrypt: keep the plaintext in the store (which protects it on its own), or decrypt it before it is stored",
}

// remoteRef carries key, property and version of an ESO remote reference
// and reports its other settings. It returns nil when the entry cannot be
// carried at all.
func (c *converter) remoteRef(r map[string]any, path string) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"key", "property", "version"} {
		set(out, k, takeString(r, k))
	}
	switch p := takeString(r, "metadataPolicy"); p {
	case "", "None":
	case "Fetch":
		out["metadataPolicy"] = p
		c.note(path+".metadataPolicy", "Fetch is carried: Watchword reads the metadata of a kubernetes store's Secrets (their labels and annotations) and of a Vault KV v2 store's secrets (their custom metadata); a store of another provider refuses it with a NotSupported condition")
	default:
		c.drop(path, fmt.Sprintf("metadataPolicy %s is not supported: the entry is not carried", p))
		return nil
	}
	if s := takeString(r, "conversionStrategy"); s != "" && s != "Default" {
		c.drop(path+".conversionStrategy", fmt.Sprintf("conversionStrategy %s is not supported: the value is written as the store returns it", s))
	}
	c.decoding(r, out, path)
	if s := takeString(r, "nullBytePolicy"); s != "" && s != "Ignore" {
		c.drop(path+".nullBytePolicy", fmt.Sprintf("nullBytePolicy %s is not supported", s))
	}
	c.leftovers(r, path)
	if out["key"] == nil {
		c.drop(path+".key", "no key: the entry is not carried")
		return nil
	}
	return out
}

func (c *converter) dataEntry(e any, path string) map[string]any {
	d, _ := e.(map[string]any)
	if d == nil {
		return nil
	}
	if _, ok := take(d, "sourceRef"); ok {
		c.drop(path, "sourceRef (another store or a generator for one entry) is not supported: the entry is not carried")
		return nil
	}
	key := takeString(d, "secretKey")
	ref := c.remoteRef(takeMap(d, "remoteRef"), path+".remoteRef")
	c.leftovers(d, path)
	if ref == nil {
		return nil
	}
	return map[string]any{"secretKey": key, "remoteRef": ref}
}

func (c *converter) dataFromEntry(e any, path string) map[string]any {
	d, _ := e.(map[string]any)
	if d == nil {
		return nil
	}
	if _, ok := take(d, "sourceRef"); ok {
		c.drop(path, "sourceRef (another store or a generator) is not supported: the entry is not carried")
		return nil
	}
	find := takeMap(d, "find")
	rewrite := c.rewrites(takeList(d, "rewrite"), path+".rewrite")
	ext := takeMap(d, "extract")
	c.leftovers(d, path)
	out := map[string]any{}
	switch {
	case find != nil:
		f := c.find(find, path+".find")
		if f == nil {
			return nil
		}
		out["find"] = f
	case ext != nil:
		ref := c.remoteRef(ext, path+".extract")
		if ref == nil {
			return nil
		}
		out["remoteRef"] = ref
	default:
		return nil
	}
	if len(rewrite) > 0 {
		out["rewrite"] = rewrite
	}
	return out
}

// find converts an ESO find: its path, name regexp and tags carry over;
// ESO names each matched secret's key as Watchword does ('/' as '_').
func (c *converter) find(f map[string]any, path string) map[string]any {
	out := map[string]any{}
	set(out, "path", takeString(f, "path"))
	if name := takeMap(f, "name"); name != nil {
		if re := takeString(name, "regexp"); re != "" {
			out["name"] = map[string]any{"regexp": re}
			if strings.HasPrefix(re, "^") && out["path"] != nil {
				c.note(path+".name.regexp", "Watchword matches name.regexp against the whole remote key, path included: check that an anchored expression still matches")
			}
		}
		c.leftovers(name, path+".name")
	}
	if tags := takeMap(f, "tags"); len(tags) > 0 {
		out["tags"] = tags
	}
	decoding := map[string]any{}
	c.decoding(f, decoding, path)
	if v := takeString(f, "conversionStrategy"); v != "" && v != "Default" {
		c.drop(path+".conversionStrategy", fmt.Sprintf("conversionStrategy %s is not supported: values are written as the store holds them", v))
	}
	c.leftovers(f, path)
	if len(out) == 0 {
		c.drop(path, "a find without a path, a name or tags is not carried: it would copy the whole store")
		return nil
	}
	maps.Copy(out, decoding)
	return out
}

// decoding carries a decodingStrategy: Watchword has ESO's four, with the
// same meaning; None, the default, is left out.
func (c *converter) decoding(from, to map[string]any, path string) {
	switch s := takeString(from, "decodingStrategy"); s {
	case "", "None":
	case "Base64", "Base64URL", "Auto":
		to["decodingStrategy"] = s
	default:
		c.drop(path+".decodingStrategy", fmt.Sprintf("decodingStrategy %s is not known (None, Base64, Base64URL, Auto are)", s))
	}
}

// rewrites converts ESO rewrite rules: a regexp rule and a template
// transform carry over, in order.
func (c *converter) rewrites(rules []any, path string) []any {
	var out []any
	for i, r := range rules {
		m, _ := r.(map[string]any)
		p := pathIndex(path, i)
		if m == nil {
			continue
		}
		if tr := takeMap(m, "transform"); tr != nil {
			tmpl := takeString(tr, "template")
			c.checkTemplate(tmpl, p+".transform.template")
			out = append(out, map[string]any{"transform": map[string]any{"template": tmpl}})
			c.leftovers(tr, p+".transform")
		}
		if re := takeMap(m, "regexp"); re != nil {
			out = append(out, map[string]any{"regexp": map[string]any{"source": takeString(re, "source"), "target": takeString(re, "target")}})
			c.leftovers(re, p+".regexp")
		}
		c.leftovers(m, p)
	}
	return out
}

// store converts a SecretStore or a ClusterSecretStore.
func (c *converter) store(kind string, m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	dst := map[string]any{}
	set(dst, "controller", takeString(spec, "controller"))
	if _, ok := take(spec, "retrySettings"); ok {
		c.drop("spec.retrySettings", "Watchword retries with its own backoff")
	}
	if _, ok := take(spec, "refreshInterval"); ok {
		c.note("spec.refreshInterval", "Watchword checks a store when it changes, not on an interval")
	}
	if conds := takeList(spec, "conditions"); len(conds) > 0 {
		if kind != "ClusterSecretStore" {
			c.drop("spec.conditions", "only a ClusterSecretStore has namespace conditions")
		} else {
			c.conditions(conds, dst)
		}
	}
	provider := takeMap(spec, "provider")
	c.leftovers(spec, "spec")
	names := slices.Sorted(maps.Keys(provider))
	if len(names) != 1 {
		c.drop("spec.provider", "a store needs exactly one provider block: the store is not converted")
		return nil
	}
	name := names[0]
	block, _ := provider[name].(map[string]any)
	if block == nil {
		block = map[string]any{}
	}
	path := "spec.provider." + name
	var ok bool
	switch name {
	case "fake":
		ok = c.provider(dst, "fake", block, path, reflect.TypeFor[v1alpha1.FakeProvider]())
	case "kubernetes":
		ok = c.kubernetes(dst, block, path)
	case "vault":
		ok = c.vault(kind, dst, block, path)
	case "aws":
		ok = c.aws(dst, block, path)
	case "azurekv":
		ok = c.azurekv(kind, dst, block, path)
	case "gcpsm":
		ok = c.gcpsm(kind, dst, block, path)
	case "alibaba":
		ok = c.alibaba(kind, dst, block, path)
	case "webhook":
		ok = c.webhook(dst, block, path)
	case "gitlab":
		ok = c.gitlab(dst, block, path)
	case "onepassword":
		ok = c.onepassword(dst, block, path)
	case "conjur":
		ok = c.conjur(dst, block, path)
	case "infisical":
		ok = c.infisical(dst, block, path)
	case "barbican":
		c.drop(path, "convert does not carry ESO's barbican block: write Watchword's barbican block by hand (docs/providers.md); the store is not converted")
		return nil
	default:
		c.drop(path, fmt.Sprintf("Watchword has no %s provider (it has fake, kubernetes, vault, awssm, awsps, azurekv, gcpsm, alibaba, barbican, webhook, gitlab, onepassword, conjur, infisical and plugin): the store is not converted", name))
		return nil
	}
	if !ok {
		return nil
	}
	out := newObject(kind, meta)
	out["spec"] = dst
	return []map[string]any{out}
}

// provider carries block as Watchword's provider block name. A block
// whose auth was not carried at all (a method Watchword does not have)
// makes no store: the store is reported as not converted.
func (c *converter) provider(dst map[string]any, name string, block map[string]any, path string, t reflect.Type) bool {
	carried, _ := c.carry(block, t, path).(map[string]any)
	if auth, ok := carried["auth"].(map[string]any); ok && len(auth) == 0 && name != "awssm" && name != "awsps" {
		c.drop(path+".auth", "no authentication method that Watchword has: the store is not converted")
		return false
	}
	dst[name] = carried
	return true
}

// conditions turns ESO's list of namespace conditions (a namespace may use
// the store when it matches any) into Watchword's namespaces and one
// namespaceSelector (when either is set, a namespace must match one).
func (c *converter) conditions(conds []any, dst map[string]any) {
	var namespaces []any
	var selectors []any
	for i, e := range conds {
		cond, _ := e.(map[string]any)
		p := pathIndex("spec.conditions", i)
		namespaces = append(namespaces, takeList(cond, "namespaces")...)
		if sel := takeMap(cond, "namespaceSelector"); sel != nil {
			selectors = append(selectors, sel)
		}
		if _, ok := take(cond, "namespaceRegexes"); ok {
			c.drop(p+".namespaceRegexes", "namespace regular expressions are not supported: list the namespaces or label them")
		}
		c.leftovers(cond, p)
	}
	if len(namespaces) > 0 {
		seen := map[any]bool{}
		var uniq []any
		for _, n := range namespaces {
			if !seen[n] {
				seen[n] = true
				uniq = append(uniq, n)
			}
		}
		dst["namespaces"] = uniq
	}
	switch len(selectors) {
	case 0:
	case 1:
		dst["namespaceSelector"] = selectors[0]
	default:
		dst["namespaceSelector"] = selectors[0]
		c.drop("spec.conditions", "Watchword takes one namespaceSelector: only the first is carried")
	}
}

func (c *converter) kubernetes(dst map[string]any, b map[string]any, path string) bool {
	if _, ok := take(b, "authRef"); ok {
		c.drop(path+".authRef", "a kubeconfig in a Secret is not supported: use auth.token, auth.cert or auth.serviceAccount")
	}
	if server := takeMap(b, "server"); server != nil {
		if ca := takeMap(server, "caProvider"); ca != nil {
			if typ := takeString(ca, "type"); typ == "Secret" {
				server["caSecretRef"] = ca
			} else {
				c.drop(path+".server.caProvider", fmt.Sprintf("a CA bundle from a %s is not supported: use caBundle or a Secret", typ))
			}
		}
		b["server"] = server
	}
	if _, ok := b["remoteNamespace"]; !ok {
		// ESO's default; Watchword's is the SecretStore's namespace.
		b["remoteNamespace"] = "default"
		c.note(path+".remoteNamespace", "unset, which means default in ESO: written as remoteNamespace: default")
	}
	return c.provider(dst, "kubernetes", b, path, reflect.TypeFor[v1alpha1.KubernetesProvider]())
}

func (c *converter) aws(dst map[string]any, b map[string]any, path string) bool {
	block := ""
	switch s := takeString(b, "service"); s {
	case "SecretsManager":
		block = "awssm"
	case "ParameterStore":
		block = "awsps"
	default:
		c.drop(path, fmt.Sprintf("AWS service %s is not in Watchword's API (only SecretsManager, as awssm, and ParameterStore, as awsps): the store is not converted", s))
		return false
	}
	if auth := takeMap(b, "auth"); auth != nil {
		if ref := takeMap(auth, "secretRef"); ref != nil {
			out := map[string]any{}
			set(out, "accessKeyID", takeMap(ref, "accessKeyIDSecretRef"))
			set(out, "secretAccessKey", takeMap(ref, "secretAccessKeySecretRef"))
			set(out, "sessionToken", takeMap(ref, "sessionTokenSecretRef"))
			c.leftovers(ref, path+".auth.secretRef")
			auth["secretRef"] = out
		}
		b["auth"] = auth
	}
	if auth, _ := b["auth"].(map[string]any); len(auth) == 0 {
		c.note(path, fmt.Sprintf("no AWS auth: External Secrets Operator used the controller's own credentials, which Watchword uses only when a ClusterSecretStore sets %s.auth.controllerCredentials; set auth.jwt (web identity) or auth.secretRef", block))
	}
	return c.provider(dst, block, b, path, reflect.TypeFor[v1alpha1.AWSProvider]())
}
