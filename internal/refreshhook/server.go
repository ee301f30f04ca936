package refreshhook

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	// secrets keeps each shared secret read for secretTTL, so that a
	// flood of requests (signed or not) costs the API server at most one
	// read of it per secretTTL.
	mu      sync.Mutex
	secrets map[client.ObjectKey]cachedSecret
	reads   singleflight.Group
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
	sig := req.Header.Get(SignatureHeader)
	if sig == "" {
		return Notification{}, 0, &refusal{status: http.StatusUnauthorized, message: ErrUnsigned.Error(), reason: "unsigned"}
	}
	if !wellFormed(sig) {
		return Notification{}, 0, &refusal{status: http.StatusUnauthorized, message: ErrBadSignature.Error(), reason: "malformed signature"}
	}
	n, err := Parse(body)
	if err != nil {
		return Notification{}, 0, &refusal{status: http.StatusBadRequest, message: err.Error(), reason: "malformed"}
	}
	secret, ref := h.sharedSecret(req.Context(), n.Store)
	if ref != nil {
		return n, 0, ref
	}
	if Verify(body, sig, secret) != nil {
		return n, 0, notAccepted("wrong signature")
	}
	queued, err := h.Notifier.Notify(req.Context(), n.Store.Kind, n.Store.Namespace, n.Store.Name, n.Keys)
	if errors.Is(err, ErrNotRunning) {
		return n, 0, &refusal{status: http.StatusServiceUnavailable, message: "not ready to refresh; try again", reason: "controller not running"}
	}
	if err != nil {
		return n, 0, &refusal{status: http.StatusInternalServerError, message: "the refresh could not be queued", reason: "queueing failed"}
	}
	return n, queued, nil
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
// tells the operator which it was.
func notAccepted(reason string) *refusal {
	return &refusal{status: http.StatusForbidden, message: ErrBadSignature.Error(), reason: reason}
}

// sharedSecret reads the store's refreshHook secret.
func (h *Handler) sharedSecret(ctx context.Context, s StoreRef) ([]byte, *refusal) {
	var hook *v1alpha1.RefreshHook
	var class, secretNS string
	if len(h.Namespaces) > 0 && (s.Kind != v1alpha1.SecretStoreKind || !slices.Contains(h.Namespaces, s.Namespace)) {
		return nil, notAccepted("store not served by this namespaced instance")
	}
	switch s.Kind {
	case v1alpha1.SecretStoreKind:
		var st v1alpha1.SecretStore
		if err := h.Stores.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &st); err != nil {
			return nil, storeError(err)
		}
		hook, class, secretNS = st.Spec.RefreshHook, st.Spec.Controller, st.Namespace
		if hook != nil && hook.SecretRef.Namespace != "" && hook.SecretRef.Namespace != st.Namespace {
			// A SecretStore reads only from its own namespace.
			return nil, notAccepted("refreshHook.secretRef names another namespace")
		}
	default:
		var st v1alpha1.ClusterSecretStore
		if err := h.Stores.Get(ctx, client.ObjectKey{Name: s.Name}, &st); err != nil {
			return nil, storeError(err)
		}
		hook, class = st.Spec.RefreshHook, st.Spec.Controller
		if hook != nil {
			secretNS = hook.SecretRef.Namespace
		}
	}
	switch {
	case class != h.Class:
		return nil, notAccepted("store of another controller class")
	case hook == nil:
		return nil, notAccepted("store without refreshHook")
	case secretNS == "":
		return nil, notAccepted("refreshHook.secretRef has no namespace")
	}
	data, err := h.hookSecret(ctx, client.ObjectKey{Namespace: secretNS, Name: hook.SecretRef.Name})
	if err != nil {
		ref := notAccepted("refreshHook Secret unreadable")
		ref.detail = reasonOf(err)
		return nil, ref
	}
	v := data[hook.SecretRef.Key]
	if len(v) == 0 {
		return nil, notAccepted("refreshHook Secret without a value at its key")
	}
	return v, nil
}

func storeError(err error) *refusal {
	if apierrors.IsNotFound(err) {
		return notAccepted("unknown store")
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
	select {
	case err := <-done:
		return fmt.Errorf("refresh hook: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
