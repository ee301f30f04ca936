package gcpsm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/auth"

	"github.com/watchword-dev/watchword/internal/failure"
)

// TestTokenErrorClassesAndKeepsNoText: a failed token request is classed
// by its HTTP status and its OAuth and Google codes, and nothing else of
// the answer's text is repeated.
func TestTokenErrorClassesAndKeepsNoText(t *testing.T) {
	const echoed = "ECHOED-subject-token"
	for _, c := range []struct {
		name string
		err  error
		want failure.Reason
	}{
		{"impersonation refused", fmt.Errorf("credentials: status code 403: {\"error\":{\"code\":403,\"status\":\"PERMISSION_DENIED\",\"message\":\"%s\"}}", echoed), failure.PermissionDenied},
		{"exchange refused", fmt.Errorf("credentials: status code 400: {\"error\":\"invalid_grant\",\"error_description\":\"%s\"}", echoed), failure.PermissionDenied},
		{"key refused", &auth.Error{Response: &http.Response{StatusCode: http.StatusUnauthorized}, Body: []byte(echoed)}, failure.PermissionDenied},
		{"throttled", fmt.Errorf("credentials: status code 429: %s", echoed), failure.Throttled},
		{"server error", fmt.Errorf("credentials: status code 503: %s", echoed), failure.StoreUnavailable},
		{"no answer", fmt.Errorf("dial tcp: %s", echoed), failure.StoreUnavailable},
		{"deadline", fmt.Errorf("%s: %w", echoed, context.DeadlineExceeded), failure.StoreUnavailable},
		{"classified already", fmt.Errorf("the service account is missing: %w", failure.ErrPermissionDenied), failure.PermissionDenied},
	} {
		got := tokenError(c.err)
		if r := failure.Classify(got).Reason; r != c.want {
			t.Errorf("%s: class %s, want %s (%v)", c.name, r, c.want, got)
		}
		if c.name != "classified already" && strings.Contains(got.Error(), echoed) {
			t.Errorf("%s: the error repeats the answer's text: %v", c.name, got)
		}
		if c.name == "impersonation refused" && !strings.Contains(got.Error(), "impersonate") {
			t.Errorf("%s: %v does not say what is missing", c.name, got)
		}
	}
	// A refused key or exchange is told apart from a refused
	// impersonation: the credentials themselves were not accepted.
	if !errors.Is(tokenError(fmt.Errorf("credentials: status code 401: x")), failure.ErrUnauthenticated) ||
		errors.Is(tokenError(fmt.Errorf("credentials: status code 403: x")), failure.ErrUnauthenticated) {
		t.Error("401 is not Unauthenticated, or 403 is")
	}
}
