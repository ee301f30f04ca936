package externalsecret

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// writeResult says what a write did.
type writeResult struct {
	action          string // Created, Updated or "" (unchanged)
	changedKeys     []string
	resourceVersion string
	keys            []string // keys this ExternalSecret now holds in the target
}

func conflict(format string, args ...any) error {
	return failure.Terminalf(failure.TargetConflict, format, args...)
}

// writeTarget writes the target as the creation policy says, and records
// the write, so that the watch event of its own write does not queue the
// ExternalSecret again and a refresh that brings nothing new neither reads
// nor writes the target.
func (r *Reconciler) writeTarget(ctx context.Context, es *v1alpha1.ExternalSecret, res *engine.Result) (*writeResult, error) {
	var w *writeResult
	var err error
	switch {
	case es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone:
		return &writeResult{keys: slices.Sorted(maps.Keys(res.Data))}, nil
	case isConfigMap(es):
		// Refused before anything is read or written: the ConfigMap keeps
		// what it holds.
		if err = secretValuesRefused(es, res); err != nil {
			return nil, err
		}
		w, err = r.writeOwnerConfigMap(ctx, es, res)
	case es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyMerge:
		w, err = r.writeMerge(ctx, es, res)
	default:
		w, err = r.writeOwner(ctx, es, res)
	}
	if err != nil {
		return nil, failure.Rejected(err, failure.TargetRejected)
	}
	if w.resourceVersion == "" {
		return w, nil
	}
	rec := ownWrite{resourceVersion: w.resourceVersion}
	if es.Spec.Target.CreationPolicy != v1alpha1.CreationPolicyMerge {
		rec.sum, rec.hasSum = resultSum(res), true
	}
	r.ownWrites.Store(ownKey(es), rec)
	return w, nil
}

// writeOwner creates or updates a target that this ExternalSecret owns.
func (r *Reconciler) writeOwner(ctx context.Context, es *v1alpha1.ExternalSecret, res *engine.Result) (*writeResult, error) {
	name := targetindex.Name(es)
	if _, known := r.targetVersion(ctx, es); !known {
		// The metadata cache has no such Secret: create it without a read
		// first. Should it exist after all, the read below handles it.
		w, err := r.createOwned(ctx, es, name, res)
		if !apierrors.IsAlreadyExists(err) {
			return w, err
		}
	}
	sum := resultSum(res)
	if r.unchangedSinceWrite(ctx, es, sum) {
		// Neither our data nor the Secret changed since we wrote it: no
		// read, no write.
		return &writeResult{resourceVersion: r.writtenVersion(es), keys: slices.Sorted(maps.Keys(res.Data))}, nil
	}
	var cur corev1.Secret
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &cur)
	if apierrors.IsNotFound(err) {
		return r.createOwned(ctx, es, name, res)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %q: %w", name, err)
	}
	if err := r.checkOwnable(es, &cur, "Secret"); err != nil {
		return nil, err
	}
	adopting := !ownedBy(&cur, es)
	desired := cur.DeepCopy()
	applyOwned(desired, es, res)
	if ptr.Deref(cur.Immutable, false) {
		if err := immutableChange(name, &cur, desired); err != nil {
			return nil, err
		}
	}
	if desired.Type != cur.Type {
		if adopting {
			// Adoption never deletes: the Secret is someone else's
			// until it is adopted, and its type cannot change in place.
			return nil, adoptionTypeMismatch(name, cur.Type, desired.Type)
		}
		// The type of a Secret is immutable: replace our own Secret.
		if err := r.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}); err != nil {
			return nil, fmt.Errorf("replacing Secret %q to change its type: %w", name, err)
		}
		w, err := r.createOwned(ctx, es, name, res)
		if err != nil {
			return nil, fmt.Errorf("re-creating Secret %q with its new type: %w", name, err)
		}
		w.action = "Updated"
		return w, nil
	}
	changed := diffKeys(cur.Data, desired.Data)
	if len(changed) == 0 && maps.Equal(cur.Labels, desired.Labels) && maps.Equal(cur.Annotations, desired.Annotations) &&
		ptr.Deref(cur.Immutable, false) == ptr.Deref(desired.Immutable, false) &&
		slices.EqualFunc(cur.OwnerReferences, desired.OwnerReferences, func(a, b metav1.OwnerReference) bool {
			return a.UID == b.UID && ptr.Deref(a.Controller, false) == ptr.Deref(b.Controller, false)
		}) {
		return &writeResult{resourceVersion: cur.ResourceVersion, keys: slices.Sorted(maps.Keys(res.Data))}, nil
	}
	// The update carries cur's resourceVersion: a concurrent writer makes
	// it fail with a conflict instead of being overwritten.
	if err := r.Client.Update(ctx, desired); err != nil {
		if adopting && apierrors.IsForbidden(err) && cur.Annotations[conditions.AllowWriteAnnotation] != "true" {
			// The admission policy shipped with Watchword refuses an
			// adoption without the owner's consent.
			return nil, fmt.Errorf("adopting Secret %q (where an admission policy guards Watchword's writes, the Secret's owner allows its adoption with the annotation %s: \"true\"): %w",
				name, conditions.AllowWriteAnnotation, err)
		}
		return nil, fmt.Errorf("updating Secret %q: %w", name, err)
	}
	return &writeResult{action: "Updated", changedKeys: changed, resourceVersion: desired.ResourceVersion, keys: slices.Sorted(maps.Keys(res.Data))}, nil
}

func (r *Reconciler) createOwned(ctx context.Context, es *v1alpha1.ExternalSecret, name string, res *engine.Result) (*writeResult, error) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: es.Namespace}}
	applyOwned(s, es, res)
	if err := r.Client.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		return nil, fmt.Errorf("creating Secret %q: %w", name, err)
	}
	keys := slices.Sorted(maps.Keys(res.Data))
	return &writeResult{action: "Created", changedKeys: keys, resourceVersion: s.ResourceVersion, keys: keys}, nil
}

// resultSum digests a target's content. It stays in memory only.
func resultSum(res *engine.Result) [32]byte {
	d := engine.NewDigest()
	d.Add("type", res.Type)
	engine.AddMap(d, "data", res.Data)
	engine.AddMap(d, "label", res.Labels)
	engine.AddMap(d, "annotation", res.Annotations)
	return d.Sum()
}

// ownWrite is what this instance last wrote to a target: its
// resourceVersion, and for an Owner target a digest of its content.
//
// Tuning: the echo of its own write queues nothing and an unchanged refresh
// reads no target; without it and Reconciler.pending, up to 70 % of
// ExternalSecrets had a second GET and PATCH (FINDINGS.md, "Where the tuning
// lives"); if that is affordable, this can go (22 MB at 100,000).
type ownWrite struct {
	resourceVersion string
	sum             [32]byte
	hasSum          bool
}

// unchangedSinceWrite tells, from memory and the metadata cache alone,
// whether the target still holds exactly what this instance wrote and the
// new content is the same.
func (r *Reconciler) unchangedSinceWrite(ctx context.Context, es *v1alpha1.ExternalSecret, sum [32]byte) bool {
	v, ok := r.ownWrites.Load(ownKey(es))
	if !ok {
		return false
	}
	w := v.(ownWrite)
	if !w.hasSum || w.sum != sum || w.resourceVersion == "" {
		return false
	}
	rv, ok := r.targetVersion(ctx, es)
	return ok && rv == w.resourceVersion
}

// writtenVersion is the resourceVersion of this instance's last write of
// the target.
func (r *Reconciler) writtenVersion(es *v1alpha1.ExternalSecret) string {
	if v, ok := r.ownWrites.Load(ownKey(es)); ok {
		return v.(ownWrite).resourceVersion
	}
	return ""
}

// targetVersion reads the target's resourceVersion without reading the
// Secret: an owned target from the metadata cache of labelled Secrets, a
// Merge target from its watch by name. ok is false when the Secret is not
// known there.
func (r *Reconciler) targetVersion(ctx context.Context, es *v1alpha1.ExternalSecret) (string, bool) {
	name := targetindex.Name(es)
	if es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyMerge {
		rv, found, err := r.Named.ResourceVersion(ctx, provider.NamespacedName{Namespace: es.Namespace, Name: name})
		return rv, err == nil && found
	}
	// An owned Secret is in the metadata cache of labelled Secrets; a
	// ConfigMap in the metadata cache of ConfigMaps, which template
	// ConfigMaps need anyway.
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(targetWord(es)))
	if err := r.Meta.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &m); err != nil {
		return "", false
	}
	return m.ResourceVersion, true
}

// checkOwnable refuses a target (a Secret or a ConfigMap, as kind says)
// that someone else owns.
func (r *Reconciler) checkOwnable(es *v1alpha1.ExternalSecret, cur metav1.Object, kind string) error {
	name := cur.GetName()
	if ref := metav1.GetControllerOf(cur); ref != nil {
		if ref.UID == es.UID {
			return nil
		}
		if ref.Kind == "ExternalSecret" && ref.APIVersion == v1alpha1.GroupVersion.String() {
			return conflict("%s %q is already written by ExternalSecret %q, which got there first; choose another spec.target.name or remove that ExternalSecret", kind, name, ref.Name)
		}
		return conflict("%s %q is owned by %s %q; Watchword will not write over it: choose another spec.target.name", kind, name, ref.Kind, ref.Name)
	}
	if claims := mergeClaims(cur); len(claims) > 0 {
		return conflict("%s %q already receives keys from ExternalSecret(s) %s with creationPolicy Merge; use creationPolicy Merge here too, or another spec.target.name",
			kind, name, strings.Join(slices.Sorted(maps.Keys(claims)), ", "))
	}
	if !es.Spec.Target.Adopt {
		merge := ", use creationPolicy Merge"
		if kind == "ConfigMap" {
			merge = ""
		}
		return conflict("%s %q already exists and is not owned by this ExternalSecret; Watchword will not write over it. Set spec.target.adopt: true to take it over%s, or choose another spec.target.name", kind, name, merge)
	}
	return nil
}

// ownedBy tells whether es is the controller of s already: a target it
// created, or adopted earlier.
func ownedBy(s metav1.Object, es *v1alpha1.ExternalSecret) bool {
	ref := metav1.GetControllerOf(s)
	return ref != nil && ref.UID == es.UID
}

// adoptionTypeMismatch refuses to adopt a Secret of another type than the
// one the ExternalSecret writes: a Secret's type cannot change in place,
// and replacing the Secret would delete something that is not Watchword's
// (a Helm release, a service-account token). It is terminal: retrying
// cannot help until the spec or the Secret changes.
func adoptionTypeMismatch(name string, have, want corev1.SecretType) error {
	if tokenTypes[have] {
		return conflict("Secret %q is of type %s, a token that grants access to the cluster, which Watchword never writes or replaces; it was not adopted: choose another spec.target.name", name, have)
	}
	return conflict("Secret %q is of type %s and this ExternalSecret writes type %s; a Secret's type cannot change, and Watchword never deletes a Secret to adopt it, so it was left as it is: set spec.target.template.type to %s to adopt it with its type, or choose another spec.target.name", name, have, want, have)
}

// tokenTypes are the Secret types that grant access to the cluster.
var tokenTypes = map[corev1.SecretType]bool{
	corev1.SecretTypeServiceAccountToken: true,
	corev1.SecretTypeBootstrapToken:      true,
}

// applyOwned makes s hold res, owned by es.
func applyOwned(s *corev1.Secret, es *v1alpha1.ExternalSecret, res *engine.Result) {
	s.Labels, s.Annotations, s.OwnerReferences = ownedMeta(s.Labels, s.Annotations, s.OwnerReferences, es, res)
	s.Type = corev1.SecretType(res.Type)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	s.Data = res.Data
	if es.Spec.Target.Immutable {
		// A Secret made immutable stays so (Kubernetes refuses the way
		// back): turning immutable off later leaves it as it is.
		s.Immutable = ptr.To(true)
	}
}

// ownedMeta is the labels, annotations and owner references of a target
// owned by es: the template's metadata, Watchword's label, the owner
// annotation and es as the controller. The maps given may be changed.
func ownedMeta(labels, annotations map[string]string, refs []metav1.OwnerReference, es *v1alpha1.ExternalSecret, res *engine.Result) (map[string]string, map[string]string, []metav1.OwnerReference) {
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, res.Labels)
	labels[conditions.ManagedByLabel] = conditions.ManagedByValue
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, res.Annotations)
	annotations[conditions.OwnerAnnotation] = es.Name
	ref := metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExternalSecret", Name: es.Name, UID: es.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	owners := slices.DeleteFunc(slices.Clone(refs), func(o metav1.OwnerReference) bool { return o.UID == es.UID })
	// Retain keeps the reference too: the finalizer removes it before the
	// ExternalSecret goes, so garbage collection leaves the target.
	return labels, annotations, append(owners, ref)
}

// releasedMeta is the owner references and annotations of a target that
// outlives es (deletionPolicy Retain): without es's reference and owner
// annotation.
func releasedMeta(refs []metav1.OwnerReference, annotations map[string]string, es *v1alpha1.ExternalSecret) ([]metav1.OwnerReference, map[string]string) {
	refs = slices.DeleteFunc(refs, func(o metav1.OwnerReference) bool { return o.UID == es.UID })
	if annotations[conditions.OwnerAnnotation] == es.Name {
		delete(annotations, conditions.OwnerAnnotation)
	}
	return refs, annotations
}

// immutableChange refuses to change the data or type of an immutable
// target. The Secret keeps what it holds: its readers go on with the data
// they have, and deleting it (which queues the ExternalSecret) has it
// written again with the new data. Only key names are told.
func immutableChange(name string, cur, desired *corev1.Secret) error {
	if desired.Type != cur.Type {
		return failure.Terminalf(failure.TargetImmutable,
			"Secret %q is immutable and this ExternalSecret now writes type %s, not %s: it keeps its data; delete the Secret to have it written again", name, desired.Type, cur.Type)
	}
	changed := diffKeys(cur.Data, desired.Data)
	if len(changed) == 0 {
		return nil
	}
	return immutableKeys("Secret", name, changed)
}

// immutableKeys is the TargetImmutable error of an immutable target
// (kind Secret or ConfigMap) whose data would change in keys changed.
func immutableKeys(kind, name string, changed []string) error {
	const show = 10
	keys := strings.Join(changed[:min(len(changed), show)], ", ")
	if len(changed) > show {
		keys += fmt.Sprintf(" and %d more", len(changed)-show)
	}
	return failure.Terminalf(failure.TargetImmutable,
		"%s %q is immutable (spec.target.immutable) and the data to write differs in keys %s: it keeps its data; delete the %s to have it written again with the new data", kind, name, keys, kind)
}

// writeMerge merges this ExternalSecret's keys into an existing Secret.
func (r *Reconciler) writeMerge(ctx context.Context, es *v1alpha1.ExternalSecret, res *engine.Result) (*writeResult, error) {
	name := targetindex.Name(es)
	// Watch the target by name before reading it, so that a change (or
	// its creation, when it does not exist yet) queues this ExternalSecret.
	if _, _, err := r.Named.ResourceVersion(ctx, provider.NamespacedName{Namespace: es.Namespace, Name: name}); err != nil {
		return nil, err
	}
	var cur corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, failure.Terminalf(failure.TargetMissing,
				"waiting for Secret %q to exist: creationPolicy Merge only adds keys to an existing Secret (use Owner to create it)", name)
		}
		return nil, fmt.Errorf("reading Secret %q: %w", name, err)
	}
	if ref := metav1.GetControllerOf(&cur); ref != nil && ref.Kind == "ExternalSecret" && ref.UID != es.UID {
		return nil, conflict("Secret %q is owned by ExternalSecret %q (creationPolicy Owner), which replaces its data on every sync; merge into another Secret", name, ref.Name)
	}
	if tokenTypes[cur.Type] {
		return nil, conflict("Secret %q is of type %s, a token that grants access to the cluster, which Watchword never writes; choose another spec.target.name", name, cur.Type)
	}
	claims := mergeClaims(&cur)
	ours := slices.Sorted(maps.Keys(res.Data))
	if err := checkMergeOver(&cur, claims, ours); err != nil {
		return nil, err
	}
	for other, keys := range claims {
		if other == es.Name {
			continue
		}
		if both := intersect(keys, ours); len(both) > 0 {
			return nil, conflict("keys %s of Secret %q are already written by ExternalSecret %q, which got there first; map them to other keys",
				strings.Join(both, ", "), name, other)
		}
	}
	desired := cur.DeepCopy()
	if desired.Data == nil {
		desired.Data = map[string][]byte{}
	}
	for _, k := range claims[es.Name] {
		if _, still := res.Data[k]; !still {
			delete(desired.Data, k)
		}
	}
	maps.Copy(desired.Data, res.Data)
	claims[es.Name] = ours
	setMergeClaims(desired, claims)
	changed := diffKeys(cur.Data, desired.Data)
	if len(changed) == 0 && maps.Equal(cur.Annotations, desired.Annotations) {
		return &writeResult{resourceVersion: cur.ResourceVersion, keys: ours}, nil
	}
	if err := r.Client.Update(ctx, desired); err != nil {
		if apierrors.IsForbidden(err) && cur.Annotations[conditions.MergeClaimsAnnotation] == "" && cur.Annotations[conditions.AllowWriteAnnotation] != "true" {
			// The admission policy shipped with Watchword refuses a
			// first merge without the owner's consent.
			return nil, fmt.Errorf("merging keys into Secret %q (where an admission policy guards Watchword's writes, the Secret's owner allows a first merge with the annotation %s: \"true\"): %w",
				name, conditions.AllowWriteAnnotation, err)
		}
		return nil, fmt.Errorf("merging keys into Secret %q: %w", name, err)
	}
	return &writeResult{action: "Updated", changedKeys: changed, resourceVersion: desired.ResourceVersion, keys: ours}, nil
}

// checkMergeOver refuses a merge that would write over keys the Secret
// held before any ExternalSecret merged them (a Helm release's "release",
// a TLS Secret's "tls.key"): they are another owner's data, kept unless
// the Secret's owner allows Watchword's writes with the annotation
// watchword.io/allow-write: "true".
func checkMergeOver(cur *corev1.Secret, claims map[string][]string, ours []string) error {
	if cur.Annotations[conditions.AllowWriteAnnotation] == "true" {
		return nil
	}
	claimed := map[string]bool{}
	for _, keys := range claims {
		for _, k := range keys {
			claimed[k] = true
		}
	}
	var over []string
	for _, k := range ours {
		if _, held := cur.Data[k]; held && !claimed[k] {
			over = append(over, strconv.Quote(k))
		}
	}
	if len(over) == 0 {
		return nil
	}
	what := "key " + over[0] + " of Secret " + strconv.Quote(cur.Name) + " already holds"
	if len(over) > 1 {
		what = "keys " + strings.Join(over, ", ") + " of Secret " + strconv.Quote(cur.Name) + " already hold"
	}
	return conflict("%s data that no ExternalSecret merged there; Watchword will not write over another owner's data: map them to other keys, or, as the Secret's owner, allow it with the annotation %s: \"true\"",
		what, conditions.AllowWriteAnnotation)
}

func mergeClaims(s metav1.Object) map[string][]string {
	claims := map[string][]string{}
	if raw := s.GetAnnotations()[conditions.MergeClaimsAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &claims)
	}
	return claims
}

func setMergeClaims(s *corev1.Secret, claims map[string][]string) {
	if len(claims) == 0 {
		delete(s.Annotations, conditions.MergeClaimsAnnotation)
		return
	}
	raw, _ := json.Marshal(claims)
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[conditions.MergeClaimsAnnotation] = string(raw)
}

// diffKeys lists keys added, changed or removed between two data maps.
func diffKeys(before, after map[string][]byte) []string {
	var out []string
	for k, v := range after {
		if ov, ok := before[k]; !ok || !bytes.Equal(ov, v) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
