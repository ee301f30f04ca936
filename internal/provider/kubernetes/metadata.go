package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/internal/engine"
)

// lastApplied is the annotation in which kubectl apply keeps the whole
// object it applied: for a Secret, its data. It is metadata in name only,
// so a metadata read leaves it out.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// GetMetadata reads the labels and annotations of one Secret
// (metadataPolicy Fetch): two fields, "labels" and "annotations", each a
// JSON object (empty when the Secret has none), so that the property
// "labels" selects the labels and "labels.app" one of them; the Value is
// both in one JSON object. A pinned
// version must equal the Secret's current resourceVersion, as in
// GetSecret.
func (c *Client) GetMetadata(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	if err := c.checkName(ref.Key); err != nil {
		return engine.Object{}, err
	}
	s, err := c.secrets.Get(ctx, ref.Key, metav1.GetOptions{})
	if err != nil {
		return engine.Object{}, c.classify(ctx, ref.Key, err)
	}
	if ref.Version != "" && ref.Version != s.ResourceVersion {
		return engine.Object{}, fmt.Errorf("Secret %s/%s is at version %s, not the pinned %s; Kubernetes keeps no older versions: %w",
			c.namespace, ref.Key, s.ResourceVersion, ref.Version, engine.ErrNotFound)
	}
	annotations := maps.Clone(s.Annotations)
	delete(annotations, lastApplied)
	if annotations == nil {
		annotations = map[string]string{}
	}
	labels := s.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	all := map[string]map[string]string{"labels": labels, "annotations": annotations}
	obj := engine.Object{Fields: map[string][]byte{}}
	for name, m := range all {
		if obj.Fields[name], err = json.Marshal(m); err != nil {
			return engine.Object{}, fmt.Errorf("encoding the %s of Secret %s/%s: %w", name, c.namespace, ref.Key, err)
		}
	}
	// The whole metadata, for an entry without property: one JSON object
	// whose labels and annotations are objects, not JSON text.
	if obj.Value, err = json.Marshal(all); err != nil {
		return engine.Object{}, fmt.Errorf("encoding the metadata of Secret %s/%s: %w", c.namespace, ref.Key, err)
	}
	return obj, nil
}
