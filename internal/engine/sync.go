package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Input is everything the engine needs to compute a target.
type Input struct {
	// Spec is the ExternalSecret's spec.
	Spec *v1alpha1.ExternalSecretSpec
	// Store identifies the store generation in the shared cache.
	Store string
	// Reader is the store's client.
	Reader *Client
	// TemplateSources maps a ConfigMap name to its data, for templateFrom.
	TemplateSources map[string]map[string]string
	// MaxAge lets reads younger than this be reused; 0 reads again.
	MaxAge time.Duration
	// ReadAfter maps remote keys announced changed to when they were: a
	// read of such a key made before that time is not reused, whatever
	// MaxAge allows. One read made after it serves every caller.
	ReadAfter map[string]time.Time
	// Leased are the credentials the caller was issued for the spec's
	// vaultDynamic entry (Leaser), under LeaseRef: never read through the
	// shared cache, since every read issues new ones.
	Leased map[Ref]Object
}

// Result is the computed content of a target.
type Result struct {
	// Data is the Secret's data.
	Data map[string][]byte
	// Type is the Secret's type; empty means Opaque.
	Type string
	// Labels and Annotations come from the template's metadata.
	Labels      map[string]string
	Annotations map[string]string
	// Versions lists every remote object read, sorted by key.
	Versions []v1alpha1.RemoteVersion
	// OldestRead is when the oldest of the reads was made.
	OldestRead time.Time
	// Found counts the matches of each find, by dataFrom entry.
	Found []v1alpha1.FoundCount
	// SecretKeys lists, sorted, the remote keys read whose objects the
	// store did not mark as not secret (Object.NotSecret).
	SecretKeys []string
}

// fetchParallelism bounds concurrent reads for one ExternalSecret.
const fetchParallelism = 4

// RefOf is the remote object a reference reads: its metadata instead of
// its value with metadataPolicy Fetch.
func RefOf(r v1alpha1.RemoteReference) Ref {
	return Ref{Key: r.Key, Version: r.Version, Metadata: r.MetadataPolicy == v1alpha1.MetadataFetch}
}

// Refs lists the unique remote objects a spec names, in first-use order:
// not those its finds match, which only a listing of the store tells.
func Refs(spec *v1alpha1.ExternalSecretSpec) []Ref {
	seen := map[Ref]bool{}
	var out []Ref
	add := func(r v1alpha1.RemoteReference) {
		ref := RefOf(r)
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	for _, d := range spec.DataFrom {
		if d.RemoteRef != nil {
			add(*d.RemoteRef)
		}
	}
	for _, d := range spec.Data {
		add(d.RemoteRef)
	}
	return out
}

// Sync lists the store for the spec's finds, reads what the spec names
// and its finds matched, and renders the target's content.
func (f *Fetcher) Sync(ctx context.Context, in Input) (*Result, error) {
	found, err := find(ctx, in.Spec, in.Reader)
	if err != nil {
		return nil, err
	}
	objs, oldest, err := f.fetchAll(ctx, in, found)
	if err != nil {
		return nil, err
	}
	if len(in.Leased) > 0 {
		maps.Copy(objs, in.Leased)
		if now := f.clock.Now(); oldest.IsZero() || now.Before(oldest) {
			oldest = now
		}
	}
	return RenderFound(in.Spec, objs, found, in.TemplateSources, oldest)
}

func (f *Fetcher) fetchAll(ctx context.Context, in Input, found Found) (map[Ref]Object, time.Time, error) {
	refs := Refs(in.Spec)
	seen := map[Ref]bool{}
	for _, r := range refs {
		seen[r] = true
	}
	for _, i := range slices.Sorted(maps.Keys(found)) {
		for _, k := range found[i] {
			if r := (Ref{Key: k}); !seen[r] {
				seen[r] = true
				refs = append(refs, r)
			}
		}
	}
	if len(refs) > MaxObjects {
		return nil, time.Time{}, &FindError{Entry: -1, Problem: fmt.Sprintf("the finds and references name %d remote objects; an ExternalSecret reads at most %d: narrow the finds", len(refs), MaxObjects)}
	}
	results := make([]Fetched, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchParallelism)
	for i, ref := range refs {
		g.Go(func() error {
			got, err := f.Get(gctx, in.Store, in.Reader, ref, maxAgeFor(in, ref, f.clock.Now()))
			if err != nil {
				return fmt.Errorf("reading remote key %q%s: %w", ref.Key, versionSuffix(ref.Version), err)
			}
			results[i] = got
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, time.Time{}, err
	}
	objs := make(map[Ref]Object, len(refs))
	var oldest time.Time
	for i, ref := range refs {
		objs[ref] = results[i].Object
		if oldest.IsZero() || results[i].FetchedAt.Before(oldest) {
			oldest = results[i].FetchedAt
		}
	}
	return objs, oldest, nil
}

// maxAgeFor is how old a read of ref may be: no older than the input's
// MaxAge, and made after the key was last announced changed.
func maxAgeFor(in Input, ref Ref, now time.Time) time.Duration {
	at, ok := in.ReadAfter[ref.Key]
	if !ok || in.MaxAge <= 0 {
		return in.MaxAge
	}
	return max(min(in.MaxAge, now.Sub(at)), 0)
}

func versionSuffix(v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf(" (version %q)", v)
}

// Render maps fetched objects to Secret keys and applies the template.
// Finds match nothing: a spec with finds is rendered by RenderFound.
func Render(spec *v1alpha1.ExternalSecretSpec, objs map[Ref]Object, sources map[string]map[string]string, oldest time.Time) (*Result, error) {
	return RenderFound(spec, objs, nil, sources, oldest)
}

// RenderFound maps fetched objects to Secret keys, with the keys each find
// matched, and applies the template.
func RenderFound(spec *v1alpha1.ExternalSecretSpec, objs map[Ref]Object, found Found, sources map[string]map[string]string, oldest time.Time) (*Result, error) {
	data := map[string][]byte{}
	for i, d := range spec.DataFrom {
		fields, err := dataFromEntry(i, d, objs, found[i])
		if err != nil {
			return nil, err
		}
		maps.Copy(data, fields)
	}
	for _, d := range spec.Data {
		ref := RefOf(d.RemoteRef)
		b, err := Extract(ref.Key, objs[ref], d.RemoteRef.Property)
		if err != nil {
			return nil, err
		}
		if b, err = decodeValue(d.RemoteRef.DecodingStrategy, ref.Key, valueName(d.RemoteRef.Property), b); err != nil {
			return nil, err
		}
		data[d.SecretKey] = b
	}
	res := &Result{Data: data, Versions: versionsOf(objs), OldestRead: oldest, Found: foundCounts(found), SecretKeys: secretKeys(objs)}
	if t := spec.Target.Template; t != nil {
		if err := applyTemplate(t, res, sources); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(spec.DataFrom, func(d v1alpha1.ExternalSecretDataFrom) bool { return d.RegistryToken != nil }) {
		registryTarget(spec.Target.Template, res)
	}
	return res, nil
}

// DockerConfigJSONType is the Secret type of image pull credentials, the
// type a registryToken entry writes unless the template sets it, and
// DockerConfigJSONKey its one key.
const (
	DockerConfigJSONType = "kubernetes.io/dockerconfigjson"
	DockerConfigJSONKey  = ".dockerconfigjson"
)

// registryTarget makes the target of a registryToken entry a pull secret
// (the kubelet takes only this type in imagePullSecrets) holding only
// .dockerconfigjson unless a template rendered the data: the token's
// other fields (RegistryTemplateKeys) are there for templates.
func registryTarget(t *v1alpha1.ExternalSecretTemplate, res *Result) {
	if res.Type == "" {
		res.Type = DockerConfigJSONType
	}
	if t != nil && (len(t.Data) > 0 || len(t.TemplateFrom) > 0) {
		return
	}
	for _, k := range RegistryTemplateKeys {
		delete(res.Data, k)
	}
}

// RegistryTemplateKeys are the fields of a registry token besides
// .dockerconfigjson, the keys of External Secrets Operator's
// ECRAuthorizationToken generator (ECR) and GCRAccessToken generator
// (GAR): templates may use them, and without a template they are left out
// of the target.
var RegistryTemplateKeys = []string{"username", "password", "proxy_endpoint", "expires_at", "expiry"}

// dataFromEntry is the Secret keys of dataFrom entry i: the fields of its
// remote object, or each object its find matched whole under the key of
// its name; renamed by its rewrite rules.
func dataFromEntry(i int, d v1alpha1.ExternalSecretDataFrom, objs map[Ref]Object, matched []string) (map[string][]byte, error) {
	from := map[string]string{}
	var data map[string][]byte
	if v := d.VaultDynamic; v != nil {
		o, ok := objs[LeaseRef(v)]
		if !ok {
			return nil, fmt.Errorf("the credentials of vaultDynamic path %q were not issued: %w", v.Path, ErrNotFound)
		}
		fields := maps.Clone(o.Fields)
		for k := range fields {
			from[k] = fmt.Sprintf("field %q of vaultDynamic path %q", k, v.Path)
		}
		return rewriteKeys(i, d.Rewrite, fields, from, nil)
	}
	if t := d.RegistryToken; t != nil {
		o, ok := objs[LeaseRef(RegistryLease(t))]
		if !ok {
			return nil, fmt.Errorf("the %s registry token was not issued: %w", t.Registry, ErrNotFound)
		}
		fields := maps.Clone(o.Fields)
		for k := range fields {
			from[k] = fmt.Sprintf("field %q of the %s registry token", k, t.Registry)
		}
		return rewriteKeys(i, d.Rewrite, fields, from, nil)
	}
	if r := d.RemoteRef; r != nil {
		ref := RefOf(*r)
		fields, err := ExtractAll(ref.Key, objs[ref], r.Property)
		if err != nil {
			return nil, err
		}
		if err = decodeFields(r.DecodingStrategy, ref.Key, fields, fieldName); err != nil {
			return nil, err
		}
		if len(d.Rewrite) == 0 {
			return fields, nil
		}
		data = fields
		for k := range fields {
			from[k] = fmt.Sprintf("field %q of remote key %q", k, ref.Key)
		}
		return rewriteKeys(i, d.Rewrite, data, from, nil)
	}
	// A find's rewrites apply to the remote keys as the store names them
	// (as External Secrets Operator's do), then each '/' left becomes '_'.
	data = make(map[string][]byte, len(matched))
	for _, k := range matched {
		b, err := Extract(k, objs[Ref{Key: k}], "")
		if err != nil {
			return nil, err
		}
		if b, err = decodeValue(d.Find.DecodingStrategy, k, "the value", b); err != nil {
			return nil, err
		}
		data[k], from[k] = b, fmt.Sprintf("remote key %q", k)
	}
	return rewriteKeys(i, d.Rewrite, data, from, findKey)
}

// valueName names the value a data[] entry selects, for an error.
func valueName(property string) string {
	if property == "" {
		return "the value"
	}
	return fmt.Sprintf("the value of property %q", property)
}

// fieldName names a field of a dataFrom entry's object, for an error.
func fieldName(field string) string { return fmt.Sprintf("field %q", field) }

// secretKeys lists the remote keys of objs whose store did not mark them
// as not secret, sorted and once each.
func secretKeys(objs map[Ref]Object) []string {
	var out []string
	for ref, o := range objs {
		if !o.NotSecret && !slices.Contains(out, ref.Key) {
			out = append(out, ref.Key)
		}
	}
	slices.Sort(out)
	return out
}

func versionsOf(objs map[Ref]Object) []v1alpha1.RemoteVersion {
	seen := map[v1alpha1.RemoteVersion]bool{}
	var out []v1alpha1.RemoteVersion
	for ref, o := range objs {
		if ref.Metadata {
			// Metadata has no version; its object's version is told
			// by a read of its value, if the spec makes one.
			continue
		}
		v := v1alpha1.RemoteVersion{Key: ref.Key, Version: o.Version}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// applyTemplate renders the template over res.Data and replaces or merges
// the result into it. templateFrom entries apply in order, then data and
// metadata, which win (as External Secrets Operator orders them).
func applyTemplate(t *v1alpha1.ExternalSecretTemplate, res *Result, sources map[string]map[string]string) error {
	ctx := templateContext(res.Data)
	from, err := renderTemplateFrom(t.TemplateFrom, sources, ctx)
	if err != nil {
		return err
	}
	rendered := from.data
	for _, name := range slices.Sorted(maps.Keys(t.Data)) {
		b, rerr := renderTemplate(name, t.Data[name], ctx)
		if rerr != nil {
			return rerr
		}
		rendered[name] = b
	}
	labels, err := renderLabels(t.Metadata.Labels, ctx)
	if err != nil {
		return err
	}
	annotations, err := renderAnnotations(t.Metadata.Annotations, ctx)
	if err != nil {
		return err
	}
	res.Labels, res.Annotations = mergeMeta(from.labels, labels), mergeMeta(from.annotations, annotations)
	res.Type = t.Type
	// As External Secrets Operator does: any templateFrom entry, even one
	// for labels or annotations only, makes the template the data's
	// source (mergePolicy Merge keeps the fetched keys).
	if len(t.Data) == 0 && len(t.TemplateFrom) == 0 {
		return nil
	}
	if t.MergePolicy == v1alpha1.TemplateMergeMerge {
		maps.Copy(res.Data, rendered)
	} else {
		res.Data = rendered
	}
	return nil
}

// mergeMeta is base with over's entries winning; nil when both are empty.
func mergeMeta(base, over map[string]string) map[string]string {
	if len(base) == 0 {
		return over
	}
	out := maps.Clone(base)
	maps.Copy(out, over)
	return out
}

// RenderData renders templates (a field to a Go text/template) over data,
// with the functions and limits of an ExternalSecret's templates: the
// rendered fields, and with merge the fields of data too, the rendered
// ones winning. A publisher renders what it publishes with it.
func RenderData(templates map[string]string, merge bool, data map[string][]byte) (map[string][]byte, error) {
	ctx := templateContext(data)
	out := map[string][]byte{}
	if merge {
		maps.Copy(out, data)
	}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		b, err := renderTemplate(name, templates[name], ctx)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// templateContext exposes the fetched data as .data.KEY and, for
// convenience, as .KEY at the top level.
func templateContext(data map[string][]byte) map[string]any {
	strs := make(map[string]string, len(data))
	ctx := make(map[string]any, len(data)+1)
	for k, v := range data {
		strs[k] = string(v)
		ctx[k] = string(v)
	}
	ctx["data"] = strs
	return ctx
}
