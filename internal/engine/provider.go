// Package engine turns an ExternalSecret spec and a provider into the data
// of a Kubernetes Secret, with the version of every remote object it read.
// It holds the fetch plan, the shared fetch cache, property extraction,
// templates and the version diff. It has no Kubernetes client inside.
package engine

import (
	"context"
	"errors"
)

// Ref names one version of one remote object. An empty Version means the
// current one.
type Ref struct {
	Key     string
	Version string
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
	// secret, a Kubernetes Secret). Nil for single-value backends.
	Fields map[string][]byte
}

// Reader reads one remote object. Every provider implements it.
type Reader interface {
	GetSecret(ctx context.Context, ref Ref) (Object, error)
}

// BatchReader reads several remote objects in one call. A provider whose
// backend offers a batch read implements it; the result holds an entry (or
// an error in errs) for every ref.
type BatchReader interface {
	GetSecrets(ctx context.Context, refs []Ref) (objs map[Ref]Object, errs map[Ref]error)
}

// VersionReader tells the current version of an object without reading its
// data, where the backend can (Vault KV v2 metadata, for example).
type VersionReader interface {
	CurrentVersion(ctx context.Context, key string) (string, error)
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

// Writer writes and deletes remote secrets, for publishing.
type Writer interface {
	PutSecret(ctx context.Context, key string, fields map[string][]byte, owner Owner) error
	DeleteSecret(ctx context.Context, key string, owner Owner) error
}

// Closer releases what a provider client holds.
type Closer interface {
	Close() error
}

// The classes of provider errors. Providers wrap one of them with %w and a
// message that names the key, never a value.
var (
	// ErrNotFound: the key, version or property does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPermissionDenied: the store's credentials may not read it.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: the backend could not be reached or is not ready.
	ErrUnavailable = errors.New("store unavailable")
	// ErrThrottled: the backend asked us to slow down.
	ErrThrottled = errors.New("throttled by the store")
	// ErrInvalidConfig: the store's configuration is wrong; the user must
	// fix it.
	ErrInvalidConfig = errors.New("invalid store configuration")
	// ErrNotSupported: the provider cannot do this operation; callers fall
	// back to another way.
	ErrNotSupported = errors.New("not supported by this provider")
	// ErrNotOwned: a remote secret belongs to someone else.
	ErrNotOwned = errors.New("not owned by this object")
	// ErrNotImplemented: the provider exists in the API but not in this
	// build.
	ErrNotImplemented = errors.New("provider not implemented")
)

// Reason is a one-word cause, used as a condition reason and a metric label.
type Reason string

// Reasons of sync failures.
const (
	ReasonNotFound         Reason = "NotFound"
	ReasonPermissionDenied Reason = "PermissionDenied"
	ReasonUnavailable      Reason = "StoreUnavailable"
	ReasonThrottled        Reason = "Throttled"
	ReasonInvalidConfig    Reason = "InvalidStoreConfig"
	ReasonNotImplemented   Reason = "ProviderNotImplemented"
	ReasonProperty         Reason = "PropertyError"
	ReasonTemplate         Reason = "TemplateError"
	ReasonProviderError    Reason = "ProviderError"
	ReasonNotOwned         Reason = "NotOwned"
)

// Classify maps an error to its reason and tells whether retrying later
// can help without a change by the user.
func Classify(err error) (reason Reason, retry bool) {
	var te *TemplateError
	var pe *PropertyError
	switch {
	case errors.As(err, &te):
		return ReasonTemplate, false
	case errors.As(err, &pe):
		// The remote data may change, so a later read may succeed.
		return ReasonProperty, true
	case errors.Is(err, ErrNotImplemented):
		return ReasonNotImplemented, false
	case errors.Is(err, ErrInvalidConfig):
		return ReasonInvalidConfig, false
	case errors.Is(err, ErrNotOwned):
		return ReasonNotOwned, false
	case errors.Is(err, ErrNotFound):
		return ReasonNotFound, true
	case errors.Is(err, ErrPermissionDenied):
		return ReasonPermissionDenied, true
	case errors.Is(err, ErrThrottled):
		return ReasonThrottled, true
	case errors.Is(err, ErrUnavailable):
		return ReasonUnavailable, true
	default:
		return ReasonProviderError, true
	}
}
