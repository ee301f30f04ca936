package notify

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
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Target is one receiver: its kind, its URL and, for a generic webhook,
// the key its requests are signed with. The URL is a secret (Slack's and
// Teams' carry their token): it is never logged, nor put in an error.
type Target struct {
	Kind string
	URL  string
	Key  []byte
}

// The outcomes of a delivery; all but sent are the cause label of
// watchword_notifications_failed_total.
const (
	outcomeSent = "sent"
	// outcomeRefused: the receiver answered a status that says trying
	// again will not help (a 4xx other than 408 and 429: a wrong or
	// revoked URL, an archived channel, a refused body).
	outcomeRefused = "refused"
	// outcomeExhausted: every attempt failed, or a 429 asked to wait
	// longer than the delivery may.
	outcomeExhausted = "exhausted"
	// outcomeUnconfigured: the receivers' Secret could not be read, so
	// there was nowhere to send to.
	outcomeUnconfigured = "unconfigured"
	// outcomeCanceled: the operator stopped (or lost the lead) meanwhile.
	outcomeCanceled = "canceled"
)

// sender delivers notifications: an attempt has a timeout; a failure
// that may pass (a network error, a timeout, 408, 429, 5xx) is tried
// again after a backoff, or after the Retry-After of a 429 or 503.
type sender struct {
	client   *http.Client
	timeout  time.Duration
	attempts int
	backoff  wait.Backoff
	// maxRetryAfter is the longest Retry-After honoured; one asking for
	// more gives up the notification.
	maxRetryAfter time.Duration
	now           func() time.Time
	// retried is told of each attempt that is tried again.
	retried func(kind string)
	// sleep waits d, or less if ctx ends first (then it says false); nil:
	// a timer. Tests see the waits through it.
	sleep func(ctx context.Context, d time.Duration) bool
}

// maxAnswer bounds what is read of an answer, which is then dropped:
// nothing of it is logged (a receiver may echo what it was sent).
const maxAnswer = 4 << 10

// deliver sends ev to t, and says how it ended; err, without the URL,
// tells the last failure.
func (s *sender) deliver(ctx context.Context, t Target, ev Event) (string, error) {
	payload, err := body(t.Kind, ev)
	if err != nil {
		return outcomeRefused, err
	}
	b := s.backoff
	var last error
	for attempt := 1; ; attempt++ {
		retry, wait, aerr := s.attempt(ctx, t, ev, payload)
		if aerr == nil {
			return outcomeSent, nil
		}
		last = aerr
		switch {
		case ctx.Err() != nil:
			return outcomeCanceled, last
		case !retry:
			return outcomeRefused, last
		case attempt >= s.attempts:
			return outcomeExhausted, last
		case wait > s.maxRetryAfter:
			return outcomeExhausted, fmt.Errorf("%w; the receiver asked to wait %s, more than %s", last, wait, s.maxRetryAfter)
		}
		if step := b.Step(); wait < step {
			wait = step
		}
		if s.retried != nil {
			s.retried(t.Kind)
		}
		if !s.wait(ctx, wait) {
			return outcomeCanceled, last
		}
	}
}

func (s *sender) wait(ctx context.Context, d time.Duration) bool {
	if s.sleep != nil {
		return s.sleep(ctx, d)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// attempt makes one request. It tells whether a failure may be tried
// again, and how long the receiver asked to wait first (Retry-After).
func (s *sender) attempt(ctx context.Context, t Target, ev Event, payload []byte) (retry bool, wait time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, t.URL, bytes.NewReader(payload))
	if err != nil {
		return false, 0, errors.New("the URL is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "watchword")
	if t.Kind == KindWebhook {
		ts, sig := Sign(payload, t.Key, s.now())
		req.Header.Set(TimestampHeader, ts)
		req.Header.Set(SignatureHeader, sig)
		req.Header.Set(DeliveryHeader, ev.ID)
		req.Header.Set(EventHeader, ev.Type)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return true, 0, redact(actx, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return false, 0, nil
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return true, retryAfter(resp.Header.Get("Retry-After"), s.now()), fmt.Errorf("the receiver answered %d", code)
	case code == http.StatusRequestTimeout || code >= 500:
		return true, 0, fmt.Errorf("the receiver answered %d", code)
	default:
		return false, 0, fmt.Errorf("the receiver answered %d", code)
	}
}

// redact is the error of a request without the URL, which net/http puts
// in its errors.
func redact(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("the request timed out")
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if uerr.Timeout() {
			return errors.New("the request timed out")
		}
		err = uerr.Err
	}
	return fmt.Errorf("the request failed: %s", err)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 when
// there is none or it does not parse.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(secs, 0)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
