// Package engine turns an ExternalSecret spec and a provider into the data
// of a Kubernetes Secret, with the version of every remote object it read.
// It holds the fetch plan, the shared fetch cache, property extraction,
// templates and the version diff. It has no Kubernetes client inside.
package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/internal/failure"
)

// Ref names one version of one remote object. An empty Version means the
// current one.
type Ref struct {
	Key     string
	Version string
	// Metadata asks for the metadata the store keeps with the object
	// (tags, labels, custom metadata) instead of its value: a
	// MetadataReader reads it (metadataPolicy Fetch).
	Metadata bool
}

// Object is one remote object as a provider returns it: either a single
// value (Value) or a set of named fields (Fields), with its version.
type Object struct {
	// Version is the version that was read; empty when the backend has
	// no versions.
	Version string
	// Value is the value of a backend that stores one value per key.
	Value []byte
	// Fields are the named values of a structured backend (a Vault
	// secret, a Kubernetes Secret). Nil for single-value backends. A
	// backend whose value is JSON text (AWS) may set both: properties and
	// dataFrom then use Fields, and a data[] entry without a property gets
	// Value as it is stored.
	Fields map[string][]byte
	// NotSecret is set by a provider whose store marks this object's value
	// as not secret (an AWS Parameter Store String or StringList
	// parameter). Unset means secret: a ConfigMap target holds only
	// values marked so, unless it allows secret values.
	NotSecret bool
}

// Reader reads one remote object. Every provider implements it.
type Reader interface {
	GetSecret(ctx context.Context, ref Ref) (Object, error)
}

// VersionReader tells the current version of an object without reading its
// data, where the backend can (Vault KV v2 metadata, for example).
type VersionReader interface {
	CurrentVersion(ctx context.Context, key string) (string, error)
}

// MetadataReader reads the metadata a store keeps with an object, such as
// the labels and annotations of a Kubernetes Secret or the custom metadata
// of a Vault KV v2 secret (CanFetchMetadata), for metadataPolicy Fetch.
// It returns the metadata as an Object whose Fields are its entries (a
// structured entry, such as a map of labels, as JSON text), so that a
// property selects one entry and a dataFrom entry copies each of them.
// The Object's Version is empty: metadata has no version of its own.
type MetadataReader interface {
	GetMetadata(ctx context.Context, ref Ref) (Object, error)
}

// Owner identifies the object that writes a remote secret. Providers store
// it with the secret (an ownership marker) and refuse to write over or
// delete a secret that another owner's marker, or no marker, protects.
type Owner struct {
	// ID is stable and unique, such as "PushSecret/ns/name".
	ID string
	// Adopt allows taking over a remote secret that carries no marker.
	Adopt bool
}

// Publication is what a publisher writes to one remote secret: its
// fields, and metadata for the backends that keep metadata with a secret
// (labels, annotations and type of a Kubernetes Secret; tags of a store
// that tags its secrets, such as Vault's custom metadata). A backend
// without such metadata refuses a publication that sets it, with an error
// wrapping ErrNotSupported.
type Publication struct {
	Fields      map[string][]byte
	Labels      map[string]string
	Annotations map[string]string
	Type        string
	Tags        map[string]string
}

// HasMetadata tells whether the publication sets labels, annotations or a
// type.
func (p Publication) HasMetadata() bool {
	return len(p.Labels) > 0 || len(p.Annotations) > 0 || p.Type != ""
}

// Writer writes and deletes remote secrets, for publishing. PutSecret
// returns the version of the secret it wrote, or "" when the backend has
// no versions.
type Writer interface {
	PutSecret(ctx context.Context, key string, p Publication, owner Owner) (version string, err error)
	DeleteSecret(ctx context.Context, key string, owner Owner) error
}

// BatchReader reads several objects in one call (CanBatchRead), for a
// store that charges or throttles per call. GetSecrets returns one item per
// ref, in the order of refs; an item's Err is that object's own error (a
// class of the provider contract, such as ErrNotFound), while the call's
// error fails every ref of the batch.
type BatchReader interface {
	GetSecrets(ctx context.Context, refs []Ref) ([]BatchItem, error)
}

// BatchItem is the outcome of one ref of a batch read.
type BatchItem struct {
	Object Object
	Err    error
}

// Watcher tells of changes to the store's objects (CanWatch), so that what
// reads them can refresh at once instead of at its next interval. Watch
// blocks until ctx ends or the feed breaks, calling changed with the keys
// whose objects changed (keys only, never values). Its first call, made as
// soon as its watch is in place (every change from then on is told), is
// changed(nil): anything may have changed before, since no watch, or not
// this one, was there to tell. It calls changed(nil) again after any other
// gap in which changes may have been missed (a reconnect, a lost feed). It
// returns ctx's error when ctx ends, and another error when the feed
// broke; the caller watches again after a backoff.
type Watcher interface {
	Watch(ctx context.Context, changed func(keys []string)) error
}

// Checker verifies a client's credentials without reading a secret.
type Checker interface {
	Check(ctx context.Context) error
}

// Closer releases what a provider client holds.
type Closer interface {
	Close() error
}

// Capabilities is a set of the things a store can do.
type Capabilities uint16

// The capabilities.
const (
	// CanRead: read one object (Reader). Every client has it.
	CanRead Capabilities = 1 << iota
	// CanBatchRead: read several objects in one call (BatchReader).
	CanBatchRead
	// CanCheckVersion: tell an object's current version without reading
	// its data (VersionReader).
	CanCheckVersion
	// CanList: list the keys of the store, with their versions where
	// the store tells them (Lister).
	CanList
	// CanWrite: write an object it owns (Writer).
	CanWrite
	// CanDelete: delete an object it owns (Writer).
	CanDelete
	// CanWatch: be told of changes (Watcher).
	CanWatch
	// CanLease: issue credentials with a lease, renew and revoke it
	// (Leaser).
	CanLease
	// CanFetchMetadata: read the metadata kept with an object
	// (MetadataReader).
	CanFetchMetadata
)

var capabilityNames = []struct {
	c    Capabilities
	name string
}{
	{CanRead, "read"}, {CanBatchRead, "batchRead"}, {CanCheckVersion, "versionCheck"}, {CanList, "list"},
	{CanWrite, "write"}, {CanDelete, "delete"}, {CanWatch, "watch"}, {CanLease, "lease"},
	{CanFetchMetadata, "fetchMetadata"},
}

// Has reports whether every capability of want is in c.
func (c Capabilities) Has(want Capabilities) bool { return c&want == want }

// String lists the capabilities, such as "read,versionCheck,write,delete";
// "none" for the empty set.
func (c Capabilities) String() string {
	var names []string
	for _, n := range capabilityNames {
		if c.Has(n.c) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Ops are the operations a provider's factory builds for one store, one
// field per capability. A nil field is a capability the store does not
// have: the set of non-nil fields is the provider's declaration, so a
// client can never claim a capability it has no implementation for.
type Ops struct {
	// Reader reads one object (CanRead). Required.
	Reader Reader
	// Batch reads several objects in one call (CanBatchRead).
	Batch BatchReader
	// BatchLimit is the most refs the store accepts in one batch read
	// (20 for AWS Secrets Manager, 10 for Parameter Store); the engine
	// never sends a bigger batch. Zero: no limit of the store's own.
	BatchLimit int
	// Versions tells current versions (CanCheckVersion).
	Versions VersionReader
	// Lister lists keys (CanList).
	Lister Lister
	// Metadata reads the metadata kept with an object (CanFetchMetadata).
	Metadata MetadataReader
	// Writer writes and deletes owned objects (CanWrite, CanDelete).
	Writer Writer
	// Watcher tells of changed objects (CanWatch).
	Watcher Watcher
	// Leaser issues credentials with a lease (CanLease).
	Leaser Leaser
	// Checker verifies the credentials; nil when building the client
	// checked all there is to check.
	Checker Checker
	// Closer releases the client's resources; nil when there are none.
	Closer Closer
	// Scope, for a store that keeps tenants apart on its own (seed 002's
	// scope: a namespace of Kubernetes, a parent path of Vault), returns
	// the operations confined to one scope. Nil: the store has no scopes,
	// and a scope is a prefix of every key (see Client.InScope).
	Scope func(scope string) (Ops, error)
}

// Capabilities is the set that ops declare.
func (o Ops) Capabilities() Capabilities {
	var c Capabilities
	if o.Reader != nil {
		c |= CanRead
	}
	if o.Batch != nil {
		c |= CanBatchRead
	}
	if o.Versions != nil {
		c |= CanCheckVersion
	}
	if o.Lister != nil {
		c |= CanList
	}
	if o.Writer != nil {
		c |= CanWrite | CanDelete
	}
	if o.Watcher != nil {
		c |= CanWatch
	}
	if o.Leaser != nil {
		c |= CanLease
	}
	if o.Metadata != nil {
		c |= CanFetchMetadata
	}
	return c
}

// Client is a store's provider client, as the engine and the controllers
// use it. It is the one way to discover what a store can do: Capabilities
// lists it, and each As method hands out one capability or an error
// wrapping ErrNotSupported that names the provider and the capability.
type Client struct {
	provider string
	ops      Ops
	// scope is the provider's Ops.Scope; wraps are the wrappers applied
	// since NewClient, applied again to a scoped client.
	scope func(scope string) (Ops, error)
	wraps []func(Ops) Ops
}

// CallTimeout bounds every call of a client: the context an operation gets
// has a deadline at most this far away, even when the caller's has none.
const CallTimeout = 30 * time.Second

// NewClient makes a client of the named provider from the operations its
// factory built. Every operation that takes a context gets one with a
// deadline (CallTimeout at most).
func NewClient(provider string, ops Ops) (*Client, error) {
	if ops.Reader == nil {
		return nil, fmt.Errorf("the %q provider built a client that cannot read", provider)
	}
	// A watch lasts as long as its context: it has no deadline.
	bounded := Ops{Reader: timedReader{ops.Reader}, Closer: ops.Closer, Watcher: ops.Watcher, BatchLimit: ops.BatchLimit}
	if ops.Batch != nil {
		bounded.Batch = timedBatch{ops.Batch}
	}
	if ops.Versions != nil {
		bounded.Versions = timedVersions{ops.Versions}
	}
	if ops.Lister != nil {
		bounded.Lister = timedLister{ops.Lister}
	}
	if ops.Metadata != nil {
		bounded.Metadata = timedMetadata{ops.Metadata}
	}
	if ops.Writer != nil {
		bounded.Writer = timedWriter{ops.Writer}
	}
	if ops.Checker != nil {
		bounded.Checker = timedChecker{ops.Checker}
	}
	if ops.Leaser != nil {
		bounded.Leaser = timedLeaser{ops.Leaser}
	}
	return &Client{provider: provider, ops: bounded, scope: ops.Scope}, nil
}

// Provider is the name of the client's provider (its block in the store
// spec).
func (c *Client) Provider() string { return c.provider }

// Capabilities is what the store can do.
func (c *Client) Capabilities() Capabilities { return c.ops.Capabilities() }

// GetSecret reads one object; every client can.
func (c *Client) GetSecret(ctx context.Context, ref Ref) (Object, error) {
	return c.ops.Reader.GetSecret(ctx, ref)
}

// AsVersionReader returns the client's version check, or an error wrapping
// ErrNotSupported.
func (c *Client) AsVersionReader() (VersionReader, error) {
	if c.ops.Versions == nil {
		return nil, c.notSupported(CanCheckVersion)
	}
	return c.ops.Versions, nil
}

// AsBatchReader returns the client's batch read, or an error wrapping
// ErrNotSupported.
func (c *Client) AsBatchReader() (BatchReader, error) {
	if c.ops.Batch == nil {
		return nil, c.notSupported(CanBatchRead)
	}
	return c.ops.Batch, nil
}

// BatchLimit is the most refs the store accepts in one batch read; zero
// when it sets no limit of its own.
func (c *Client) BatchLimit() int { return c.ops.BatchLimit }

// AsMetadataReader returns the client's metadata read, or an error
// wrapping ErrNotSupported.
func (c *Client) AsMetadataReader() (MetadataReader, error) {
	if c.ops.Metadata == nil {
		return nil, c.notSupported(CanFetchMetadata)
	}
	return c.ops.Metadata, nil
}

// AsLister returns the client's listing, or an error wrapping
// ErrNotSupported.
func (c *Client) AsLister() (Lister, error) {
	if c.ops.Lister == nil {
		return nil, c.notSupported(CanList)
	}
	return c.ops.Lister, nil
}

// AsWatcher returns the client's change feed, or an error wrapping
// ErrNotSupported.
func (c *Client) AsWatcher() (Watcher, error) {
	if c.ops.Watcher == nil {
		return nil, c.notSupported(CanWatch)
	}
	return c.ops.Watcher, nil
}

// AsLeaser returns the client's leases, or an error wrapping
// ErrNotSupported.
func (c *Client) AsLeaser() (Leaser, error) {
	if c.ops.Leaser == nil {
		return nil, c.notSupported(CanLease)
	}
	return c.ops.Leaser, nil
}

// AsWriter returns the client's writer, or an error wrapping
// ErrNotSupported.
func (c *Client) AsWriter() (Writer, error) {
	if c.ops.Writer == nil {
		return nil, c.notSupported(CanWrite)
	}
	return c.ops.Writer, nil
}

// Check verifies the credentials, where the provider can do more than
// building the client did; otherwise it returns nil.
func (c *Client) Check(ctx context.Context) error {
	if c.ops.Checker == nil {
		return nil
	}
	return c.ops.Checker.Check(ctx)
}

// Close releases what the client holds.
func (c *Client) Close() error {
	if c.ops.Closer == nil {
		return nil
	}
	return c.ops.Closer.Close()
}

// Wrap returns a client whose operations are wrap's version of c's: for
// metrics, budgets or retries. An operation c lacks stays absent whatever
// wrap returns, and one that wrap leaves nil keeps c's own, so that a
// wrapper never claims more than the provider has, nor loses what it has.
func (c *Client) Wrap(wrap func(Ops) Ops) *Client {
	w := wrap(c.ops)
	out := Ops{
		Reader:   pick(c.ops.Reader, w.Reader),
		Batch:    pick(c.ops.Batch, w.Batch),
		Versions: pick(c.ops.Versions, w.Versions),
		Lister:   pick(c.ops.Lister, w.Lister),
		Metadata: pick(c.ops.Metadata, w.Metadata),
		Watcher:  pick(c.ops.Watcher, w.Watcher),
		Writer:   pick(c.ops.Writer, w.Writer),
		Checker:  pick(c.ops.Checker, w.Checker),
		Closer:   pick(c.ops.Closer, w.Closer),
		Leaser:   pick(c.ops.Leaser, w.Leaser),
		// A wrapper cannot raise the store's own limit.
		BatchLimit: c.ops.BatchLimit,
	}
	return &Client{provider: c.provider, ops: out, scope: c.scope, wraps: append(slices.Clip(c.wraps), wrap)}
}

// pick is the wrapped operation when both exist, the inner one otherwise.
// Comparing with the nil interface never panics, whatever the dynamic type.
func pick[T comparable](inner, wrapped T) T {
	var zero T
	if inner == zero || wrapped == zero {
		return inner
	}
	return wrapped
}

func (c *Client) notSupported(capability Capabilities) error {
	return fmt.Errorf("the %q provider does not have the %s capability (it has %s): %w", c.provider, capability, c.Capabilities(), ErrNotSupported)
}

// The classes of provider errors, part of the provider contract. A provider
// wraps one of them with %w and a message that names the key, never a
// value. They are defined by the error model (package failure), which
// tells their reasons and which of them are retried.
var (
	ErrNotFound         = failure.ErrNotFound
	ErrPermissionDenied = failure.ErrPermissionDenied
	ErrUnavailable      = failure.ErrUnavailable
	ErrThrottled        = failure.ErrThrottled
	ErrInvalidConfig    = failure.ErrInvalidConfig
	ErrNotSupported     = failure.ErrNotSupported
	ErrNotOwned         = failure.ErrNotOwned
	ErrNotImplemented   = failure.ErrNotImplemented
	ErrUnauthenticated  = failure.ErrUnauthenticated
)

type timedReader struct{ inner Reader }

func (t timedReader) GetSecret(ctx context.Context, ref Ref) (Object, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.GetSecret(ctx, ref)
}

type timedMetadata struct{ inner MetadataReader }

func (t timedMetadata) GetMetadata(ctx context.Context, ref Ref) (Object, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.GetMetadata(ctx, ref)
}

type timedBatch struct{ inner BatchReader }

func (t timedBatch) GetSecrets(ctx context.Context, refs []Ref) ([]BatchItem, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.GetSecrets(ctx, refs)
}

type timedVersions struct{ inner VersionReader }

func (t timedVersions) CurrentVersion(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.CurrentVersion(ctx, key)
}

type timedWriter struct{ inner Writer }

func (t timedWriter) PutSecret(ctx context.Context, key string, p Publication, owner Owner) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.PutSecret(ctx, key, p, owner)
}

func (t timedWriter) DeleteSecret(ctx context.Context, key string, owner Owner) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.DeleteSecret(ctx, key, owner)
}

type timedChecker struct{ inner Checker }

func (t timedChecker) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.Check(ctx)
}
