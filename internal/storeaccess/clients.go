package storeaccess

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Clients hands out one provider client per store generation and version of
// its credential Secrets.
type Clients struct {
	// Clock tells when a client built from a short-lived token expires;
	// nil is the wall clock.
	Clock engine.Clock

	registry provider.Registry
	// creds tells the resourceVersion of a credential Secret.
	creds SecretVersions
	// direct reads Secret contents from the API server (never cached).
	direct client.Reader
	kube   kubernetes.Interface
	local  *rest.Config
	// self is the user Watchword acts as, asked once.
	self *selfUser

	// Limits are the call limits of a store that sets none of its own
	// (spec.limits), field by field.
	Limits engine.GateLimits

	mu      sync.Mutex
	clients map[types.UID]*cached
	// gates are the stores' call gates; a gate outlives the clients built
	// for its store, so that its budget and holds do too.
	gates map[types.UID]*engine.Gate
	// connChanges are the subscribers of ConnectionChanges, by store kind.
	connChanges map[string]chan event.GenericEvent
}

type cached struct {
	generation int64
	// refs are the store's credential Secrets, found once per generation.
	refs    []provider.NamespacedName
	key     string
	client  *engine.Client
	expires time.Time
}

// SecretVersions tells the resourceVersion of a Secret watched by name,
// reading only its metadata; found is false when it does not exist.
type SecretVersions interface {
	ResourceVersion(ctx context.Context, ref provider.NamespacedName) (rv string, found bool, err error)
}

// NewClients returns a client cache.
func NewClients(reg provider.Registry, creds SecretVersions, direct client.Reader, kube kubernetes.Interface, local *rest.Config) *Clients {
	return &Clients{registry: reg, creds: creds, direct: direct, kube: kube, local: local, self: &selfUser{}, clients: map[types.UID]*cached{}, gates: map[types.UID]*engine.Gate{}}
}

func (c *Clients) now() time.Time {
	if c.Clock == nil {
		return engine.RealClock.Now()
	}
	return c.Clock.Now()
}

// Registry returns the provider registry.
func (c *Clients) Registry() provider.Registry { return c.registry }

// Get returns the client of the store, building one when the store's
// generation or any credential Secret changed since the last one. The fast
// path reads only the metadata cache.
func (c *Clients) Get(ctx context.Context, r *Resolved) (*engine.Client, error) {
	c.mu.Lock()
	hit := c.clients[r.UID]
	c.mu.Unlock()
	if hit != nil && hit.generation == r.Generation && (hit.expires.IsZero() || c.now().Before(hit.expires)) {
		key, err := c.credentialKey(ctx, r.Store, hit.refs)
		if err != nil {
			return nil, err
		}
		if key == hit.key {
			return hit.client, nil
		}
	}
	return c.build(ctx, r)
}

func (c *Clients) build(ctx context.Context, r *Resolved) (*engine.Client, error) {
	name, factory, err := c.registry.Lookup(r.Store.Spec)
	if err != nil {
		return nil, err
	}
	if err = factory.Validate(r.Store); err != nil {
		return nil, err
	}
	refs, err := c.registry.Refs(r.Store)
	if err != nil {
		return nil, err
	}
	key, err := c.credentialKey(ctx, r.Store, refs.Secrets)
	if err != nil {
		return nil, err
	}
	deps := &deps{store: r.Store, provider: name, refs: refs, direct: c.direct, kube: c.kube, local: c.local, self: c.self}
	ops, err := factory.New(ctx, r.Store, deps)
	if err != nil {
		return nil, err
	}
	client, err := engine.NewClient(name, ops)
	if err != nil {
		return nil, err
	}
	client = metrics.Instrument(client, r.Store.Kind)
	// The gate is outermost: a call it refuses never reaches the
	// provider, nor its metrics. The store or its credentials changed
	// since the last client (or the client expired): new credentials are
	// tried at once.
	gate := c.Gate(r)
	gate.ResetAuth()
	client = client.Wrap(gate.Wrap)
	if w, ok := ops.Checker.(provider.ConnectionWatcher); ok {
		c.forwardConnectionChanges(w, r, gate)
	}
	entry := &cached{generation: r.Generation, refs: refs.Secrets, key: key, client: client}
	if deps.tokenExpiry > 0 {
		// Rebuild well before a requested token expires.
		entry.expires = c.now().Add(time.Duration(deps.tokenExpiry) * time.Second * 4 / 5)
	}
	c.mu.Lock()
	old := c.clients[r.UID]
	c.clients[r.UID] = entry
	c.mu.Unlock()
	if old != nil && old.client != client {
		_ = old.client.Close()
	}
	return client, nil
}

// Ops builds the operations of a store's provider once, as the controller
// would, without caching them: for a one-off run such as the conformance
// command. The caller closes them (Ops.Closer, when not nil).
func Ops(ctx context.Context, reg provider.Registry, direct client.Reader, kube kubernetes.Interface, local *rest.Config, r *Resolved) (string, engine.Ops, error) {
	refs, err := reg.Refs(r.Store)
	if err != nil {
		return "", engine.Ops{}, err
	}
	name, _, err := reg.Lookup(r.Store.Spec)
	if err != nil {
		return "", engine.Ops{}, err
	}
	return reg.Ops(ctx, r.Store, &deps{store: r.Store, provider: name, refs: refs, direct: direct, kube: kube, local: local})
}

// Drop forgets the client of a deleted store and closes it.
func (c *Clients) Drop(uid types.UID) {
	c.mu.Lock()
	old := c.clients[uid]
	delete(c.clients, uid)
	delete(c.gates, uid)
	c.mu.Unlock()
	if old != nil {
		_ = old.client.Close()
	}
}

// credentialKey is the resourceVersion of every credential Secret, as
// their watches see it.
func (c *Clients) credentialKey(ctx context.Context, store provider.Store, refs []provider.NamespacedName) (string, error) {
	var b strings.Builder
	for _, ref := range refs {
		rv, found, err := c.creds.ResourceVersion(ctx, ref)
		if err != nil {
			return "", err
		}
		if !found {
			return "", missingSecret(store, ref.Namespace, ref.Name)
		}
		fmt.Fprintf(&b, "|%s=%s", ref, rv)
	}
	return b.String(), nil
}

// CredentialSecrets lists every Secret that a SecretStore or
// ClusterSecretStore in the cache uses as a credential, as its provider
// declares them. A store whose references break the namespace rules (or
// whose provider is not implemented) names none: it cannot be used.
func CredentialSecrets(ctx context.Context, c client.Reader, reg provider.Registry) (map[provider.NamespacedName]bool, error) {
	stores, err := ListStores(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[provider.NamespacedName]bool{}
	for _, s := range stores {
		refs, _ := reg.Refs(s.Store)
		for _, ref := range refs.Secrets {
			out[ref] = true
		}
	}
	return out, nil
}

func missingSecret(store provider.Store, ns, name string) error {
	return fmt.Errorf("%w: %s references Secret %q, which does not exist", engine.ErrInvalidConfig,
		Describe(store.Kind, store.Namespace, store.Name), ns+"/"+name)
}

// namespaceFor resolves the namespace of an object the provider asks for
// and checks that the provider's Refs declared it: the namespace rules were
// checked on those, and an undeclared object would miss its watch.
func (d *deps) namespaceFor(kind provider.Kind, ns, name string) (string, error) {
	ns = d.store.NamespaceOf(ns)
	if !d.refs.Has(kind, provider.NamespacedName{Namespace: ns, Name: name}) {
		return "", fmt.Errorf("the %q provider asked for %s %q, which its Refs does not declare for %s",
			d.provider, kind, ns+"/"+name, Describe(d.store.Kind, d.store.Namespace, d.store.Name))
	}
	return ns, nil
}

// deps implements provider.Deps for one store.
type deps struct {
	store       provider.Store
	provider    string
	refs        provider.Refs
	direct      client.Reader
	kube        kubernetes.Interface
	local       *rest.Config
	tokenExpiry int64
	// self caches the answer of SelfUser; nil asks each time.
	self *selfUser
}

func (d *deps) SecretValue(ctx context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	ns, err := d.namespaceFor(provider.KindSecret, sel.Namespace, sel.Name)
	if err != nil {
		return nil, err
	}
	var s corev1.Secret
	if err := d.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: sel.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, missingSecret(d.store, ns, sel.Name)
		}
		return nil, fmt.Errorf("reading Secret %q: %w", ns+"/"+sel.Name, err)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return nil, fmt.Errorf("%w: Secret %q has no key %q", engine.ErrInvalidConfig, ns+"/"+sel.Name, sel.Key)
	}
	return v, nil
}

func (d *deps) ConfigMapValue(ctx context.Context, namespace, name, key string) ([]byte, error) {
	ns, err := d.namespaceFor(provider.KindConfigMap, namespace, name)
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := d.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: ConfigMap %q does not exist", engine.ErrInvalidConfig, ns+"/"+name)
		}
		return nil, fmt.Errorf("reading ConfigMap %q: %w", ns+"/"+name, err)
	}
	if v, ok := cm.Data[key]; ok {
		return []byte(v), nil
	}
	if v, ok := cm.BinaryData[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("%w: ConfigMap %q has no key %q", engine.ErrInvalidConfig, ns+"/"+name, key)
}

func (d *deps) ServiceAccountToken(ctx context.Context, sel v1alpha1.ServiceAccountSelector) (string, int64, error) {
	ns, err := d.namespaceFor(provider.KindServiceAccount, sel.Namespace, sel.Name)
	if err != nil {
		return "", 0, err
	}
	expiry := int64(3600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: sel.Audiences, ExpirationSeconds: &expiry}}
	got, err := d.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sel.Name, tr, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", 0, fmt.Errorf("%w: service account %q does not exist", engine.ErrInvalidConfig, ns+"/"+sel.Name)
		}
		return "", 0, fmt.Errorf("requesting a token for service account %q: %w", ns+"/"+sel.Name, err)
	}
	life := int64(time.Until(got.Status.ExpirationTimestamp.Time).Seconds())
	if life <= 0 {
		life = expiry
	}
	d.tokenExpiry = life
	return got.Status.Token, life, nil
}

func (d *deps) LocalConfig() *rest.Config { return rest.AnonymousClientConfig(d.local) }

// ConnectionChanges receives the stores of kind (SecretStore or
// ClusterSecretStore) whose client lost or regained its connection to the
// store (a plugin's): the store controller checks them again at once. One
// subscriber per kind, which must keep reading.
func (c *Clients) ConnectionChanges(kind string) <-chan event.GenericEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.connChanges == nil {
		c.connChanges = map[string]chan event.GenericEvent{}
	}
	ch, ok := c.connChanges[kind]
	if !ok {
		ch = make(chan event.GenericEvent, 16)
		c.connChanges[kind] = ch
	}
	return ch
}

// forwardConnectionChanges tells the subscriber of the store's kind of
// each change of the client's connection, until the client is closed.
// Each change first ends a hold of the store's gate after it could not be
// reached: the check that the change makes, and the reads after it, reach
// a store that came back at once instead of after the rest of the hold
// (up to UnreachableHoldMax), and then the store's backoff.
func (c *Clients) forwardConnectionChanges(w provider.ConnectionWatcher, r *Resolved, gate *engine.Gate) {
	c.mu.Lock()
	out := c.connChanges[r.Store.Kind]
	c.mu.Unlock()
	changes := w.ConnectionChanges()
	if changes == nil {
		return
	}
	var obj client.Object = &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: r.Store.Namespace, Name: r.Store.Name}}
	if r.Store.Cluster() {
		obj = &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: r.Store.Name}}
	}
	go func() {
		for range changes {
			gate.ResetUnreachable()
			if out != nil {
				out <- event.GenericEvent{Object: obj}
			}
		}
	}()
}
