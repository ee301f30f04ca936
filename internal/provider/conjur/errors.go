package conjur

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cyberark/conjur-api-go/conjurapi/response"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// classify maps an error of a request to the engine's classes. what says
// what was asked. Conjur's own message is never repeated (it names what
// was asked, and a server may echo input), only its status.
func (c *Client) classify(what string, err error) error {
	var e *response.ConjurError
	if !errors.As(err, &e) {
		var ne net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return fmt.Errorf("%s: Conjur at %s did not answer in time: %w", what, c.url, engine.ErrUnavailable)
		case errors.As(err, &ne):
			return fmt.Errorf("%s: Conjur at %s could not be reached (or its certificate is not trusted: check caBundle): %w", what, c.url, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: the call to Conjur at %s failed, or its answer could not be read: %w", what, c.url, engine.ErrUnavailable)
	}
	label := fmt.Sprintf("HTTP %d", e.Code)
	switch e.Code {
	case http.StatusNotFound:
		return fmt.Errorf("%s: Conjur answered %s: no such variable, or no value of it (of that version), or %s may not see it: %w", what, label, c.who, engine.ErrNotFound)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: Conjur refused the access token of %s twice (%s): it was revoked, or the clocks disagree: %w", what, c.who, label, engine.ErrUnauthenticated)
	case http.StatusForbidden:
		return fmt.Errorf("%s: Conjur does not let %s do it (%s): grant it execute on the variable (read for versions and listings): %w", what, c.who, label, engine.ErrPermissionDenied)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%s: Conjur throttled the calls (%s): %w", what, label, engine.ErrThrottled)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return fmt.Errorf("%s: Conjur refused the request as invalid (%s): %w", what, label, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: Conjur answered %s: %w", what, label, engine.ErrUnavailable)
}

// classifyAuth maps an error of an authentication: a refusal there is of
// the credentials.
func (c *Client) classifyAuth(what string, err error) error {
	var e *response.ConjurError
	if errors.As(err, &e) && (e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden) {
		return fmt.Errorf("%s: Conjur refused it (HTTP %d): the credential is wrong, rotated or expired, the account or authenticator does not exist, or the role may not use it; put a valid credential in the Secret: %w",
			what, e.Code, engine.ErrUnauthenticated)
	}
	return c.classify(what, err)
}

// retryAfter reads the Retry-After of a 429 answer, before the SDK's
// error type drops the headers: seconds or an HTTP date; zero when
// absent, malformed or past, and a day at most.
func retryAfter(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), 24*time.Hour)
}

// throttled gives a throttled error the wait Conjur asked for.
func (c *Client) throttled(what string, after time.Duration, err error) error {
	if after <= 0 || !errors.Is(err, engine.ErrThrottled) {
		return err
	}
	return failure.ThrottledFor(after, what+": Conjur throttled the calls (HTTP 429)")
}
