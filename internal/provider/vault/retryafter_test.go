package vault

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, header string
		want         time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "5", 5 * time.Second},
		{"spaces", " 7 ", 7 * time.Second},
		{"zero", "0", 0},
		{"negative", "-3", 0},
		{"http date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
		{"huge is capped at a day", "999999999", 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfterHeader(tc.header, now); got != tc.want {
				t.Fatalf("Retry-After %q: got %s, want %s", tc.header, got, tc.want)
			}
		})
	}
}

func TestClassifyTellsCredentialsAndThrottling(t *testing.T) {
	throttled := classify(`reading "kv/db"`, &apiError{status: http.StatusTooManyRequests, retryAfter: 5 * time.Second})
	if d, ok := failure.RetryAfter(throttled); !errors.Is(throttled, engine.ErrThrottled) || !ok || d != 5*time.Second {
		t.Fatalf("a 429 with Retry-After 5 became %v (retry after %s, %v)", throttled, d, ok)
	}
	if err := classify(`reading "kv/db"`, &apiError{status: http.StatusUnauthorized}); !errors.Is(err, engine.ErrUnauthenticated) {
		t.Fatalf("a 401 became %v, want ErrUnauthenticated", err)
	}
	revoked := classify(`reading "kv/db"`, &refusedError{who: "the token", op: "read", path: "kv/data/db", unauthenticated: true})
	if !errors.Is(revoked, engine.ErrUnauthenticated) {
		t.Fatalf("a token that cannot look itself up became %v, want ErrUnauthenticated", revoked)
	}
	denied := classify(`reading "kv/db"`, &refusedError{who: "the token", op: "read", path: "kv/data/db"})
	if errors.Is(denied, engine.ErrUnauthenticated) || !errors.Is(denied, engine.ErrPermissionDenied) {
		t.Fatalf("a denial by policy became %v, want ErrPermissionDenied only", denied)
	}
}
