package failure

import (
	"errors"
	"fmt"
	"time"
)

// retryAfter is implemented by errors that say when to try again: a
// store's Retry-After header, a plugin's RetryInfo.
type retryAfter interface{ RetryAfter() time.Duration }

// RetryAfter tells how long err asks to wait before the next call to the
// store, and whether it says so at all.
func RetryAfter(err error) (time.Duration, bool) {
	var ra retryAfter
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		return ra.RetryAfter(), true
	}
	return 0, false
}

// ThrottledFor returns an error of class ErrThrottled that asks to wait d
// before the next call; msg names what was asked, never a value.
func ThrottledFor(d time.Duration, msg string) error {
	return &throttled{msg: msg, after: d}
}

type throttled struct {
	msg   string
	after time.Duration
}

func (e *throttled) Error() string {
	if e.after > 0 {
		return fmt.Sprintf("%s: %s (retry after %s)", e.msg, ErrThrottled, e.after)
	}
	return e.msg + ": " + ErrThrottled.Error()
}
func (e *throttled) Unwrap() error             { return ErrThrottled }
func (e *throttled) RetryAfter() time.Duration { return e.after }
