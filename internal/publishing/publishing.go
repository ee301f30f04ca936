// Package publishing writes one destination of a publisher (a PushSecret,
// or an ExternalSecret's publishConnectionDetailsTo) to a store that can
// write, and deletes what the publisher owns there. Both controllers use
// it, so that a destination behaves the same whoever publishes it: the
// ownership marker, the refusal of a foreign remote secret unless adopt,
// no write while the data is unchanged, and nothing deleted without the
// publisher's own marker.
package publishing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// Publisher publishes destinations through the stores of one controller
// class.
type Publisher struct {
	// Client reads stores from the cache.
	Client   client.Reader
	Clients  *storeaccess.Clients
	Recorder record.EventRecorder
	// Class is the controller class whose stores may be written.
	Class string
	// Keys make status.dataHash (engine.DigestKeys); nil: plain SHA-256.
	Keys *engine.DigestKeys
}

// Request is one destination to bring up to date.
type Request struct {
	// Object is the publisher: events name it, and its kind, namespace,
	// name and UID make the ownership marker.
	Object client.Object
	// Kind is the publisher's kind, for the marker and messages.
	Kind string
	// Destination is where to publish.
	Destination v1alpha1.PushSecretDestination
	// Previous is the destination's last status, nil if none.
	Previous *v1alpha1.PushSecretDestinationStatus
	// Publication holds the fields to publish; the destination adds its
	// metadata.
	Publication engine.Publication
	// Keys are the names of the published fields, for events.
	Keys []string
	// Now is the reconcile's time.
	Now metav1.Time
	// ReadBack is how often an unchanged destination is read back and
	// repaired if someone changed it; 0 never.
	ReadBack time.Duration
	// Others are the publisher's status entries of its destinations (this
	// one's among them is ignored): a copy in a former scope that another
	// destination of the same publisher may hold is never deleted.
	Others []v1alpha1.PushSecretDestinationStatus
	// IfNotExists writes only a remote secret that does not exist
	// (updatePolicy IfNotExists): one that exists, the publisher's or
	// not, is read and left as it is.
	IfNotExists bool
}

// Owner is the marker every remote secret of a publisher carries: its
// kind, namespace, name and UID.
func Owner(kind string, obj metav1.Object, adopt bool) engine.Owner {
	return engine.Owner{ID: fmt.Sprintf("%s/%s/%s/%s", kind, obj.GetNamespace(), obj.GetName(), obj.GetUID()), Adopt: adopt}
}

// StoreRef is the store a destination names: a SecretStore named default
// when configRef is absent.
func StoreRef(d v1alpha1.PushSecretDestination) v1alpha1.StoreRef {
	if d.ConfigRef == nil {
		return v1alpha1.StoreRef{Name: "default", Kind: v1alpha1.SecretStoreKind}
	}
	ref := *d.ConfigRef
	if ref.Kind == "" {
		ref.Kind = v1alpha1.SecretStoreKind
	}
	return ref
}

// SameDestination tells whether a status entry is of the destination.
func SameDestination(e v1alpha1.PushSecretDestinationStatus, d v1alpha1.PushSecretDestination) bool {
	ref := StoreRef(d)
	return e.Name == d.Name && e.StoreKind == ref.Kind && e.StoreName == ref.Name
}

// Previous is the entry of the destination among the last status, or nil.
func Previous(entries []v1alpha1.PushSecretDestinationStatus, d v1alpha1.PushSecretDestination) *v1alpha1.PushSecretDestinationStatus {
	for i := range entries {
		if SameDestination(entries[i], d) {
			return &entries[i]
		}
	}
	return nil
}

// Removed lists the entries whose destination is not among dests: a
// destination removed, renamed or moved to another store.
func Removed(entries []v1alpha1.PushSecretDestinationStatus, dests []v1alpha1.PushSecretDestination) []v1alpha1.PushSecretDestinationStatus {
	var out []v1alpha1.PushSecretDestinationStatus
	for _, e := range entries {
		found := false
		for _, d := range dests {
			if SameDestination(e, d) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// Resolve finds a destination's store and checks that a publisher of
// namespace ns may publish there.
func (p *Publisher) Resolve(ctx context.Context, kind, ns string, ref v1alpha1.StoreRef) (*storeaccess.Resolved, error) {
	store, err := storeaccess.Resolve(ctx, p.Client, ns, ref)
	if err != nil {
		if failure.Classify(err).Reason == failure.StoreNotFound && ref.Kind == v1alpha1.ClusterSecretStoreKind {
			return nil, failure.Terminalf(failure.StoreNotFound, "ClusterSecretStore %q not found; create it or fix the destination's configRef", ref.Name)
		}
		if failure.Classify(err).Reason == failure.StoreNotFound {
			return nil, failure.Terminalf(failure.StoreNotFound,
				"SecretStore %q not found in namespace %q; create it or fix the destination's configRef (a SecretStore named default when configRef is absent)", ref.Name, ns)
		}
		return nil, err
	}
	if store.Controller != p.Class {
		return nil, failure.Terminalf(failure.NotSupported,
			"%s is served by controller class %q; a %s publishes only through stores of its own controller class (%q)", store.Describe(), store.Controller, kind, p.Class)
	}
	return store, nil
}

// client is the store's client for a publisher of namespace ns. Through a
// ClusterSecretStore, which publishers of many namespaces share, it is
// confined to the scope of ns (seed 002: the claim's namespace is its
// scope): a Vault path ns/ under the mount, a namespace ns of a Kubernetes
// store's cluster, or names prefixed with "ns-" where a store has no
// scopes. Publishers of two namespaces can then neither see nor touch
// each other's remote secrets, whatever names they choose.
//
// Through a SecretStore, the store's own defaultScope confines it, if set.
func (p *Publisher) client(ctx context.Context, store *storeaccess.Resolved, ns string) (*engine.Client, error) {
	return p.scoped(ctx, store, Scope(store, ns))
}

// scoped is the store's client confined to scope ("" for none).
func (p *Publisher) scoped(ctx context.Context, store *storeaccess.Resolved, scope string) (*engine.Client, error) {
	c, err := p.Clients.Get(ctx, store)
	if err != nil {
		return nil, err
	}
	if scope != "" {
		return c.InScope(scope)
	}
	return c, nil
}

// entryClient is the client of the scope an entry was written in, when
// the entry records it, and otherwise that of the publisher's namespace.
func (p *Publisher) entryClient(ctx context.Context, store *storeaccess.Resolved, ns string, e v1alpha1.PushSecretDestinationStatus) (*engine.Client, error) {
	if e.Scope != nil {
		return p.scoped(ctx, store, *e.Scope)
	}
	return p.client(ctx, store, ns)
}

// Scope is the scope a publisher of namespace ns writes in through store:
// ns for a ClusterSecretStore, the defaultScope of a SecretStore, or ""
// for none.
func Scope(store *storeaccess.Resolved, ns string) string {
	if store.Store.Cluster() {
		return ns
	}
	if s, ok := store.Object.(*v1alpha1.SecretStore); ok {
		return s.Spec.DefaultScope
	}
	return ""
}

// Publish brings one destination up to date: it writes when what it
// publishes changed, or when a read-back is due and shows that someone
// changed the remote secret; otherwise it makes no call to the store. It
// returns the destination's new status entry; on an error, the entry
// keeps what was last published.
func (p *Publisher) Publish(ctx context.Context, req Request) (v1alpha1.PushSecretDestinationStatus, error) {
	d := req.Destination
	ref := StoreRef(d)
	entry := v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name}
	prev := req.Previous
	if prev != nil {
		entry = *prev
	}
	store, err := p.Resolve(ctx, req.Kind, req.Object.GetNamespace(), ref)
	if err != nil {
		return entry, err
	}
	scope := Scope(store, req.Object.GetNamespace())
	pub := PublicationFor(req.Publication, d)
	fill := publicationDigest(string(req.Object.GetUID()), store.ID(), pub)
	hash := p.Keys.Seal(fill)
	var unchanged, sealedNow bool
	settled := prev != nil && (prev.State == v1alpha1.PushPublished || (req.IfNotExists && prev.State == v1alpha1.PushExists))
	if settled && (prev.Scope == nil || *prev.Scope == scope) {
		unchanged, sealedNow = p.Keys.Match(prev.DataHash, fill)
	}
	if unchanged && !sealedNow {
		// Made with the previous key, or none: the same data, recorded
		// again in the current key's form, with no write to the store.
		entry.DataHash = hash
	}
	due := req.ReadBack > 0 && (prev == nil || prev.CheckedTime == nil || !req.Now.Time.Before(prev.CheckedTime.Add(req.ReadBack)))
	if unchanged && !due {
		if entry.Scope == nil {
			// Written before scopes were recorded, in the scope it has
			// now (the data would differ otherwise).
			entry.Scope = &scope
		}
		p.deleteFormer(ctx, req, store, &entry)
		return entry, nil
	}
	c, err := p.client(ctx, store, req.Object.GetNamespace())
	if err != nil {
		return entry, err
	}
	w, err := c.AsWriter()
	if err != nil {
		return entry, err
	}
	repair := false
	if req.IfNotExists {
		obj, rerr := c.GetSecret(ctx, engine.Ref{Key: d.Name})
		switch {
		case rerr == nil:
			return p.exists(ctx, req, store, entry, obj, pub, hash, scope), nil
		case !errors.Is(rerr, engine.ErrNotFound):
			return entry, rerr
		}
		// Missing: created, with the marker.
		repair = unchanged
	} else if unchanged {
		obj, rerr := c.GetSecret(ctx, engine.Ref{Key: d.Name})
		switch {
		case rerr == nil && SameFields(obj, pub.Fields):
			entry.CheckedTime = &req.Now
			if entry.Scope == nil {
				entry.Scope = &scope
			}
			p.deleteFormer(ctx, req, store, &entry)
			return entry, nil
		case rerr == nil || errors.Is(rerr, engine.ErrNotFound):
			repair = true
		default:
			return entry, rerr
		}
	}
	version, err := w.PutSecret(ctx, d.Name, pub, Owner(req.Kind, req.Object, d.Adopt))
	if err != nil {
		return entry, err
	}
	now := req.Now
	entry.State, entry.Reason, entry.Message = v1alpha1.PushPublished, string(failure.Published), ""
	entry.Version, entry.DataHash = version, hash
	entry.PublishedTime, entry.CheckedTime = &now, &now
	if prev != nil && prev.Scope != nil && *prev.Scope != scope && prev.PublishedTime != nil && prev.State != v1alpha1.PushNotOwned {
		// The store's defaultScope changed: the copy in the scope written
		// before is deleted now that this one is written.
		entry.FormerScopes = appendScope(entry.FormerScopes, *prev.Scope)
	}
	entry.Scope = &scope
	where := fmt.Sprintf("%q of %s", d.Name, DescribeStore(req.Object.GetNamespace(), entry))
	entry.Capabilities = c.Capabilities().String()
	if repair {
		count(req.Kind, req.Object.GetNamespace(), entry, string(failure.DriftRepaired))
		p.Recorder.Eventf(req.Object, corev1.EventTypeNormal, string(failure.DriftRepaired),
			"remote secret %s was changed or deleted by someone else; published keys %s again", where, KeyList(req.Keys))
	} else {
		count(req.Kind, req.Object.GetNamespace(), entry, string(failure.Published))
		p.Recorder.Eventf(req.Object, corev1.EventTypeNormal, string(failure.Published), "published keys %s to remote secret %s", KeyList(req.Keys), where)
	}
	p.deleteFormer(ctx, req, store, &entry)
	return entry, nil
}

// exists records a destination whose remote secret exists while
// updatePolicy is IfNotExists: it is left as it is. One this publisher
// published and that still holds what it would publish stays Published;
// any other is in state Exists, with an event when it becomes so. The
// entry keeps publishedTime, so that deletionPolicy Delete still deletes
// a remote secret this publisher created (only while its marker is on
// it).
func (p *Publisher) exists(ctx context.Context, req Request, store *storeaccess.Resolved, entry v1alpha1.PushSecretDestinationStatus,
	obj engine.Object, pub engine.Publication, hash, scope string) v1alpha1.PushSecretDestinationStatus {
	now := req.Now
	prev := req.Previous
	entry.CheckedTime, entry.DataHash = &now, hash
	// The version found, so that a removed destination of the same remote
	// secret (a store swapped for one that points at the same place) is
	// recognised as this one's and not deleted (Current.holds).
	entry.Version = obj.Version
	// Ours: written by this publisher in this scope, whatever state a
	// passing failure left the entry in.
	ours := entry.PublishedTime != nil && (entry.Scope == nil || *entry.Scope == scope)
	if ours && SameFields(obj, pub.Fields) {
		entry.State, entry.Reason, entry.Message = v1alpha1.PushPublished, string(failure.Published), ""
		entry.Scope = &scope
		p.deleteFormer(ctx, req, store, &entry)
		return entry
	}
	if prev != nil && prev.Scope != nil && *prev.Scope != scope && prev.PublishedTime != nil && prev.State != v1alpha1.PushNotOwned {
		// The store's defaultScope changed and the new scope holds a
		// secret of the name, which is left as it is. The copy written
		// in the scope before is remembered, so that it goes with the
		// destination rather than stay untracked; it is not deleted now,
		// as nothing of this publisher's replaced it.
		entry.FormerScopes = appendScope(entry.FormerScopes, *prev.Scope)
	}
	entry.Scope = &scope
	if entry.State != v1alpha1.PushExists {
		where := fmt.Sprintf("%q of %s", entry.Name, DescribeStore(req.Object.GetNamespace(), entry))
		count(req.Kind, req.Object.GetNamespace(), entry, string(failure.Exists))
		p.Recorder.Eventf(req.Object, corev1.EventTypeNormal, string(failure.Exists),
			"remote secret %s exists; updatePolicy IfNotExists leaves it as it is", where)
	}
	entry.State, entry.Reason = v1alpha1.PushExists, string(failure.Exists)
	entry.Message = "the remote secret exists; updatePolicy IfNotExists leaves it as it is (it may differ from the source Secret)"
	return entry
}

// appendScope adds scope to the former scopes once; the oldest goes when
// the list is full (its copy is then left where it is).
func appendScope(scopes []string, scope string) []string {
	if slices.Contains(scopes, scope) {
		return scopes
	}
	if len(scopes) >= maxFormerScopes {
		scopes = scopes[1:]
	}
	return append(scopes, scope)
}

// maxFormerScopes bounds status.formerScopes (the API's MaxItems).
const maxFormerScopes = 8

// deleteFormer deletes the copies a destination left in the scopes it
// was written in before (formerScopes), once its copy in the current
// scope is written: each only if it carries this publisher's marker. A
// scope leaves the list when its copy is deleted, is not there, or is
// another's (with an event); one whose deletion failed stays, for the
// next reconcile. It never fails the destination.
func (p *Publisher) deleteFormer(ctx context.Context, req Request, store *storeaccess.Resolved, entry *v1alpha1.PushSecretDestinationStatus) {
	if len(entry.FormerScopes) == 0 || entry.State != v1alpha1.PushPublished {
		return
	}
	ns := req.Object.GetNamespace()
	var keep []string
	for _, scope := range entry.FormerScopes {
		if entry.Scope != nil && scope == *entry.Scope {
			continue
		}
		if heldElsewhere(req.Others, *entry, scope) {
			// The marker is the publisher's, not the destination's: the
			// copy there may be another destination's own, and stays.
			continue
		}
		where := fmt.Sprintf("%q in former scope %q of %s", entry.Name, scope, DescribeStore(ns, *entry))
		err := p.deleteIn(ctx, store, scope, entry.Name, Owner(req.Kind, req.Object, false))
		switch {
		case err == nil:
			count(req.Kind, ns, *entry, string(failure.Unpublished))
			p.Recorder.Eventf(req.Object, corev1.EventTypeNormal, string(failure.Unpublished),
				"deleted remote secret %s: the store's defaultScope changed and the secret is now published in scope %q", where, *entry.Scope)
		case errors.Is(err, engine.ErrNotFound):
		case errors.Is(err, engine.ErrNotOwned) || failure.Terminal(err):
			_, msg := failure.Describe(err)
			count(req.Kind, ns, *entry, string(failure.Retained))
			p.Recorder.Eventf(req.Object, corev1.EventTypeWarning, string(failure.Retained), "remote secret %s is left in place: %s", where, msg)
		default:
			ctrl.LoggerFrom(ctx).V(1).Info("deleting the copy in a former scope failed; tried again later",
				"destination", entry.Name, "reason", failure.Classify(err).Reason)
			keep = append(keep, scope)
		}
	}
	entry.FormerScopes = keep
}

// heldElsewhere tells whether another destination of the publisher may
// hold the remote secret of entry's name in scope: one of the same name
// written in that scope, or in a scope not recorded.
func heldElsewhere(others []v1alpha1.PushSecretDestinationStatus, entry v1alpha1.PushSecretDestinationStatus, scope string) bool {
	for _, o := range others {
		if o.Name != entry.Name || (o.StoreKind == entry.StoreKind && o.StoreName == entry.StoreName) {
			continue
		}
		if o.Scope == nil || *o.Scope == scope {
			return true
		}
	}
	return false
}

// deleteIn deletes the remote secret name in scope if owner's marker is
// on it.
func (p *Publisher) deleteIn(ctx context.Context, store *storeaccess.Resolved, scope, name string, owner engine.Owner) error {
	c, err := p.scoped(ctx, store, scope)
	if err != nil {
		return err
	}
	w, err := c.AsWriter()
	if err != nil {
		return err
	}
	return w.DeleteSecret(ctx, name, owner)
}

// Failed records a destination's failure in its status entry, and tells
// of a new one in an event. The entry keeps what was last published.
func (p *Publisher) Failed(kind string, obj client.Object, entry v1alpha1.PushSecretDestinationStatus, err error) v1alpha1.PushSecretDestinationStatus {
	class, msg := failure.Describe(err)
	count(kind, obj.GetNamespace(), entry, string(class.Reason))
	switch {
	case class.Reason == failure.NotOwned:
		entry.State = v1alpha1.PushNotOwned
	case class.Terminal:
		entry.State = v1alpha1.PushFailed
	default:
		entry.State = v1alpha1.PushFailing
	}
	msg = Clip(msg, 1024)
	if entry.Reason != string(class.Reason) || entry.Message != msg {
		where := fmt.Sprintf("%q of %s", entry.Name, DescribeStore(obj.GetNamespace(), entry))
		p.Recorder.Eventf(obj, corev1.EventTypeWarning, string(class.Reason), "not published to remote secret %s: %s", where, msg)
	}
	entry.Reason, entry.Message = string(class.Reason), msg
	return entry
}

// Defer keeps a removed destination, unpublished, in the status while a
// current destination fails: nothing already published is deleted until
// the change that removed it has been published everywhere. It is tried
// again with the next reconcile.
func Defer(e v1alpha1.PushSecretDestinationStatus) v1alpha1.PushSecretDestinationStatus {
	e.State, e.Reason = v1alpha1.PushUnpublishing, string(failure.UnpublishDeferred)
	e.Message = "removed from the spec; its remote secret is kept until every current destination is published"
	return e
}

// Current is what a publisher has just published: the status entries of
// its current destinations and the fields they got. Unpublish uses it to
// recognise a removed destination that is the same remote secret as a
// current one (a store swapped for another that points at the same
// place), which it must not delete.
type Current struct {
	Entries []v1alpha1.PushSecretDestinationStatus
	Fields  map[string][]byte
	// EntryFields, when set, are the fields of each entry (in the order
	// of Entries) in place of Fields, for a publisher whose destinations
	// publish different data (a PushSecret with secretSelector).
	EntryFields []map[string][]byte
}

// holds names the current destination whose write obj is: one just
// published with obj's version and fields. Two distinct remote secrets
// taken for one leave an old copy in place, never delete a current one.
func (c *Current) holds(obj engine.Object) (string, bool) {
	if c == nil {
		return "", false
	}
	for i, e := range c.Entries {
		fields, known := c.Fields, true
		if c.EntryFields != nil {
			// An entry refused before any write published nothing.
			fields = c.EntryFields[i]
			known = fields != nil
		}
		same := known && SameFields(obj, fields)
		// A store without versions cannot tell two copies of the same
		// data apart: the remote secret is kept rather than risk it.
		sameVersion := e.Version == obj.Version || obj.Version == ""
		switch {
		case e.State == v1alpha1.PushPublished && same && sameVersion:
			return e.Name, true
		case e.State == v1alpha1.PushExists && sameVersion:
			// A remote secret a current destination found and leaves as
			// it is (updatePolicy IfNotExists), whatever it holds.
			return e.Name, true
		}
	}
	return "", false
}

// Unpublish deletes the remote secret of one status entry if the
// publisher owns it. It returns an error only when it should be tried
// again; a secret that another owns, a store that is gone or cannot
// delete, a secret never written, and one that a current destination has
// just written (cur) are left, with an event.
func (p *Publisher) Unpublish(ctx context.Context, kind string, obj client.Object, e v1alpha1.PushSecretDestinationStatus, cur *Current) error {
	where := fmt.Sprintf("%q of %s", e.Name, DescribeStore(obj.GetNamespace(), e))
	leave := func(why string) error {
		count(kind, obj.GetNamespace(), e, string(failure.Retained))
		p.Recorder.Eventf(obj, corev1.EventTypeWarning, string(failure.Retained), "remote secret %s is left in place: %s", where, why)
		return nil
	}
	if e.State == v1alpha1.PushNotOwned || e.PublishedTime == nil {
		// Never written by this publisher: nothing of ours is there.
		return nil
	}
	store, err := p.Resolve(ctx, kind, obj.GetNamespace(), v1alpha1.StoreRef{Kind: e.StoreKind, Name: e.StoreName})
	if err != nil {
		if failure.Terminal(err) {
			_, msg := failure.Describe(err)
			return leave(msg)
		}
		return err
	}
	for _, scope := range e.FormerScopes {
		// Copies left in scopes of before a defaultScope change go with
		// the destination, if ours and no current destination's.
		if cur != nil && heldElsewhere(cur.Entries, e, scope) {
			continue
		}
		ferr := p.deleteIn(ctx, store, scope, e.Name, Owner(kind, obj, false))
		if ferr != nil && !errors.Is(ferr, engine.ErrNotFound) && !errors.Is(ferr, engine.ErrNotOwned) && !failure.Terminal(ferr) {
			return ferr
		}
	}
	c, err := p.entryClient(ctx, store, obj.GetNamespace(), e)
	if err != nil {
		return err
	}
	w, err := c.AsWriter()
	if err != nil {
		_, msg := failure.Describe(err)
		return leave(msg)
	}
	if cur != nil {
		remote, gerr := c.GetSecret(ctx, engine.Ref{Key: e.Name})
		switch {
		case gerr == nil:
			if name, same := cur.holds(remote); same {
				return leave(fmt.Sprintf("it is the remote secret that destination %q has just published", name))
			}
		case errors.Is(gerr, engine.ErrNotFound):
			return nil
		default:
			// Without knowing what is there, nothing is deleted: tried
			// again later.
			return gerr
		}
	}
	err = w.DeleteSecret(ctx, e.Name, Owner(kind, obj, false))
	switch {
	case errors.Is(err, engine.ErrNotOwned):
		_, msg := failure.Describe(err)
		return leave(msg)
	case err != nil:
		return err
	}
	count(kind, obj.GetNamespace(), e, string(failure.Unpublished))
	p.Recorder.Eventf(obj, corev1.EventTypeNormal, string(failure.Unpublished), "deleted remote secret %s (deletionPolicy Delete)", where)
	return nil
}

// count counts one outcome of publishing to a destination of a publisher
// of namespace ns.
func count(kind, ns string, e v1alpha1.PushSecretDestinationStatus, outcome string) {
	storeNS := ns
	if e.StoreKind == v1alpha1.ClusterSecretStoreKind {
		storeNS = ""
	}
	metrics.Publications.WithLabelValues(kind, e.StoreKind, metrics.StoreLabel(storeNS, e.StoreName), outcome).Inc()
}

// Clip shortens a message to n bytes, on a rune boundary.
func Clip(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return strings.ToValidUTF8(msg[:n-4], "") + " …"
}

// DescribeStore names the store of a status entry of a publisher of
// namespace ns, for messages.
func DescribeStore(ns string, e v1alpha1.PushSecretDestinationStatus) string {
	if e.StoreKind == v1alpha1.ClusterSecretStoreKind {
		return storeaccess.Describe(e.StoreKind, "", e.StoreName) + fmt.Sprintf(" (scope %q)", ns)
	}
	return storeaccess.Describe(e.StoreKind, ns, e.StoreName)
}

// KeyList lists key names for messages.
func KeyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}
