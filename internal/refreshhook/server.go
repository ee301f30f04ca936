package refreshhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// Notifier refreshes the ExternalSecrets that read keys of a store, and
// tells how many it queued.
type Notifier interface {
	Notify(ctx context.Context, kind, namespace, name string, keys []string) (int, error)
}

// ErrNotRunning is what a Notifier returns when the instance is not the
// one that syncs (yet); the endpoint answers 503.
var ErrNotRunning = errors.New("not running")

// Handler serves Path.
type Handler struct {
	// Stores reads stores (from the cache).
	Stores client.Reader
	// Secrets reads the Secret that holds a store's shared secret.
	Secrets client.Reader
	// Notifier refreshes the ExternalSecrets.
	Notifier Notifier
	// Class is this instance's controller class: stores of another class
	// are not its to refresh.
	Class string
	// Namespaces, when set, are the only namespaces this instance serves
	// (a namespaced install): a notification for a SecretStore elsewhere,
	// or for a ClusterSecretStore, is not its to act on, and is refused as
	// an unknown store is, without asking the cache, which would fail.
	Namespaces []string
	// Options are the endpoint's flags; zero values take the defaults.
	Options

	// secrets keeps each shared secret read for secretTTL, so that a
	// flood of requests (signed or not) costs the API server at most one
	// read of it per secretTTL.
	mu      sync.Mutex
	secrets map[client.ObjectKey]cachedSecret
	reads   singleflight.Group

	// token is the bearer token file's content, read at most once per
	// secretTTL.
	token tokenFile
	// guard is the memory of accepted signatures and the rate limiters.
	guard guard
	// now is the clock; nil means the wall clock (tests set it).
	now func() time.Time
}

// Options configure the endpoint beyond its address (the flags of
// `watchword controller`).
type Options struct {
	// Window is how far a notification's timestamp may be from the
	// server's clock, either way; a signature accepted within it is not
	// accepted again. Zero: DefaultWindow.
	Window time.Duration
	// AllowLegacySignatures accepts, during a transition, notifications
	// signed in the form of before timestamps (the HMAC of the body
	// alone). They carry no time, so nothing tells a replay from a sender
	// announcing the same change again: they are not remembered, and only
	// the rate limits bound them. Off by default.
	AllowLegacySignatures bool
	// BearerTokenFile, when set, holds a token (at least MinTokenLength
	// characters; surrounding white space is ignored) that a sender which
	// cannot sign may send as "Authorization: Bearer <token>", for any
	// store with a refreshHook. It is read again at most every 10 s, so a
	// mounted Secret's new value takes effect without a restart. Weaker
	// than a signature: see docs/operations.md.
	BearerTokenFile string
	// StoreRate and Rate are the notifications accepted a second, per
	// store and in all, each with a burst of ten seconds' worth (at least
	// one). Zero: DefaultStoreRate and DefaultRate.
	StoreRate, Rate float64
	// LeaderPod is this replica's pod, which carries LeaderLabel while its
	// endpoint listens (leader.go); empty: none is labelled.
	LeaderPod types.NamespacedName
}

// DefaultStoreRate and DefaultRate are the notifications accepted a second
// by default per store and in all. One notification names any number of
// keys, so a sender that batches its changes needs few; a store is read
// once per key named, by every notification accepted.
const (
	DefaultStoreRate = 1.0
	DefaultRate      = 10.0
)

// MinTokenLength is the shortest bearer token accepted: 32 characters are
// 128 bits of a hex or base64 random string at least.
const MinTokenLength = 32

// MaxRemembered bounds the signatures remembered to refuse replays. The
// flags keep Rate's most within twice the window (a timestamp may be a
// window ahead) below it (CheckOptions); if it is reached anyway, new
// signatures are refused, not old ones forgotten, which would let their
// replays in.
const MaxRemembered = 1 << 16

// withDefaults fills in the zero values.
func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.StoreRate <= 0 {
		o.StoreRate = DefaultStoreRate
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	return o
}

// burst is ten seconds' worth of a rate, at least one.
func burst(perSecond float64) int {
	return max(1, int(10*perSecond))
}

// CheckOptions tells what is wrong with options, in terms of the flags.
func CheckOptions(o Options) error {
	d := o.withDefaults()
	switch {
	case o.Window < 0 || o.Window > time.Hour:
		return fmt.Errorf("--refresh-hook-timestamp-window %s: use a duration above 0 and at most 1h, such as 5m", o.Window)
	case o.StoreRate < 0 || math.IsInf(o.StoreRate, 0) || math.IsNaN(o.StoreRate):
		return fmt.Errorf("--refresh-hook-store-notifications-per-second %g: use a number above 0", o.StoreRate)
	case o.Rate < 0 || math.IsInf(o.Rate, 0) || math.IsNaN(o.Rate):
		return fmt.Errorf("--refresh-hook-notifications-per-second %g: use a number above 0", o.Rate)
	case d.Rate*2*d.Window.Seconds()+float64(burst(d.Rate)) > MaxRemembered:
		return fmt.Errorf("--refresh-hook-notifications-per-second %g with --refresh-hook-timestamp-window %s: more notifications could be accepted within twice the window than the %d signatures remembered to refuse replays; lower either", d.Rate, d.Window, MaxRemembered)
	}
	return nil
}

// secretTTL is how long a shared secret read is used; a changed secret
// takes effect within it.
const secretTTL = 10 * time.Second

type cachedSecret struct {
	data map[string][]byte
	err  error
	read time.Time
}

// hookSecret reads the Secret that holds a shared secret, through the
// short-lived cache.
func (h *Handler) hookSecret(ctx context.Context, key client.ObjectKey) (map[string][]byte, error) {
	h.mu.Lock()
	c, ok := h.secrets[key]
	h.mu.Unlock()
	if ok && time.Since(c.read) < secretTTL {
		return c.data, c.err
	}
	// Concurrent misses make one read; a failed read is kept as long as
	// a good one, so that a missing or forbidden Secret is not read again
	// for every request either.
	v, _, _ := h.reads.Do(key.String(), func() (any, error) {
		// The read does not end with the request that happened to start
		// it: a caller that hangs up must not leave a failure cached for
		// everyone.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secretTTL)
		defer cancel()
		var sec corev1.Secret
		err := h.Secrets.Get(rctx, key, &sec)
		got := cachedSecret{data: sec.Data, err: err, read: time.Now()}
		h.mu.Lock()
		if h.secrets == nil {
			h.secrets = map[client.ObjectKey]cachedSecret{}
		}
		for k, old := range h.secrets {
			if time.Since(old.read) >= secretTTL {
				delete(h.secrets, k)
			}
		}
		h.secrets[key] = got
		h.mu.Unlock()
		return got, nil
	})
	got := v.(cachedSecret)
	return got.data, got.err
}

// refusal is an answer other than success: its status and short message.
// reason (a fixed phrase, also the metric's label) and detail are for the
// operator only: the log and the metric.
type refusal struct {
	status  int
	message string
	reason  string
	detail  string
	// retryAfter is the Retry-After header of a 429, in seconds.
	retryAfter string
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	log := ctrl.Log.WithName("refresh-hook").WithValues("remote", req.RemoteAddr)
	n, queued, ref := h.serve(req)
	if ref != nil {
		metrics.RefreshHookRefusals.WithLabelValues(ref.reason).Inc()
		log.Info("refresh notification refused", "status", ref.status, "reason", ref.reason, "detail", ref.detail,
			"storeKind", n.Store.Kind, "storeNamespace", n.Store.Namespace, "storeName", n.Store.Name)
		if ref.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPost)
		}
		if ref.retryAfter != "" {
			w.Header().Set("Retry-After", ref.retryAfter)
		}
		http.Error(w, ref.message, ref.status)
		return
	}
	log.V(1).Info("refresh notification accepted", "storeKind", n.Store.Kind, "storeNamespace", n.Store.Namespace,
		"storeName", n.Store.Name, "keys", len(n.Keys), "queued", queued)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]int{"queued": queued})
}

// serve checks and carries out one request. The body is never part of an
// answer or a log line.
func (h *Handler) serve(req *http.Request) (Notification, int, *refusal) {
	if req.Method != http.MethodPost {
		return Notification{}, 0, &refusal{status: http.StatusMethodNotAllowed, message: "only POST is allowed", reason: "method not allowed"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return Notification{}, 0, &refusal{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is larger than %d bytes", MaxBody), reason: "body too large"}
		}
		return Notification{}, 0, &refusal{status: http.StatusBadRequest, message: "the body could not be read", reason: "body unreadable"}
	}
	opts := h.withDefaults()
	now := h.clock()
	// The form of the request is checked before anything is read: these
	// answers depend on the request (and the clock) alone.
	cred, ref := h.credentials(req, now, opts)
	if ref != nil {
		return Notification{}, 0, ref
	}
	n, err := Parse(body)
	if err != nil {
		return Notification{}, 0, &refusal{status: http.StatusBadRequest, message: err.Error(), reason: "malformed"}
	}
	if cred.bearer {
		// The token is checked before the store, so that a caller without
		// it learns nothing of which stores exist.
		if ref = h.checkToken(cred.token, now); ref != nil {
			return n, 0, ref
		}
		if _, _, ref = h.storeHook(req.Context(), n.Store, cred); ref != nil {
			return n, 0, ref
		}
	} else {
		var secret []byte
		if secret, ref = h.sharedSecret(req.Context(), n.Store, cred); ref != nil {
			return n, 0, ref
		}
		if Verify(body, cred.timestamp, cred.signature, secret) != nil {
			return n, 0, cred.notAccepted("wrong signature")
		}
	}
	// Only now, for a notification that proved its sender, is anything
	// remembered or counted: a caller without the secret can neither fill
	// the memory of signatures nor spend the senders' rate.
	release, ref := h.guard.admit(cred.sum, cred.at.Add(opts.Window), storeKey(n.Store), now, opts)
	if ref != nil {
		return n, 0, ref
	}
	if cred.legacy {
		ctrl.Log.WithName("refresh-hook").Info("accepted a notification signed in the legacy form, without "+TimestampHeader+"; move its sender to the signed timestamp (docs/operations.md)",
			"storeKind", n.Store.Kind, "storeNamespace", n.Store.Namespace, "storeName", n.Store.Name)
	}
	queued, err := h.Notifier.Notify(req.Context(), n.Store.Kind, n.Store.Namespace, n.Store.Name, n.Keys)
	if err != nil {
		// Nothing was done: the sender may send the same request again.
		release()
	}
	if errors.Is(err, ErrNotRunning) {
		return n, 0, &refusal{status: http.StatusServiceUnavailable, message: "not ready to refresh; try again", reason: "controller not running"}
	}
	if err != nil {
		return n, 0, &refusal{status: http.StatusInternalServerError, message: "the refresh could not be queued", reason: "queueing failed"}
	}
	return n, queued, nil
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// credentials are what a request proves its sender with: a signature
// (with its timestamp, or in the legacy form without) or a bearer token.
type credentials struct {
	bearer    bool
	token     string
	legacy    bool
	timestamp string
	at        time.Time
	signature string
	// sum is the signature's bytes, by which a replay is known; zero for
	// a bearer token, which is the same in every request, and for the
	// legacy form.
	sum [sha256.Size]byte
}

// notAccepted is the refusal of a credential that does not open the
// store (see the function of that name).
func (c credentials) notAccepted(reason string) *refusal {
	if c.bearer {
		return &refusal{status: http.StatusForbidden, message: errBadToken.Error(), reason: reason}
	}
	return notAccepted(reason)
}

var errBadToken = errors.New("the token was not accepted")

// credentials reads the request's credentials and checks their form and
// the timestamp's window.
func (h *Handler) credentials(req *http.Request, now time.Time, opts Options) (credentials, *refusal) {
	sig := req.Header.Get(SignatureHeader)
	if sig == "" {
		// A sender that cannot sign may send a bearer token instead; a
		// signature, when there is one, is what counts.
		if scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			return credentials{bearer: true, token: strings.TrimSpace(token)}, nil
		}
		return credentials{}, &refusal{status: http.StatusUnauthorized, message: ErrUnsigned.Error(), reason: "unsigned"}
	}
	if !wellFormed(sig) {
		return credentials{}, &refusal{status: http.StatusUnauthorized, message: ErrBadSignature.Error(), reason: "malformed signature"}
	}
	c := credentials{signature: sig, timestamp: req.Header.Get(TimestampHeader)}
	if c.timestamp == "" && opts.AllowLegacySignatures {
		// The legacy form is what it was: nothing tells a replay from a
		// sender that announces the same change again, so it is not
		// remembered (sum stays zero); the rate limits still bound it.
		c.legacy = true
		return c, nil
	}
	at, err := CheckTimestamp(c.timestamp, now, opts.Window)
	switch {
	case errors.Is(err, ErrNoTimestamp):
		return c, &refusal{status: http.StatusUnauthorized, message: err.Error(), reason: "timestamp missing"}
	case errors.Is(err, ErrStale):
		return c, &refusal{status: http.StatusUnauthorized, message: fmt.Sprintf("%s (more than %s either way)", err.Error(), opts.Window), reason: "timestamp outside the window"}
	case err != nil:
		return c, &refusal{status: http.StatusUnauthorized, message: err.Error(), reason: "timestamp malformed"}
	}
	c.at = at
	// wellFormed checked the hex.
	_, _ = hex.Decode(c.sum[:], []byte(strings.TrimPrefix(sig, "sha256=")))
	return c, nil
}

// wellFormed tells whether a signature header has the shape of one
// (sha256= and 64 hex digits), before anything is read to check it.
func wellFormed(sig string) bool {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || len(hexSum) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexSum)
	return err == nil
}

// notAccepted is the one answer to every refusal that depends on the
// cluster rather than on the request's form: a store that is unknown, of
// another controller class, or without refreshHook; a refreshHook Secret
// that is missing, unreadable or empty; and a wrong signature. All look
// the same to the caller (status and body), so that a caller without the
// shared secret learns nothing of which stores or Secrets exist; reason
// tells the operator which it was. (With a bearer token, the same holds
// with the token's own message: credentials.notAccepted.)
func notAccepted(reason string) *refusal {
	return &refusal{status: http.StatusForbidden, message: ErrBadSignature.Error(), reason: reason}
}

// storeHook finds the store's refreshHook, and the namespace of its
// Secret, refusing a store that is not this instance's to refresh.
func (h *Handler) storeHook(ctx context.Context, s StoreRef, cred credentials) (*v1alpha1.RefreshHook, string, *refusal) {
	var hook *v1alpha1.RefreshHook
	var class, secretNS string
	if len(h.Namespaces) > 0 && (s.Kind != v1alpha1.SecretStoreKind || !slices.Contains(h.Namespaces, s.Namespace)) {
		return nil, "", cred.notAccepted("store not served by this namespaced instance")
	}
	switch s.Kind {
	case v1alpha1.SecretStoreKind:
		var st v1alpha1.SecretStore
		if err := h.Stores.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &st); err != nil {
			return nil, "", storeError(err, cred)
		}
		hook, class, secretNS = st.Spec.RefreshHook, st.Spec.Controller, st.Namespace
		if hook != nil && hook.SecretRef.Namespace != "" && hook.SecretRef.Namespace != st.Namespace {
			// A SecretStore reads only from its own namespace.
			return nil, "", cred.notAccepted("refreshHook.secretRef names another namespace")
		}
	default:
		var st v1alpha1.ClusterSecretStore
		if err := h.Stores.Get(ctx, client.ObjectKey{Name: s.Name}, &st); err != nil {
			return nil, "", storeError(err, cred)
		}
		hook, class = st.Spec.RefreshHook, st.Spec.Controller
		if hook != nil {
			secretNS = hook.SecretRef.Namespace
		}
	}
	switch {
	case class != h.Class:
		return nil, "", cred.notAccepted("store of another controller class")
	case hook == nil:
		return nil, "", cred.notAccepted("store without refreshHook")
	case secretNS == "":
		return nil, "", cred.notAccepted("refreshHook.secretRef has no namespace")
	}
	return hook, secretNS, nil
}

// sharedSecret reads the store's refreshHook secret.
func (h *Handler) sharedSecret(ctx context.Context, s StoreRef, cred credentials) ([]byte, *refusal) {
	hook, secretNS, ref := h.storeHook(ctx, s, cred)
	if ref != nil {
		return nil, ref
	}
	data, err := h.hookSecret(ctx, client.ObjectKey{Namespace: secretNS, Name: hook.SecretRef.Name})
	if err != nil {
		ref := cred.notAccepted("refreshHook Secret unreadable")
		ref.detail = reasonOf(err)
		return nil, ref
	}
	v := data[hook.SecretRef.Key]
	if len(v) == 0 {
		return nil, cred.notAccepted("refreshHook Secret without a value at its key")
	}
	return v, nil
}

func storeError(err error, cred credentials) *refusal {
	if apierrors.IsNotFound(err) {
		return cred.notAccepted("unknown store")
	}
	// The cache failed, whatever the store: this tells nothing of it.
	return &refusal{status: http.StatusServiceUnavailable, message: "the store could not be read; try again", reason: "store unreadable", detail: reasonOf(err)}
}

// reasonOf is the API status reason of an error: never its text.
func reasonOf(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "error"
}

// Server serves the endpoint on its own listener, on the leader only (the
// instance whose controllers sync).
type Server struct {
	// Addr is the listen address.
	Addr    string
	Handler http.Handler
	// Leader, when set, is this replica's pod, labelled with LeaderLabel
	// while the endpoint listens.
	Leader *LeaderPod
}

// NeedLeaderElection makes the server run on the leader only.
func (s *Server) NeedLeaderElection() bool { return true }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("refresh hook: listening on %s: %w", s.Addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s.Handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ctrl.Log.WithName("refresh-hook").Info("serving", "address", ln.Addr().String(), "path", Path)
	// The pod is labelled once the listener is up, so that the Service
	// never sends a notification here before it can be taken.
	lctx, stopLabelling := context.WithCancel(ctx)
	labelled := make(chan struct{})
	go func() {
		defer close(labelled)
		if s.Leader != nil {
			s.Leader.Label(lctx)
		}
	}()
	// The label goes first, so that the Service stops sending here, then
	// the requests in flight are answered. The manager releases the lease
	// only after this returns, so a successor's label does not meet this
	// one.
	unlabel := func() {
		stopLabelling()
		<-labelled
		if s.Leader != nil {
			s.Leader.Remove(context.WithoutCancel(ctx))
		}
	}
	select {
	case err := <-done:
		unlabel()
		return fmt.Errorf("refresh hook: %w", err)
	case <-ctx.Done():
		unlabel()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
