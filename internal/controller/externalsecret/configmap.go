package externalsecret

// ConfigMap targets (spec.target.kind: ConfigMap): non-secret
// configuration from a store, written by the rules of an owned Secret
// target (ownership, adoption, drift repair, deletionPolicy, immutable).
// Creation policy Merge is refused at admission for them.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// clusterCABundle is the ConfigMap that Kubernetes publishes in every
// namespace with the cluster's CA certificates, and rewrites whenever it
// differs: a target of that name would be a tug of war, and breaks every
// pod that trusts the API server through it.
const clusterCABundle = "kube-root-ca.crt"

// isConfigMap tells whether an ExternalSecret writes a ConfigMap.
func isConfigMap(es *v1alpha1.ExternalSecret) bool {
	return es.Spec.Target.Kind == v1alpha1.TargetConfigMap
}

// targetWord is the kind of the target, for messages and the metadata
// cache: "Secret" or "ConfigMap".
func targetWord(es *v1alpha1.ExternalSecret) string {
	if isConfigMap(es) {
		return "ConfigMap"
	}
	return "Secret"
}

// ownKey is where this instance records its writes of an ExternalSecret's
// target (ownWrites): "NS/NAME" for a Secret, "ConfigMap/NS/NAME" for a
// ConfigMap, so that a Secret and a ConfigMap of one name stay apart.
func ownKey(es *v1alpha1.ExternalSecret) string {
	return ownKeyOf(targetWord(es), es.Namespace, targetindex.Name(es))
}

func ownKeyOf(kind, ns, name string) string {
	if kind == "ConfigMap" {
		return "ConfigMap/" + ns + "/" + name
	}
	return ns + "/" + name
}

// maxNamed bounds the remote keys a refusal names.
const maxNamed = 10

// secretValuesRefused refuses to write values the store did not mark as
// not secret into a ConfigMap, unless the ExternalSecret allows it. Values
// rendered from a templateFrom Secret count as secret too. Only key and
// object names are told.
func secretValuesRefused(es *v1alpha1.ExternalSecret, res *engine.Result) error {
	if es.Spec.Target.AllowSecretValues {
		return nil
	}
	var from []string
	for _, k := range res.SecretKeys {
		from = append(from, "remote key "+quote(k))
	}
	for _, n := range templateSecretNames(es) {
		from = append(from, "template Secret "+quote(n))
	}
	if len(from) == 0 {
		return nil
	}
	named := strings.Join(from[:min(len(from), maxNamed)], ", ")
	if len(from) > maxNamed {
		named += fmt.Sprintf(" and %d more", len(from)-maxNamed)
	}
	return failure.Terminalf(failure.SecretValuesNotAllowed,
		"ConfigMap %q would hold values of %s, which the store does not mark as not secret; nothing was written (the ConfigMap keeps what it holds): write them to a Secret target, mark them not secret in the store where it can (docs/api.md, ConfigMap targets), or set spec.target.allowSecretValues: true if they are not secret",
		targetindex.Name(es), named)
}

// writeOwnerConfigMap creates or updates a ConfigMap that this
// ExternalSecret owns, as writeOwner does a Secret.
func (r *Reconciler) writeOwnerConfigMap(ctx context.Context, es *v1alpha1.ExternalSecret, res *engine.Result) (*writeResult, error) {
	name := targetindex.Name(es)
	if name == clusterCABundle {
		return nil, conflict("ConfigMap %q is the cluster's CA bundle, published in every namespace by Kubernetes, which rewrites it; Watchword never writes it, even with adopt: name the target otherwise (spec.target.name)", name)
	}
	keys := slices.Sorted(maps.Keys(res.Data))
	if _, known := r.targetVersion(ctx, es); !known {
		// The metadata cache has no such ConfigMap: create it without a
		// read first. Should it exist after all, the read below handles
		// it.
		w, err := r.createOwnedConfigMap(ctx, es, name, res)
		if !apierrors.IsAlreadyExists(err) {
			return w, err
		}
	}
	if r.unchangedSinceWrite(ctx, es, resultSum(res)) {
		return &writeResult{resourceVersion: r.writtenVersion(es), keys: keys}, nil
	}
	var cur corev1.ConfigMap
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &cur)
	if apierrors.IsNotFound(err) {
		return r.createOwnedConfigMap(ctx, es, name, res)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %q: %w", name, err)
	}
	if err := r.checkOwnable(es, &cur, "ConfigMap"); err != nil {
		return nil, err
	}
	adopting := !ownedBy(&cur, es)
	desired := cur.DeepCopy()
	applyOwnedConfigMap(desired, es, res)
	changed := diffKeys(configMapData(&cur), configMapData(desired))
	if ptr.Deref(cur.Immutable, false) && len(changed) > 0 {
		return nil, immutableKeys("ConfigMap", name, changed)
	}
	if len(changed) == 0 && maps.Equal(cur.Labels, desired.Labels) && maps.Equal(cur.Annotations, desired.Annotations) &&
		ptr.Deref(cur.Immutable, false) == ptr.Deref(desired.Immutable, false) &&
		slices.EqualFunc(cur.OwnerReferences, desired.OwnerReferences, func(a, b metav1.OwnerReference) bool {
			return a.UID == b.UID && ptr.Deref(a.Controller, false) == ptr.Deref(b.Controller, false)
		}) {
		return &writeResult{resourceVersion: cur.ResourceVersion, keys: keys}, nil
	}
	// The update carries cur's resourceVersion: a concurrent writer makes
	// it fail with a conflict instead of being overwritten.
	if err := r.Client.Update(ctx, desired); err != nil {
		if adopting && apierrors.IsForbidden(err) && cur.Annotations[conditions.AllowWriteAnnotation] != "true" {
			return nil, fmt.Errorf("adopting ConfigMap %q (where an admission policy guards Watchword's writes, the ConfigMap's owner allows its adoption with the annotation %s: \"true\"): %w",
				name, conditions.AllowWriteAnnotation, err)
		}
		return nil, fmt.Errorf("updating ConfigMap %q: %w", name, err)
	}
	return &writeResult{action: "Updated", changedKeys: changed, resourceVersion: desired.ResourceVersion, keys: keys}, nil
}

func (r *Reconciler) createOwnedConfigMap(ctx context.Context, es *v1alpha1.ExternalSecret, name string, res *engine.Result) (*writeResult, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: es.Namespace}}
	applyOwnedConfigMap(cm, es, res)
	if err := r.Client.Create(ctx, cm); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		return nil, fmt.Errorf("creating ConfigMap %q: %w", name, err)
	}
	keys := slices.Sorted(maps.Keys(res.Data))
	return &writeResult{action: "Created", changedKeys: keys, resourceVersion: cm.ResourceVersion, keys: keys}, nil
}

// applyOwnedConfigMap makes cm hold res, owned by es: the labels,
// annotations and owner reference of an owned Secret, UTF-8 values in
// data and the others in binaryData.
func applyOwnedConfigMap(cm *corev1.ConfigMap, es *v1alpha1.ExternalSecret, res *engine.Result) {
	cm.Labels, cm.Annotations, cm.OwnerReferences = ownedMeta(cm.Labels, cm.Annotations, cm.OwnerReferences, es, res)
	cm.Data, cm.BinaryData = splitConfigMapData(res.Data)
	if es.Spec.Target.Immutable {
		cm.Immutable = ptr.To(true)
	}
}

// splitConfigMapData puts each value that is UTF-8 text in data and the
// others in binaryData; nil for an empty half.
func splitConfigMapData(in map[string][]byte) (data map[string]string, binary map[string][]byte) {
	for k, v := range in {
		if utf8.Valid(v) {
			if data == nil {
				data = map[string]string{}
			}
			data[k] = string(v)
			continue
		}
		if binary == nil {
			binary = map[string][]byte{}
		}
		binary[k] = v
	}
	return data, binary
}

// configMapData is a ConfigMap's data and binaryData as one map.
func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	maps.Copy(out, cm.BinaryData)
	return out
}

// cleanConfigMap lets a ConfigMap of deletionPolicy Retain outlive its
// ExternalSecret: the owner reference and annotation go.
func (r *Reconciler) cleanConfigMap(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	var cur corev1.ConfigMap
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: targetindex.Name(es)}, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	desired := cur.DeepCopy()
	desired.OwnerReferences, desired.Annotations = releasedMeta(desired.OwnerReferences, desired.Annotations, es)
	if err := r.Client.Update(ctx, desired); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cleaning up ConfigMap %q: %w", cur.Name, err)
	}
	return nil
}
