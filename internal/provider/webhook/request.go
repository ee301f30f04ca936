package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// answer is a successful answer: its status, headers and body (at most
// maxBytes).
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do renders req over data, sends it and reads the answer. what says what
// was asked, for messages; extra are headers Watchword adds (If-Match),
// unless the templates set them. Any status but 2xx is an error of the
// contract's classes; no error holds the URL, a header, a body or an
// answer's text, which may hold a value or a credential.
func (c *Client) do(ctx context.Context, req *request, data map[string]any, what string, extra http.Header) (*answer, error) {
	hr, err := c.build(ctx, req, data, what)
	if err != nil {
		return nil, err
	}
	for k, vs := range extra {
		if hr.Header.Get(k) == "" {
			hr.Header[k] = vs
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	resp, err := c.hc.Do(hr.WithContext(ctx))
	if err != nil {
		return nil, transportError(what+c.at(req), err, c.cfg.timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The body of a refusal is not read: it may echo the request.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, statusError(what+c.at(req), resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.maxBytes+1))
	if err != nil {
		return nil, transportError(what+c.at(req)+": reading the answer", err, c.cfg.timeout)
	}
	if int64(len(body)) > c.cfg.maxBytes {
		return nil, fmt.Errorf("%s%s: the answer is longer than %d bytes (webhook.maxResponseBytes); raise the bound or select less: %w",
			what, c.at(req), c.cfg.maxBytes, engine.ErrInvalidConfig)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// at names the request for messages: its field, and the server when the
// url template fixes it.
func (c *Client) at(req *request) string {
	if req.host != "" {
		return fmt.Sprintf(" (%s %s, %s.url)", req.method, req.host, req.field)
	}
	return fmt.Sprintf(" (%s, %s.url)", req.method, req.field)
}

// build renders the request. A template that fails is ErrInvalidConfig:
// its message names the template and the missing key, never a value.
func (c *Client) build(ctx context.Context, req *request, data map[string]any, what string) (*http.Request, error) {
	rawURL, err := render(req.url, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	u, perr := url.Parse(rawURL)
	if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s: %s renders no http(s) URL with a host: %w", what, req.url.Name(), engine.ErrInvalidConfig)
	}
	var body io.Reader
	if req.body != nil {
		b, berr := render(req.body, data)
		if berr != nil {
			return nil, fmt.Errorf("%s: %w", what, berr)
		}
		body = strings.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %s renders no valid request: %w", what, req.field, engine.ErrInvalidConfig)
	}
	for name, t := range req.headers {
		v, herr := render(t, data)
		if herr != nil {
			return nil, fmt.Errorf("%s: %w", what, herr)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%s: %s renders a line break or NUL, which no header may hold: %w", what, t.Name(), engine.ErrInvalidConfig)
		}
		hr.Header.Set(name, v)
	}
	return hr, nil
}

// maxRendered bounds what one template renders.
const maxRendered = 1 << 20

// render executes t over data. Errors of text/template name the template
// and the field or function that failed; Watchword's functions never put
// their input into an error.
func render(t *template.Template, data map[string]any) (string, error) {
	var out limited
	if err := t.Execute(&out, data); err != nil {
		if errors.Is(err, errTooLong) {
			return "", fmt.Errorf("template %s renders more than %d bytes: %w", t.Name(), maxRendered, engine.ErrInvalidConfig)
		}
		msg := strings.TrimPrefix(err.Error(), "template: "+t.Name()+":")
		return "", fmt.Errorf("template %s failed:%s: %w", t.Name(), msg, engine.ErrInvalidConfig)
	}
	return out.String(), nil
}

var errTooLong = errors.New("rendered too long")

type limited struct{ bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if l.Len()+len(p) > maxRendered {
		return 0, errTooLong
	}
	return l.Buffer.Write(p)
}

// escapeURL is appended to every action of a url template: its output is
// percent-encoded but for the unreserved characters of RFC 3986 and '/',
// so that it is one or more whole path segments, or a query value, and
// never adds a query parameter, a fragment or a '.' or '..' segment.
// url.PathEscape would leave '&', '=' and '+', which end a query value.
func escapeURL(v any) (string, error) {
	s := fmt.Sprint(v)
	segs := strings.Split(s, "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." {
			return "", errors.New("a value has a '.' or '..' path segment")
		}
		segs[i] = escapeSegment(seg)
	}
	return strings.Join(segs, "/"), nil
}

func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// transportError is a request that got no answer: ErrUnavailable. The
// error of net/http repeats the URL, which the message leaves out.
func transportError(what string, err error, timeout time.Duration) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if errors.Is(uerr.Err, errRedirect) {
			return fmt.Errorf("%s: the server redirected to another host or scheme, or more than %d times; set the url to where the API answers: %w", what, maxRedirects, engine.ErrInvalidConfig)
		}
		if uerr.Timeout() {
			return fmt.Errorf("%s: no answer within %s (webhook.timeout): %w", what, timeout, engine.ErrUnavailable)
		}
		err = uerr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w: %w", what, err, engine.ErrUnavailable)
	}
	return fmt.Errorf("%s: %v: %w", what, err, engine.ErrUnavailable)
}

// classified is an error of a status, with the wait its Retry-After asks.
type classified struct {
	msg   string
	class error
	after time.Duration
}

func (e *classified) Error() string {
	if e.after > 0 {
		return fmt.Sprintf("%s: %s (retry after %s)", e.msg, e.class, e.after)
	}
	return e.msg + ": " + e.class.Error()
}
func (e *classified) Unwrap() error             { return e.class }
func (e *classified) RetryAfter() time.Duration { return e.after }

// statusError classifies an answer that is not 2xx, by its status alone.
func statusError(what string, resp *http.Response) error {
	code := resp.StatusCode
	after := retryAfter(resp.Header.Get("Retry-After"), time.Now())
	e := &classified{after: after}
	switch {
	case code == http.StatusNotFound || code == http.StatusGone:
		e.msg, e.class = fmt.Sprintf("%s: the server answered HTTP %d: it does not exist", what, code), engine.ErrNotFound
	case code == http.StatusUnauthorized:
		e.msg, e.class = fmt.Sprintf("%s: the server refused the credentials the headers carry (HTTP 401)", what), engine.ErrUnauthenticated
	case code == http.StatusForbidden:
		e.msg, e.class = fmt.Sprintf("%s: the server forbids it to the credentials the headers carry (HTTP 403)", what), engine.ErrPermissionDenied
	case code == http.StatusTooManyRequests:
		e.msg, e.class = fmt.Sprintf("%s: the server asked to slow down (HTTP 429)", what), engine.ErrThrottled
	case code == http.StatusConflict || code == http.StatusPreconditionFailed:
		e.msg, e.class = fmt.Sprintf("%s: another writer changed it meanwhile (HTTP %d)", what, code), engine.ErrUnavailable
	case code == http.StatusServiceUnavailable && after > 0:
		e.msg, e.class = fmt.Sprintf("%s: the server is unavailable (HTTP 503)", what), engine.ErrThrottled
	case code >= 500 || code == http.StatusRequestTimeout:
		e.msg, e.class = fmt.Sprintf("%s: the server answered HTTP %d", what, code), engine.ErrUnavailable
	case code >= 300 && code < 400:
		e.msg, e.class = fmt.Sprintf("%s: the server redirected (HTTP %d) to another host or scheme; set the url to where the API answers", what, code), engine.ErrInvalidConfig
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity || code == http.StatusMethodNotAllowed:
		e.msg, e.class = fmt.Sprintf("%s: the server refused the request as invalid (HTTP %d); check the store's templates and the remote key", what, code), engine.ErrInvalidConfig
	default:
		return fmt.Errorf("%s: the server answered HTTP %d", what, code)
	}
	return e
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; zero
// when absent, malformed or past. A day at most.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return time.Duration(min(max(secs, 0), 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour).Round(time.Second)
	}
	return 0
}
