// Package failure is Watchword's one error model. It holds the classes of
// errors a provider returns, the reasons that conditions, events and
// metrics show, the decision between "the user must fix something"
// (terminal: no retry until something changes) and "try again later"
// (retried with backoff and jitter), and the redaction of error text that
// came from outside and may repeat the input it refused.
//
// Controllers, metrics and conditions all ask this package; none of them
// spells a reason or decides retryability on its own.
package failure

import (
	"errors"
	"fmt"
)

// The classes of provider errors. A provider wraps one of them with %w and a
// message that names the key, never a value. (The engine re-exports them
// as part of the provider contract.)
var (
	// ErrNotFound: the key, version or property does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPermissionDenied: the store's credentials may not do this.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: the backend could not be reached or is not ready.
	ErrUnavailable = errors.New("store unavailable")
	// ErrThrottled: the backend asked us to slow down.
	ErrThrottled = errors.New("throttled by the store")
	// ErrInvalidConfig: the store's configuration is wrong; the user must
	// fix it.
	ErrInvalidConfig = errors.New("invalid store configuration")
	// ErrNotSupported: the store cannot do this operation at all (a
	// read-only store asked to write, for example). Retrying cannot help.
	ErrNotSupported = errors.New("not supported by this store")
	// ErrNotOwned: a remote secret belongs to someone else.
	ErrNotOwned = errors.New("not owned by this object")
	// ErrNotImplemented: the provider exists in the API but not in this
	// build.
	ErrNotImplemented = errors.New("provider not implemented")
	// ErrUnauthenticated: the store refused the credentials themselves
	// (a revoked or expired token, a rejected login), not one request.
	// It wraps ErrPermissionDenied and has its reason: what tests for
	// a denial still sees one. The store's call gate holds the store for
	// minutes after it, so that a revoked credential cannot burn a
	// vendor's quota.
	ErrUnauthenticated error = unauthenticated{}
)

type unauthenticated struct{}

func (unauthenticated) Error() string { return "the store refused the credentials" }
func (unauthenticated) Unwrap() error { return ErrPermissionDenied }

// Reason is a one-word cause in CamelCase: a condition reason, an event
// reason and the reason label of metrics, all the same word.
type Reason string

// Reasons of success.
const (
	// Synced: the target holds the data of the store.
	Synced Reason = "SecretSynced"
	// Valid: a store's configuration and credentials work.
	Valid Reason = "Valid"
	// Refreshed: an ExternalSecret's data was refreshed successfully
	// within the last few refresh intervals (its Fresh condition).
	Refreshed Reason = "Refreshed"
)

// Stale is the reason of an ExternalSecret that has not been refreshed successfully for several
// refresh intervals (its Fresh condition turns False with it; the failure
// that keeps it stale stays in Ready and InSync, and is named in the
// message).
const Stale Reason = "Stale"

// Reasons of failure, with the class each has when Classify meets it.
const (
	// Store and provider.
	NotFound               Reason = "NotFound"               // retried
	PermissionDenied       Reason = "PermissionDenied"       // retried: access can be granted
	StoreUnavailable       Reason = "StoreUnavailable"       // retried
	Throttled              Reason = "Throttled"              // retried
	InvalidStoreConf       Reason = "InvalidStoreConfig"     // terminal
	NotImplemented         Reason = "ProviderNotImplemented" // terminal
	NotSupported           Reason = "NotSupported"           // terminal
	NotOwned               Reason = "NotOwned"               // terminal
	ProviderError          Reason = "ProviderError"          // retried
	StoreNotFound          Reason = "StoreNotFound"          // terminal: the store's creation queues the object
	InvalidStoreRef        Reason = "InvalidStoreRef"        // terminal
	InvalidStore           Reason = "InvalidStore"           // terminal
	DependencyMissing      Reason = "DependencyMissing"      // retried: a Secret, ConfigMap, service account or namespace a store names does not exist yet
	NamespaceDenied        Reason = "NamespaceNotAllowed"    // terminal
	PropertyError          Reason = "PropertyError"          // retried: the remote data may change
	TemplateError          Reason = "TemplateError"          // terminal
	TemplateNotFound       Reason = "TemplateNotFound"       // terminal: the ConfigMap's creation queues the object
	TargetConflict         Reason = "TargetConflict"         // terminal
	TargetMissing          Reason = "TargetMissing"          // terminal: the Secret's creation queues the object
	TargetImmutable        Reason = "TargetImmutable"        // terminal: an immutable target keeps its data; its deletion queues the object
	SecretValuesNotAllowed Reason = "SecretValuesNotAllowed" // terminal: a ConfigMap target would hold values the store does not mark as not secret
	TargetRejected         Reason = "TargetRejected"         // the API server refused a target write (Rejected): terminal when invalid, retried when forbidden
	StatusRejected         Reason = "StatusRejected"         // the API server refused to store an object's status (Rejected): terminal when invalid or too large, retried when forbidden
	WriteConflict          Reason = "WriteConflict"          // retried
	KubernetesAPI          Reason = "KubernetesAPIError"     // retried; terminal when the API server found the request invalid
	ReconcileCanceled      Reason = "Canceled"               // retried
)

// Class is what the error model says of an error.
type Class struct {
	Reason Reason
	// Terminal: the user must change something; retrying cannot help and
	// the object waits for a change instead.
	Terminal bool
}

// Error is an error that knows its class and carries a message fit for a
// condition: it names objects and keys, never values.
type Error struct {
	Class
	Msg string
	// Err is the cause, if any; its text is not shown beyond Msg.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Terminalf returns an error the user must fix.
func Terminalf(reason Reason, format string, args ...any) error {
	return &Error{Class: Class{Reason: reason, Terminal: true}, Msg: fmt.Sprintf(format, args...)}
}

// Retryf returns an error that a later try may not meet.
func Retryf(reason Reason, format string, args ...any) error {
	return &Error{Class: Class{Reason: reason}, Msg: fmt.Sprintf(format, args...)}
}

// Classified is implemented by error types that know their own class,
// such as the engine's template and property errors.
type Classified interface {
	FailureClass() Class
}

// sentinels maps the provider error classes to their class, in the order
// they are tested.
var sentinels = []struct {
	err   error
	class Class
}{
	{ErrNotImplemented, Class{NotImplemented, true}},
	{ErrNotSupported, Class{NotSupported, true}},
	{ErrInvalidConfig, Class{InvalidStoreConf, true}},
	{ErrNotOwned, Class{NotOwned, true}},
	{ErrNotFound, Class{NotFound, false}},
	{ErrPermissionDenied, Class{PermissionDenied, false}},
	{ErrThrottled, Class{Throttled, false}},
	{ErrUnavailable, Class{StoreUnavailable, false}},
}

// Classify tells an error's reason and whether it is terminal. An error of
// no known class is retried as ProviderError.
func Classify(err error) Class {
	if err == nil {
		return Class{Reason: Synced}
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	var c Classified
	if errors.As(err, &c) {
		return c.FailureClass()
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.class
		}
	}
	if c, ok := classifyAPI(err); ok {
		return c
	}
	if c, ok := classifyContext(err); ok {
		return c
	}
	return Class{Reason: ProviderError}
}

// Terminal tells whether retrying err cannot help.
func Terminal(err error) bool { return Classify(err).Terminal }

// Describe returns an error's class and a message fit for a condition, an
// event or a log line: text that came from the API server or a store and
// may repeat the input it refused is replaced by its field paths and
// reasons.
func Describe(err error) (Class, string) {
	return Classify(err), Redact(err)
}

// Redacted returns err with its text redacted and its class kept: what a
// reconciler returns to the controller runtime, which logs it.
func Redacted(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Err == nil && e.Error() == err.Error() {
		return err
	}
	return &Error{Class: Classify(err), Msg: Redact(err), Err: err}
}
