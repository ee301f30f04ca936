// Package plugin is the SDK for out-of-tree secret store plugins. A plugin
// is a program that serves the plugin protocol (api/plugin/v1) on a unix
// socket; Watchword's plugin provider talks to it. The author implements
// the capabilities the store has, no more, and calls Serve:
//
//	err := plugin.Serve(ctx, "unix:///run/watchword/mystore.sock", plugin.Store{
//		Name:   "mystore",
//		Reader: myReader{},
//		Writer: myWriter{}, // only if the store can write
//		Batch:  myBatch{},  // only if it reads many secrets in one call
//		Watcher: myWatch{}, // only if it can announce changes
//		Lister: myList{},   // only if it can list its keys
//	})
//
// Errors wrap one of the classes below (ErrNotFound, ErrNotOwned, …) with
// %w; Serve turns them into the status codes of the protocol. Their
// messages reach the status of stores and ExternalSecrets after
// Watchword's own words, which name the plugin, the call and its key and
// version, and before the class's text (said once): they say what only
// the plugin knows, never a value.
package plugin

import (
	"context"
	"errors"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/pluginwire"
)

// Config is the configuration of one store: the config of its plugin
// block. Every call carries it, so that one plugin serves many stores.
type Config map[string]string

// Ref names one version of one secret; an empty Version is the current one.
type Ref struct {
	Key     string
	Version string
}

// Secret is one version of one secret: a single Value, or named Fields.
type Secret struct {
	// Version is the version read; empty when the store has no versions.
	Version string
	Value   []byte
	Fields  map[string][]byte
}

// Owner identifies who writes a secret. A writer stores ID with the
// secret (its ownership marker) and refuses, with ErrNotOwned, a secret
// that carries another owner's marker, or no marker unless Adopt is set.
type Owner struct {
	ID    string
	Adopt bool
}

// Publication is what is written to one secret: its fields, and metadata
// for stores that keep metadata with a secret. A store without such
// metadata refuses a publication that sets it, with ErrNotSupported.
type Publication struct {
	Fields      map[string][]byte
	Labels      map[string]string
	Annotations map[string]string
	Type        string
}

// Reader reads one secret. Every store has one.
type Reader interface {
	Get(ctx context.Context, cfg Config, ref Ref) (Secret, error)
}

// VersionReader tells a secret's current version without reading its data.
type VersionReader interface {
	CurrentVersion(ctx context.Context, cfg Config, key string) (string, error)
}

// Writer writes and deletes the secrets an owner owns. Put returns the
// version it wrote ("" when the store has no versions); a write that loses
// a race with another writer fails with ErrUnavailable. Delete of a
// secret that does not exist is not an error.
type Writer interface {
	Put(ctx context.Context, cfg Config, key string, p Publication, owner Owner) (version string, err error)
	Delete(ctx context.Context, cfg Config, key string, owner Owner) error
}

// Lister lists the secrets of a store, a page at a time: their keys, with
// their current versions and tags where the store tells them, never a
// value. A page holds at most req.Limit items (zero: the store's own page
// size) and may hold fewer, even none, while NextPageToken is set; the
// listing ends with an empty NextPageToken. A store without tags refuses
// a request that sets some with ErrNotSupported.
type Lister interface {
	List(ctx context.Context, cfg Config, req ListRequest) (ListPage, error)
}

// ListRequest selects the secrets of one page.
type ListRequest struct {
	// Prefix keeps the keys that begin with it; empty: every key.
	Prefix string
	// Tags keeps the secrets that carry every one of these tags.
	Tags map[string]string
	// PageToken is the previous page's NextPageToken; empty first.
	PageToken string
	// Limit is the most items the page holds; zero: the store's own.
	Limit int
}

// ListPage is one page of a listing.
type ListPage struct {
	Items         []ListItem
	NextPageToken string
}

// ListItem is one listed secret.
type ListItem struct {
	// Key is what Get reads the secret by.
	Key string
	// Version is its current version, or "" when the listing does not
	// tell it.
	Version string
	// Tags are its tags, where the listing tells them.
	Tags map[string]string
}

// MaxListLimit is the largest page Watchword asks for.
const MaxListLimit = pluginwire.MaxListLimit

// Store is a plugin: its name and version, and one field per capability.
// A nil field is a capability the store does not have, and the plugin
// answers its calls with Unimplemented.
type Store struct {
	// Name and Version identify the plugin in Watchword's status and logs.
	Name    string
	Version string
	// Reader is required.
	Reader Reader
	// Versions tells current versions (capability versionCheck).
	Versions VersionReader
	// Writer writes and deletes (capabilities write and delete).
	Writer Writer
	// Batch reads several secrets in one call (capability batchRead).
	Batch BatchReader
	// Watcher announces changed keys (capability watch).
	Watcher Watcher
	// Lister lists keys (capability list, protocol v1.1).
	Lister Lister
	// ValidateConfig checks a store's configuration at the handshake,
	// without I/O; an error wraps ErrInvalidConfig and says what to
	// change. Nil accepts any configuration.
	ValidateConfig func(cfg Config) error
}

// The error classes of the provider contract. Wrap one with %w.
var (
	// ErrNotFound: the key or the version does not exist.
	ErrNotFound = engine.ErrNotFound
	// ErrPermissionDenied: the store refused the plugin's credentials or
	// the request.
	ErrPermissionDenied = engine.ErrPermissionDenied
	// ErrUnavailable: the store could not be reached, or a write lost a
	// race; Watchword retries.
	ErrUnavailable = engine.ErrUnavailable
	// ErrInvalidConfig: the store's configuration is wrong.
	ErrInvalidConfig = engine.ErrInvalidConfig
	// ErrNotOwned: the secret belongs to another owner, or to none.
	ErrNotOwned = engine.ErrNotOwned
	// ErrNotSupported: the store cannot do what was asked.
	ErrNotSupported = engine.ErrNotSupported
	// ErrThrottled: the store asks to slow down; see Throttled.
	ErrThrottled = engine.ErrThrottled
)

// Throttled returns an error of class ErrThrottled that asks Watchword
// to retry after d.
func Throttled(d time.Duration, format string, args ...any) error {
	return pluginwire.Throttled(d, format, args...)
}

func (s Store) validate() error {
	if s.Reader == nil {
		return errors.New("plugin.Store has no Reader: every store can read")
	}
	if s.Name == "" {
		return errors.New("plugin.Store has no Name")
	}
	return nil
}

func (s Store) capabilities() engine.Capabilities {
	c := engine.CanRead
	if s.Versions != nil {
		c |= engine.CanCheckVersion
	}
	if s.Writer != nil {
		c |= engine.CanWrite | engine.CanDelete
	}
	if s.Batch != nil {
		c |= engine.CanBatchRead
	}
	if s.Watcher != nil {
		c |= engine.CanWatch
	}
	if s.Lister != nil {
		c |= engine.CanList
	}
	return c
}
