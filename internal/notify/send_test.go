package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

var signingKey = []byte("0123456789abcdef0123456789abcdef")

// receiver is a local HTTP server that answers each request as answer
// says (by the request's number, from 1), and keeps what it received.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, r)
		rc.bodies = append(rc.bodies, b)
		n := len(rc.requests)
		rc.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

// testSender sends with a backoff of 1s doubling, and records the waits
// instead of making them.
func testSender(attempts int, timeout time.Duration) (*sender, *[]time.Duration) {
	var waits []time.Duration
	s := &sender{client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		timeout: timeout, attempts: attempts, maxRetryAfter: time.Minute, now: func() time.Time { return at },
		backoff: wait.Backoff{Duration: time.Second, Factor: 2, Steps: attempts},
		sleep: func(_ context.Context, d time.Duration) bool {
			waits = append(waits, d)
			return true
		}}
	return s, &waits
}

// TestDeliverSignedWebhook: a generic webhook's request carries the body,
// its signature over the timestamp and the body, the delivery ID and the
// type; the receiver's check accepts it.
func TestDeliverSignedWebhook(t *testing.T) {
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s, _ := testSender(3, time.Second)
	outcome, err := s.deliver(context.Background(), Target{Kind: KindWebhook, URL: rc.URL + "/hooks/watchword", Key: signingKey}, restarted())
	if outcome != outcomeSent || err != nil {
		t.Fatalf("outcome %s, %v", outcome, err)
	}
	r, b := rc.requests[0], rc.bodies[0]
	if r.Method != http.MethodPost || r.URL.Path != "/hooks/watchword" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s %s, content type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if r.Header.Get(TimestampHeader) != "1795798800" || r.Header.Get(DeliveryHeader) != restarted().ID || r.Header.Get(EventHeader) != TypeRestarted {
		t.Errorf("headers %v", r.Header)
	}
	if err := Verify(b, r.Header.Get(TimestampHeader), r.Header.Get(SignatureHeader), signingKey, at, 5*time.Minute); err != nil {
		t.Errorf("the receiver refuses the signature: %v", err)
	}
	want, _ := body(KindWebhook, restarted())
	if string(b) != string(want) {
		t.Errorf("body %s, want %s", b, want)
	}
}

// TestDeliverChat: Slack's and Teams' receivers get their own bodies,
// unsigned, and answer as they do (200 "ok", 202).
func TestDeliverChat(t *testing.T) {
	slack := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	teams := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	s, _ := testSender(1, time.Second)
	for _, tg := range []Target{{Kind: KindSlack, URL: slack.URL + "/services/T0/B0/XXXX"}, {Kind: KindTeams, URL: teams.URL + "/workflows/1/triggers/manual/paths/invoke?sig=XXXX"}} {
		if outcome, err := s.deliver(context.Background(), tg, held()); outcome != outcomeSent {
			t.Errorf("%s: %s, %v", tg.Kind, outcome, err)
		}
	}
	checkSlack(t, slack.bodies[0])
	checkTeams(t, teams.bodies[0])
	if slack.requests[0].Header.Get(SignatureHeader) != "" || teams.requests[0].Header.Get(SignatureHeader) != "" {
		t.Error("a chat webhook's request is signed")
	}
}

// TestDeliverRetries: failures that may pass (5xx, 408, 429, a refused
// connection, a timeout) are tried again after a doubling backoff, or a
// longer Retry-After; a 4xx is not; the attempts are bounded; a
// Retry-After beyond the longest honoured gives up.
func TestDeliverRetries(t *testing.T) {
	cases := []struct {
		name        string
		answers     []int
		retryAfter  string
		attempts    int
		wantOutcome string
		wantTries   int
		wantWaits   []time.Duration
	}{
		{"5xx then success", []int{500, 502, 200}, "", 5, outcomeSent, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"408 then success", []int{408, 204}, "", 5, outcomeSent, 2, []time.Duration{time.Second}},
		{"429 with Retry-After", []int{429, 200}, "7", 5, outcomeSent, 2, []time.Duration{7 * time.Second}},
		{"429 with a short Retry-After waits the backoff", []int{429, 429, 200}, "0", 5, outcomeSent, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"503 with an HTTP date", []int{503, 200}, at.Add(30 * time.Second).Format(http.TimeFormat), 5, outcomeSent, 2, []time.Duration{30 * time.Second}},
		{"429 asking too long", []int{429, 200}, "3600", 5, outcomeExhausted, 1, nil},
		{"always 500", []int{500, 500, 500, 500}, "", 3, outcomeExhausted, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"404 is final", []int{404, 200}, "", 5, outcomeRefused, 1, nil},
		{"410 is final", []int{410, 200}, "", 5, outcomeRefused, 1, nil},
		{"a redirect is not followed", []int{302, 200}, "", 5, outcomeRefused, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if c.retryAfter != "" {
					w.Header().Set("Retry-After", c.retryAfter)
				}
				if c.answers[n-1] == 302 {
					w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
				}
				w.WriteHeader(c.answers[n-1])
			})
			s, waits := testSender(c.attempts, time.Second)
			outcome, err := s.deliver(context.Background(), Target{Kind: KindSlack, URL: rc.URL + "/services/T0/B0/TOKEN"}, restarted())
			if outcome != c.wantOutcome || rc.count() != c.wantTries {
				t.Fatalf("outcome %s after %d tries (%v), want %s after %d", outcome, rc.count(), err, c.wantOutcome, c.wantTries)
			}
			if len(*waits) != len(c.wantWaits) {
				t.Fatalf("waits %v, want %v", *waits, c.wantWaits)
			}
			for i := range c.wantWaits {
				if (*waits)[i] != c.wantWaits[i] {
					t.Errorf("waits %v, want %v", *waits, c.wantWaits)
				}
			}
			if outcome != outcomeSent && (err == nil || strings.Contains(err.Error(), "TOKEN")) {
				t.Errorf("error %v: want one without the URL", err)
			}
		})
	}
}

// TestDeliverTimeout: an attempt that the receiver does not answer
// within the timeout is given up and tried again; the error says so,
// without the URL.
func TestDeliverTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	s, waits := testSender(2, 50*time.Millisecond)
	outcome, err := s.deliver(context.Background(), Target{Kind: KindTeams, URL: rc.URL + "/workflows/abc?sig=TOKEN"}, restarted())
	if outcome != outcomeExhausted || rc.count() != 2 || len(*waits) != 1 {
		t.Fatalf("outcome %s after %d tries and waits %v, want exhausted after 2", outcome, rc.count(), *waits)
	}
	if err == nil || err.Error() != "the request timed out" {
		t.Errorf("error %v, want a timeout without the URL", err)
	}
}

// TestDeliverUnreachable: a receiver that refuses connections is tried
// again, and the error holds neither the URL's path nor its query.
func TestDeliverUnreachable(t *testing.T) {
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	url := rc.URL + "/services/T0/B0/TOKEN?sig=SIG"
	rc.Close()
	s, waits := testSender(3, time.Second)
	outcome, err := s.deliver(context.Background(), Target{Kind: KindSlack, URL: url}, restarted())
	if outcome != outcomeExhausted || len(*waits) != 2 {
		t.Fatalf("outcome %s, waits %v", outcome, *waits)
	}
	if err == nil || strings.Contains(err.Error(), "TOKEN") || strings.Contains(err.Error(), "SIG") || strings.Contains(err.Error(), "/services") {
		t.Errorf("error %v: want one without the URL", err)
	}
	t.Logf("error: %v", err)
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"":     0,
		"12":   12 * time.Second,
		" 3 ":  3 * time.Second,
		"-4":   0,
		"soon": 0,
		at.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		at.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := retryAfter(v, at); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}
