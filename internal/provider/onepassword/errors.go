package onepassword

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	op "github.com/1Password/connect-sdk-go/onepassword"

	"github.com/watchword-dev/watchword/internal/engine"
)

func isStatus(err error, status int) bool {
	var e *op.Error
	return errors.As(err, &e) && e.StatusCode == status
}

// classify maps an error of an SDK call to the engine's classes. what
// says what was asked. Connect's own message is never repeated (it may
// echo the request), only its status; the SDK drops the answer's headers,
// so a Retry-After cannot be honoured beyond the class.
func (c *Client) classify(what string, err error) error {
	var e *op.Error
	if !errors.As(err, &e) {
		var ne net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return fmt.Errorf("%s: the Connect server at %s did not answer in time: %w", what, c.host, engine.ErrUnavailable)
		case errors.As(err, &ne):
			return fmt.Errorf("%s: the Connect server at %s could not be reached: %w", what, c.host, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: the call to the Connect server at %s failed, or its answer could not be read: %w", what, c.host, engine.ErrUnavailable)
	}
	label := fmt.Sprintf("HTTP %d", e.StatusCode)
	switch e.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("%s: Connect answered %s: %w", what, label, engine.ErrNotFound)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: Connect refused %s (%s): the token is wrong, expired or revoked; put a valid one in the Secret: %w", what, c.who, label, engine.ErrUnauthenticated)
	case http.StatusForbidden:
		return fmt.Errorf("%s: Connect does not let %s do it (%s): give the token access to the vault (read, and write for publishing): %w", what, c.who, label, engine.ErrPermissionDenied)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%s: Connect throttled the calls (%s): %w", what, label, engine.ErrThrottled)
	case http.StatusBadRequest:
		return fmt.Errorf("%s: Connect refused the request as invalid (%s): %w", what, label, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: Connect answered %s: %w", what, label, engine.ErrUnavailable)
}
