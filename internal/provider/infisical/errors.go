package infisical

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/infisical/go-sdk"

	"github.com/watchword-dev/watchword/internal/engine"
)

// classify maps the error of an SDK call to the engine's classes. what
// says what was asked. Infisical's own message is never repeated (it
// echoes the request: a secret's name, a folder), only its status; the
// SDK drops the answer's headers, so a 429's Retry-After cannot be
// honoured beyond the class.
func (c *Client) classify(what string, err error) error {
	code := status(err)
	if code == 0 {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s: Infisical at %s did not answer in time: %w", what, c.host, engine.ErrUnavailable)
		}
		var re *sdk.RequestError
		if errors.As(err, &re) {
			return fmt.Errorf("%s: Infisical at %s could not be reached: %w", what, c.host, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: the call to Infisical at %s failed, or its answer could not be read: %w", what, c.host, engine.ErrUnavailable)
	}
	label := fmt.Sprintf("HTTP %d", code)
	switch code {
	case http.StatusNotFound:
		return fmt.Errorf("%s: Infisical answered %s (no such project, environment, folder, secret or version): %w", what, label, engine.ErrNotFound)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: Infisical refused the access token of %s (%s) after a new login: %w", what, c.who, label, engine.ErrUnauthenticated)
	case http.StatusForbidden:
		return fmt.Errorf("%s: Infisical does not let %s do it (%s): give the identity a role on project %q that may read the secrets of environment %q and the folder: %w",
			what, c.who, label, c.project, c.env, engine.ErrPermissionDenied)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%s: Infisical throttled the calls (%s): %w", what, label, engine.ErrThrottled)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return fmt.Errorf("%s: Infisical refused the request as invalid (%s): %w", what, label, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: Infisical answered %s: %w", what, label, engine.ErrUnavailable)
}
