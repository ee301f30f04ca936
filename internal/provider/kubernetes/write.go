package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// The ownership marker of a published Secret: the annotation names the
// publisher (engine.Owner.ID, such as "PushSecret/ns/name/uid"), and the
// label lets people and tools select what Watchword published.
const (
	PublisherAnnotation = "watchword.io/publisher"
	PublishedLabel      = "watchword.io/published"
	publishedValue      = "true"
	managedByLabel      = "app.kubernetes.io/managed-by"
	// metadataAnnotation records the labels and annotations a publication
	// set, so that one taken out of the destination's metadata is removed
	// from the Secret, and no other.
	metadataAnnotation = "watchword.io/published-metadata"
)

// PutSecret writes the Secret named key in the store's namespace and
// returns its resourceVersion. It creates a Secret that does not exist,
// updates one that carries owner's marker (or none, with owner.Adopt), and
// refuses any other. Labels and annotations of the publication are added
// to those the Secret has; its data is replaced. An update carries the
// resourceVersion that was read, so a concurrent writer is never
// overwritten blindly, and a Secret that already holds the publication is
// not written at all.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	if len(validation.IsDNS1123Subdomain(key)) > 0 {
		return "", failure.Terminalf(failure.RemoteNameInvalid,
			"%q cannot name a Secret in namespace %q: a Secret's name has at most 253 lower-case letters, digits, '-' and '.', and starts and ends with a letter or digit; choose another destination name", key, c.namespace)
	}
	if len(p.Tags) > 0 {
		return "", fmt.Errorf("Secret %s/%s: a Kubernetes Secret has no tags; use metadata.labels instead: %w", c.namespace, key, engine.ErrNotSupported)
	}
	typ := corev1.SecretType(p.Type)
	if typ == "" {
		typ = corev1.SecretTypeOpaque
	}
	cur, err := c.secrets.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: c.namespace}, Type: typ, Data: p.Fields}
		mark(s, p, owner)
		created, cerr := c.secrets.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(cerr) {
			return "", fmt.Errorf("Secret %s/%s was created by someone else while it was being published; checking it again: %w", c.namespace, key, engine.ErrUnavailable)
		}
		if cerr != nil {
			return "", c.classifyWrite(ctx, "create", key, cerr)
		}
		return created.ResourceVersion, nil
	}
	if err != nil {
		return "", c.classify(ctx, key, err)
	}
	if tokenTypes[cur.Type] {
		// Neither adopt nor metadata.type can help: the API refuses a
		// destination of this type, as Watchword never writes a token.
		return "", fmt.Errorf("Secret %s/%s has type %s: it holds a token that grants access to a cluster, and Watchword never writes over one; publish to a Secret of another name (change the destination's name): %w",
			c.namespace, key, cur.Type, engine.ErrNotSupported)
	}
	if err = c.owned(cur, owner, true); err != nil {
		return "", err
	}
	if cur.Type != typ {
		return "", fmt.Errorf("Secret %s/%s has type %s and the destination asks for %s; a Secret's type cannot change: set the destination's metadata.type to %s to publish into it, or delete the Secret so that it is created with type %s: %w",
			c.namespace, key, cur.Type, typ, cur.Type, typ, engine.ErrNotSupported)
	}
	desired := cur.DeepCopy()
	desired.Data = p.Fields
	mark(desired, p, owner)
	if apiequality.Semantic.DeepEqual(cur.Data, desired.Data) && maps.Equal(cur.Labels, desired.Labels) && maps.Equal(cur.Annotations, desired.Annotations) {
		return cur.ResourceVersion, nil
	}
	updated, err := c.secrets.Update(ctx, desired, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return "", fmt.Errorf("Secret %s/%s changed while it was being published; retrying: %w", c.namespace, key, engine.ErrUnavailable)
	}
	if err != nil {
		return "", c.classifyWrite(ctx, "update", key, err)
	}
	return updated.ResourceVersion, nil
}

// tokenTypes are the types of Secrets that hold a token granting access to
// a cluster: the API refuses them as a destination's metadata.type, and
// Watchword writes over none.
var tokenTypes = map[corev1.SecretType]bool{
	corev1.SecretTypeServiceAccountToken: true,
	corev1.SecretTypeBootstrapToken:      true,
}

// DeleteSecret deletes the Secret named key if owner's marker is on it.
// A Secret that does not exist is not an error; one that another owns, or
// no one, is left and reported.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	if c.checkName(key) != nil {
		// No Secret can have such a name: there is nothing to delete.
		return nil
	}
	cur, err := c.secrets.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return c.classify(ctx, key, err)
	}
	if err = c.owned(cur, owner, false); err != nil {
		return err
	}
	// The preconditions make sure that what is deleted is what was checked.
	err = c.secrets.Delete(ctx, key, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("Secret %s/%s changed while it was being deleted; checking it again: %w", c.namespace, key, engine.ErrUnavailable)
	default:
		return c.classifyWrite(ctx, "delete", key, err)
	}
}

// owned tells whether owner may write (or, when writing is false, delete)
// the Secret s, and otherwise says who owns it.
func (c *Client) owned(s *corev1.Secret, owner engine.Owner, writing bool) error {
	got := s.Annotations[PublisherAnnotation]
	switch {
	case got == owner.ID:
		return nil
	case got != "":
		return fmt.Errorf("Secret %s/%s is published by %s; Watchword will not write over or delete it: %w", c.namespace, s.Name, got, engine.ErrNotOwned)
	case writing && owner.Adopt:
		return nil
	}
	who := ""
	if by := s.Labels[managedByLabel]; by != "" {
		who = fmt.Sprintf(" (it is managed by %q)", by)
	} else if len(s.OwnerReferences) > 0 {
		o := s.OwnerReferences[0]
		who = fmt.Sprintf(" (it is owned by %s %q)", o.Kind, o.Name)
	}
	if !writing {
		return fmt.Errorf("Secret %s/%s carries no Watchword publisher marker%s; leaving it: %w", c.namespace, s.Name, who, engine.ErrNotOwned)
	}
	return fmt.Errorf("Secret %s/%s exists and carries no Watchword publisher marker%s; Watchword will not write over it unless the destination sets adopt: true: %w",
		c.namespace, s.Name, who, engine.ErrNotOwned)
}

// publishedMetadata is the record of metadataAnnotation.
type publishedMetadata struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// mark sets the publication's labels and annotations, and the ownership
// marker, among those s has: the ones an earlier publication set and this
// one does not are removed; those set by anyone else are kept.
func mark(s *corev1.Secret, p engine.Publication, owner engine.Owner) {
	var before publishedMetadata
	// The record is trusted only on a Secret this owner published: on one
	// being adopted it may be stale or planted, and removes nothing.
	if rec := s.Annotations[metadataAnnotation]; rec != "" && s.Annotations[PublisherAnnotation] == owner.ID {
		// A record that does not parse removes nothing.
		_ = json.Unmarshal([]byte(rec), &before)
	}
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range before.Labels {
		delete(labels, k)
	}
	maps.Copy(labels, p.Labels)
	labels[PublishedLabel] = publishedValue
	annotations := maps.Clone(s.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, k := range before.Annotations {
		delete(annotations, k)
	}
	maps.Copy(annotations, p.Annotations)
	annotations[PublisherAnnotation] = owner.ID
	delete(annotations, metadataAnnotation)
	if len(p.Labels) > 0 || len(p.Annotations) > 0 {
		rec, _ := json.Marshal(publishedMetadata{Labels: slices.Sorted(maps.Keys(p.Labels)), Annotations: slices.Sorted(maps.Keys(p.Annotations))})
		annotations[metadataAnnotation] = string(rec)
	}
	s.Labels, s.Annotations = labels, annotations
}

// classifyWrite turns an error of a write (verb create, update or delete)
// of Secret name into an engine error class. The API server's refusal of
// an invalid Secret is returned as it is: the error model keeps its
// field paths and reason and drops its text.
func (c *Client) classifyWrite(ctx context.Context, verb, name string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server does not let %s %s Secret %q in namespace %q (verb %q, resource \"secrets\", API group \"\"); a Role bound to it must allow that: %w",
			c.who.describe(ctx, c.reviews), verb, name, c.namespace, verb, engine.ErrPermissionDenied)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return fmt.Errorf("publishing Secret %s/%s: %w", c.namespace, name, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the store's credentials were rejected by the API server (%s): %w", c.who.describe(ctx, nil), engine.ErrPermissionDenied)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("publishing Secret %s/%s: %w", c.namespace, name, engine.ErrThrottled)
	default:
		return fmt.Errorf("publishing Secret %s/%s: %v: %w", c.namespace, name, apiReason(err), engine.ErrUnavailable)
	}
}
