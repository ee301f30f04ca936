package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	glapi "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/watchword-dev/watchword/internal/engine"
)

// classify maps the error of a GitLab call to the engine's classes. what
// says what was asked. GitLab's own text is never repeated (an answer may
// echo what it refused): only its status and, for a refused field, the
// field's name.
func (c *Client) classify(what string, resp *glapi.Response, err error) error {
	status := statusOf(resp, err)
	if status == 0 {
		var ne net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return fmt.Errorf("%s: GitLab did not answer in time: %w", what, engine.ErrUnavailable)
		case errors.As(err, &ne):
			return fmt.Errorf("%s: GitLab at %s could not be reached: %w", what, c.instance, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: the call to GitLab at %s failed: %w", what, c.instance, engine.ErrUnavailable)
	}
	label := fmt.Sprintf("HTTP %d", status)
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: GitLab refused %s (%s): the token is revoked, expired or wrong; put a valid one in the Secret: %w", what, c.who, label, engine.ErrUnauthenticated)
	case http.StatusForbidden:
		return fmt.Errorf("%s: GitLab does not let %s do it (%s): the token needs the read_api scope to read and api to write, and a role that may manage CI/CD variables (Maintainer): %w",
			what, c.who, label, engine.ErrPermissionDenied)
	case http.StatusNotFound:
		return fmt.Errorf("%s: GitLab answered %s (no such project, group or variable, or the token cannot see it): %w", what, label, engine.ErrNotFound)
	case http.StatusTooManyRequests:
		if d, ok := retryAfter(resp); ok {
			return engine.ThrottledFor(d, fmt.Sprintf("%s: GitLab throttled the calls (%s) and asked to wait %s", what, label, d))
		}
		return fmt.Errorf("%s: GitLab throttled the calls (%s): %w", what, label, engine.ErrThrottled)
	case http.StatusBadRequest:
		fields := refusedFields(err)
		if fields == "" {
			return fmt.Errorf("%s: GitLab refused the request as invalid (%s): %w", what, label, engine.ErrInvalidConfig)
		}
		return fmt.Errorf("%s: GitLab refused %s of the variable (%s): a masked variable takes only a single-line value of at least 8 characters of the base64 alphabet, a value has at most 10,000 characters: %w",
			what, fields, label, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: GitLab answered %s: %w", what, label, engine.ErrUnavailable)
}

var fieldName = regexp.MustCompile(`^[a-z_]{1,40}$`)

// refusedFields names the fields a 400 answer refused (the keys of its
// message object), never the text about them.
func refusedFields(err error) string {
	var er *glapi.ErrorResponse
	if !errors.As(err, &er) {
		return ""
	}
	var body struct {
		Message map[string]json.RawMessage `json:"message"`
	}
	if json.Unmarshal(er.Body, &body) != nil {
		return ""
	}
	var names []string
	for k := range body.Message {
		if fieldName.MatchString(k) {
			names = append(names, strconv.Quote(k))
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return "field " + strings.Join(names, ", ")
}

// taken tells whether a 400 answer says the key is already taken in the
// scope (GitLab: {"message":{"key":["(KEY) has already been taken"]}}).
func taken(err error) bool {
	var er *glapi.ErrorResponse
	if !errors.As(err, &er) {
		return false
	}
	var body struct {
		Message struct {
			Key []string `json:"key"`
		} `json:"message"`
	}
	if json.Unmarshal(er.Body, &body) != nil {
		return false
	}
	for _, m := range body.Message.Key {
		if strings.HasSuffix(m, "has already been taken") {
			return true
		}
	}
	return false
}

// retryAfter reads the wait a 429 asks for: Retry-After in seconds or as
// an HTTP date, else GitLab's RateLimit-Reset (a Unix time).
func retryAfter(resp *glapi.Response) (time.Duration, bool) {
	if resp == nil || resp.Response == nil {
		return 0, false
	}
	h := resp.Header
	v := h.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t).Round(time.Second); d > 0 {
			return d, true
		}
	}
	if s, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		if d := time.Until(time.Unix(s, 0)).Round(time.Second); d > 0 {
			return d, true
		}
	}
	return 0, false
}
