package kubernetes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/internal/engine"
)

// appliedCopies are annotations in which deployment tools keep the whole
// object they applied: for a Secret, its data (kubectl apply, kapp,
// Rancher's apply). They are metadata in name only, so a metadata read
// leaves them out.
var appliedCopies = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"kapp.k14s.io/original",
	"objectset.rio.cattle.io/applied",
}

// holdsData tells whether an annotation's value holds one of the Secret's
// values, as it is or in base64: a copy of the data under a name that no
// list of tools can foresee is left out too.
func holdsData(value string, data map[string][]byte) bool {
	for _, v := range data {
		if len(v) < 4 {
			// Values this short are found by chance in any text.
			continue
		}
		if strings.Contains(value, string(v)) || strings.Contains(value, base64.StdEncoding.EncodeToString(v)) {
			return true
		}
	}
	return false
}

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
	annotations := map[string]string{}
	for k, v := range s.Annotations {
		if !slices.Contains(appliedCopies, k) && !holdsData(v, s.Data) {
			annotations[k] = v
		}
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
