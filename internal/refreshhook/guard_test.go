package refreshhook

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingNotifier counts notifications, and fails with fail while it is
// set.
type countingNotifier struct {
	mu    sync.Mutex
	calls int
	fail  error
}

func (n *countingNotifier) Notify(context.Context, string, string, string, []string) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return 0, n.fail
	}
	n.calls++
	return 1, nil
}

func (n *countingNotifier) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// hooked is a handler for SecretStores of namespace team, each with the
// refreshHook Secret hook (value "shared"), at a test clock.
func hooked(t *testing.T, opts Options, stores ...string) (*Handler, *testClock, *countingNotifier) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Data: map[string][]byte{"secret": []byte("shared")}},
		&v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "plain"}})
	for _, name := range stores {
		s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
		s.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "hook", Key: "secret"}}
		b = b.WithObjects(s)
	}
	c := b.Build()
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	n := &countingNotifier{}
	return &Handler{Stores: c, Secrets: c, Notifier: n, Options: opts, now: clock.Now}, clock, n
}

func notification(store string, keys ...string) string {
	return fmt.Sprintf(`{"store": {"kind": "SecretStore", "namespace": "team", "name": %q}, "keys": ["%s"]}`, store, strings.Join(keys, `", "`))
}

func wantCode(t *testing.T, rec *httptest.ResponseRecorder, want int, what string) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("%s: %d %q, want %d", what, rec.Code, rec.Body.String(), want)
	}
}

// TestTimestampWindow: a notification is accepted only when its signed
// timestamp is within the window of the server's clock, either way; the
// timestamp is part of what is signed.
func TestTimestampWindow(t *testing.T) {
	h, clock, n := hooked(t, Options{}, "hooked")
	now := clock.Now()
	b := notification("hooked", "k")
	for _, at := range []time.Duration{-DefaultWindow, 0, DefaultWindow} {
		wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", now.Add(at))), http.StatusAccepted, fmt.Sprintf("signed %s from now", at))
	}
	for _, at := range []time.Duration{-DefaultWindow - time.Second, DefaultWindow + time.Second, -24 * time.Hour} {
		rec := send(h, http.MethodPost, b, signedBy(b, "shared", now.Add(at)))
		wantCode(t, rec, http.StatusUnauthorized, fmt.Sprintf("signed %s from now", at))
		if !strings.Contains(rec.Body.String(), TimestampHeader) {
			t.Errorf("the refusal of a stale timestamp does not name %s: %q", TimestampHeader, rec.Body.String())
		}
	}
	// The time is signed: moving it on invalidates the signature.
	moved := signedBy(b, "shared", now.Add(-time.Hour))
	moved[TimestampHeader] = fmt.Sprint(now.Unix())
	wantCode(t, send(h, http.MethodPost, b, moved), http.StatusForbidden, "a stale request given a new time")
	noTime := signedBy(b, "shared", now)
	delete(noTime, TimestampHeader)
	wantCode(t, send(h, http.MethodPost, b, noTime), http.StatusUnauthorized, "a signature without its time")
	for _, bad := range []string{"soon", "1800000000000", "-1"} {
		hdr := signedBy(b, "shared", now)
		hdr[TimestampHeader] = bad
		wantCode(t, send(h, http.MethodPost, b, hdr), http.StatusUnauthorized, "timestamp "+bad)
	}
	if n.count() != 3 {
		t.Fatalf("%d notifications reached the controller, want the 3 within the window", n.count())
	}

	// The window is configurable.
	h, clock, _ = hooked(t, Options{Window: 30 * time.Second}, "hooked")
	now = clock.Now()
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", now.Add(-31*time.Second))), http.StatusUnauthorized, "31s old with a window of 30s")
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", now.Add(-30*time.Second))), http.StatusAccepted, "30s old with a window of 30s")
}

// TestLegacySignaturesOnlyWhenAllowed: a signature of the body alone, as
// senders made them before timestamps, is refused unless the transition
// flag allows it; then it is accepted as before, again and again.
func TestLegacySignaturesOnlyWhenAllowed(t *testing.T) {
	b := notification("hooked", "k")
	legacy := map[string]string{SignatureHeader: SignLegacy([]byte(b), []byte("shared"))}
	h, _, n := hooked(t, Options{}, "hooked")
	rec := send(h, http.MethodPost, b, legacy)
	wantCode(t, rec, http.StatusUnauthorized, "a legacy signature by default")
	if !strings.Contains(rec.Body.String(), TimestampHeader) {
		t.Errorf("the refusal does not say what is missing: %q", rec.Body.String())
	}
	if n.count() != 0 {
		t.Fatal("a legacy signature reached the controller by default")
	}

	h, clock, n := hooked(t, Options{AllowLegacySignatures: true}, "hooked")
	wantCode(t, send(h, http.MethodPost, b, legacy), http.StatusAccepted, "a legacy signature when allowed")
	wantCode(t, send(h, http.MethodPost, b, legacy), http.StatusAccepted, "the same legacy notification again")
	withTime := map[string]string{SignatureHeader: legacy[SignatureHeader], TimestampHeader: fmt.Sprint(clock.Now().Unix())}
	wantCode(t, send(h, http.MethodPost, b, withTime), http.StatusForbidden, "a legacy signature sent with a time")
	// A timestamped signature, sent as if it were legacy with the time
	// moved into the body, is not a notification.
	signed := signedBy(b, "shared", clock.Now())
	wantCode(t, send(h, http.MethodPost, signed[TimestampHeader]+"."+b, map[string]string{SignatureHeader: signed[SignatureHeader]}),
		http.StatusBadRequest, "the time moved into the body")
	// The timestamped form still works, with its replay protection.
	wantCode(t, send(h, http.MethodPost, b, signed), http.StatusAccepted, "a timestamped signature")
	wantCode(t, send(h, http.MethodPost, b, signed), http.StatusConflict, "a timestamped signature again")
	if n.count() != 3 {
		t.Fatalf("%d notifications reached the controller, want 3", n.count())
	}
}

// TestReplayRefused: a signed request is accepted once; sent again within
// the window it is refused, after the window its timestamp is stale, and
// the memory of it is gone. A request that was refused for a passing
// reason may be sent again.
func TestReplayRefused(t *testing.T) {
	h, clock, n := hooked(t, Options{}, "hooked")
	b := notification("hooked", "k")
	first := signedBy(b, "shared", clock.Now())
	wantCode(t, send(h, http.MethodPost, b, first), http.StatusAccepted, "the first request")
	rec := send(h, http.MethodPost, b, first)
	wantCode(t, rec, http.StatusConflict, "the same request again")
	clock.Add(DefaultWindow)
	wantCode(t, send(h, http.MethodPost, b, first), http.StatusConflict, "the same request at the end of the window")
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", clock.Now())), http.StatusAccepted, "the same notification signed anew")
	clock.Add(time.Second)
	wantCode(t, send(h, http.MethodPost, b, first), http.StatusUnauthorized, "the same request after the window")
	if n.count() != 2 {
		t.Fatalf("%d notifications reached the controller, want 2", n.count())
	}
	// Memory is bounded by the window: what left it is swept.
	clock.Add(2 * DefaultWindow)
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", clock.Now())), http.StatusAccepted, "a later request")
	if got := len(h.guard.seen); got != 1 {
		t.Errorf("%d signatures remembered, want only the one within the window", got)
	}

	// Not running: the same request may be sent again once it is.
	n.fail = ErrNotRunning
	retry := signedBy(b, "shared", clock.Now().Add(time.Second))
	wantCode(t, send(h, http.MethodPost, b, retry), http.StatusServiceUnavailable, "while the controller does not run")
	n.fail = nil
	wantCode(t, send(h, http.MethodPost, b, retry), http.StatusAccepted, "the same request once it runs")

	// Sent many times at once, a request is accepted once.
	once := signedBy(b, "shared", clock.Now().Add(2*time.Second))
	before := n.count()
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Go(func() { codes[i] = send(h, http.MethodPost, b, once).Code })
	}
	wg.Wait()
	accepted := 0
	for _, c := range codes {
		if c == http.StatusAccepted {
			accepted++
		} else if c != http.StatusConflict {
			t.Errorf("a concurrent copy got %d, want 202 or 409", c)
		}
	}
	if accepted != 1 || n.count() != before+1 {
		t.Fatalf("20 concurrent copies: %d accepted, %d notified; want one", accepted, n.count()-before)
	}
}

// TestReplayMemoryFull: when as many signatures as the memory holds are
// within the window, a new one is refused rather than an old one
// forgotten (which would let its replay in).
func TestReplayMemoryFull(t *testing.T) {
	h, clock, n := hooked(t, Options{}, "hooked")
	h.guard.seen = map[[sha256.Size]byte]time.Time{}
	for i := range MaxRemembered {
		h.guard.seen[sha256.Sum256(fmt.Append(nil, i))] = clock.Now().Add(time.Minute)
	}
	b := notification("hooked", "k")
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", clock.Now())), http.StatusServiceUnavailable, "with the memory full")
	if n.count() != 0 {
		t.Fatal("a notification was accepted with the memory of signatures full")
	}
	clock.Add(time.Minute + time.Second)
	wantCode(t, send(h, http.MethodPost, b, signedBy(b, "shared", clock.Now())), http.StatusAccepted, "once the old ones left the window")
}

// TestRateLimits: a store takes StoreRate notifications a second with a
// burst of ten seconds' worth, all stores together Rate; the refusal says
// when to try again. Only notifications that proved their sender count.
func TestRateLimits(t *testing.T) {
	h, clock, n := hooked(t, Options{StoreRate: 1, Rate: 100}, "hooked", "second")
	post := func(store, key string) *httptest.ResponseRecorder {
		b := notification(store, key)
		return send(h, http.MethodPost, b, signedBy(b, "shared", clock.Now()))
	}
	// Wrongly signed requests spend nothing.
	for i := range 50 {
		b := notification("hooked", fmt.Sprint("x", i))
		wantCode(t, send(h, http.MethodPost, b, signedBy(b, "guess", clock.Now())), http.StatusForbidden, "a wrong signature")
	}
	for i := range 10 {
		wantCode(t, post("hooked", fmt.Sprint("k", i)), http.StatusAccepted, fmt.Sprintf("notification %d of the burst", i+1))
	}
	rec := post("hooked", "k10")
	wantCode(t, rec, http.StatusTooManyRequests, "the notification after the burst")
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1 (second)", got)
	}
	wantCode(t, post("second", "k"), http.StatusAccepted, "another store")
	clock.Add(time.Second)
	// The refused request was not remembered: it may be sent again.
	b := notification("hooked", "k10")
	again := signedBy(b, "shared", clock.Now().Add(-time.Second))
	wantCode(t, send(h, http.MethodPost, b, again), http.StatusAccepted, "the refused request a second later")
	wantCode(t, post("hooked", "k11"), http.StatusTooManyRequests, "another in the same second")
	if n.count() != 12 {
		t.Fatalf("%d notifications reached the controller, want 12", n.count())
	}

	// All stores together.
	h, clock, n = hooked(t, Options{StoreRate: 100, Rate: 1}, "hooked", "second")
	for i := range 10 {
		wantCode(t, post([]string{"hooked", "second"}[i%2], fmt.Sprint("k", i)), http.StatusAccepted, fmt.Sprintf("notification %d of the burst", i+1))
	}
	wantCode(t, post("second", "k99"), http.StatusTooManyRequests, "the notification after the overall burst")
	if n.count() != 10 {
		t.Fatalf("%d notifications reached the controller, want 10", n.count())
	}
}

// countingReader is an endless body that counts what was read of it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	r.n += len(p)
	return len(p), nil
}

// TestBodyIsReadNoFurtherThanTheLimit: a body larger than MaxBody is
// refused after MaxBody bytes are read, however much more is sent.
func TestBodyIsReadNoFurtherThanTheLimit(t *testing.T) {
	h, clock, n := hooked(t, Options{}, "hooked")
	body := &countingReader{}
	req := httptest.NewRequest(http.MethodPost, Path, io.LimitReader(body, 64<<20))
	for k, v := range signedBy("", "shared", clock.Now()) {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantCode(t, rec, http.StatusRequestEntityTooLarge, "an endless body")
	if body.n > 2*MaxBody {
		t.Fatalf("%d bytes read of an endless body, want about %d", body.n, MaxBody)
	}
	if n.count() != 0 {
		t.Fatal("an oversized body reached the controller")
	}
}

func TestCheckOptions(t *testing.T) {
	for _, ok := range []Options{{}, {Window: time.Hour, Rate: 5}, {Window: time.Minute, Rate: 500, StoreRate: 0.1}} {
		if err := CheckOptions(ok); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Window: 2 * time.Hour}, "--refresh-hook-timestamp-window 2h0m0s"},
		{Options{Window: -time.Second}, "--refresh-hook-timestamp-window -1s"},
		{Options{StoreRate: -1}, "--refresh-hook-store-notifications-per-second -1"},
		{Options{Rate: -1}, "--refresh-hook-notifications-per-second -1"},
		{Options{Rate: 200}, "more notifications could be accepted within twice the window than the 65536 signatures remembered"},
	} {
		if err := CheckOptions(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}
