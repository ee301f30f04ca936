package failure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Safe is implemented by errors that came from outside (a store's API, a
// plugin) and know how to tell themselves without repeating their input:
// Redact uses SafeText in place of Error.
type Safe interface {
	error
	SafeText() string
}

// Redact returns the text of err with every part that came from the API
// server or a store replaced by a form that cannot repeat input: the API
// server's status errors keep their reason, the kind and name of the
// object, and the field paths and types of their causes, but not their
// messages (an "Invalid value" message quotes the value it refused).
func Redact(err error) string {
	if err == nil {
		return ""
	}
	return redact(err.Error(), err)
}

// redact rewrites text, the text of an error chain, at the first link of
// err's chain that came from outside. An Error's message is ours and fit
// for a condition already, so the walk stops there.
func redact(text string, err error) string {
	for e := err; e != nil; {
		switch v := e.(type) { //nolint:errorlint // walks the chain one link at a time, stopping at the first of ours
		case *Error:
			return text
		case Safe:
			return replace(text, v.Error(), v.SafeText())
		case apierrors.APIStatus:
			if ee, ok := v.(error); ok {
				return replace(text, ee.Error(), statusText(v.Status()))
			}
		case interface{ Unwrap() []error }:
			for _, part := range v.Unwrap() {
				if part != nil {
					text = replace(text, part.Error(), redact(part.Error(), part))
				}
			}
			return text
		}
		e = errors.Unwrap(e)
	}
	return text
}

// replace puts safe in place of raw within text; when raw is not a part of
// text (a wrapper that reformatted it), only safe is kept.
func replace(text, raw, safe string) string {
	if raw == "" || raw == safe {
		return text
	}
	if strings.Contains(text, raw) {
		return strings.ReplaceAll(text, raw, safe)
	}
	return safe
}

// statusText tells an API server status without its message.
func statusText(s metav1.Status) string {
	var b strings.Builder
	b.WriteString("the API server answered ")
	reason := string(s.Reason)
	if reason == "" {
		reason = http.StatusText(int(s.Code))
	}
	b.WriteString(reason)
	if d := s.Details; d != nil {
		if d.Kind != "" || d.Name != "" {
			fmt.Fprintf(&b, " for %s %q", d.Kind, d.Name)
		}
		var causes []string
		for _, c := range d.Causes {
			switch {
			case c.Field != "" && c.Type != "":
				causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Type))
			case c.Field != "":
				causes = append(causes, c.Field)
			case c.Type != "":
				causes = append(causes, string(c.Type))
			}
		}
		if len(causes) > 0 {
			b.WriteString(" (" + strings.Join(causes, "; ") + ")")
		}
		b.WriteString(secretHint(d))
	}
	return b.String()
}

// secretHint says what to change for the refusals of a Secret that a
// tenant's input causes most: data over the API server's size limit, and
// a key that cannot be a Secret key.
func secretHint(d *metav1.StatusDetails) string {
	if d.Kind != "Secret" && d.Kind != "secrets" {
		return ""
	}
	for _, c := range d.Causes {
		switch {
		case c.Field == "data" && c.Type == metav1.CauseTypeTooLong:
			return ": a Secret holds at most 1 MiB of data in all; read fewer or smaller values into it"
		case strings.HasPrefix(c.Field, "data[") && c.Type == metav1.CauseTypeFieldValueInvalid:
			return ": a Secret key may hold only letters, digits, '-', '_' and '.'; rename the key"
		}
	}
	return ""
}

// classifyAPI classes the API server's own errors. A refusal says nothing
// here of what was refused: the caller that knows (a target write) names
// it with Rejected.
func classifyAPI(err error) (Class, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return Class{}, false
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return Class{Reason: WriteConflict}, true
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		// The same request would be refused again.
		return Class{Reason: KubernetesAPI, Terminal: true}, true
	case apierrors.IsForbidden(err):
		// Access can be granted, or an admission rule changed.
		return Class{Reason: PermissionDenied}, true
	case apierrors.IsNotFound(err):
		return Class{Reason: NotFound}, true
	default:
		return Class{Reason: KubernetesAPI}, true
	}
}

// Rejected gives the API server's refusal of a write (invalid, bad
// request, too large, forbidden) the reason that names what was being
// written, such as TargetRejected, keeping whether it is terminal and
// redacting its text. Other errors are returned as they are.
func Rejected(err error, reason Reason) error {
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) && !apierrors.IsRequestEntityTooLargeError(err) {
		return err
	}
	return &Error{Class: Class{Reason: reason, Terminal: !apierrors.IsForbidden(err)}, Msg: Redact(err), Err: err}
}

// classifyContext classes a canceled or timed-out call.
func classifyContext(err error) (Class, bool) {
	switch {
	case errors.Is(err, context.Canceled):
		return Class{Reason: ReconcileCanceled}, true
	case errors.Is(err, context.DeadlineExceeded):
		return Class{Reason: StoreUnavailable}, true
	}
	return Class{}, false
}
