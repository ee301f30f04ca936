// Package refreshhook is the refresh endpoint: a notification, signed with
// a store's shared secret, names keys of the store that changed, and every
// ExternalSecret that reads one of them is refreshed at once.
//
// request.go is pure: parsing a notification, checking its timestamp and
// its signature. server.go serves the endpoint; guard.go remembers the
// signatures it accepted and limits the rate; token.go reads and checks
// the optional bearer token; leader.go labels the leader's pod, which the
// endpoint's Service selects.
package refreshhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Path is the endpoint's path.
const Path = "/hooks/refresh"

// SignatureHeader carries "sha256=<hex>": the HMAC-SHA256, keyed with the
// store's shared secret, of the TimestampHeader's value, a dot and the raw
// body (in the legacy form, without a timestamp, of the body alone).
const SignatureHeader = "X-Watchword-Signature"

// TimestampHeader carries the time the notification was signed, in whole
// seconds since the Unix epoch. It is part of what is signed, so a
// captured request cannot be sent again later with a new time: one whose
// time is more than the window from the server's clock is refused, and
// one within it is accepted once.
const TimestampHeader = "X-Watchword-Timestamp"

// DefaultWindow is how far a notification's timestamp may be from the
// server's clock, either way, by default: senders' clocks may be off by a
// little, and a request takes a moment to arrive; five minutes is what
// the common webhook signers (Slack, Stripe) allow.
const DefaultWindow = 5 * time.Minute

// MaxBody is the largest body accepted, in bytes.
const MaxBody = 64 << 10

// maxKeyLength bounds one remote key.
const maxKeyLength = 1024

// StoreRef names the store a notification is about.
type StoreRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Notification is a parsed request: keys of a store that changed.
type Notification struct {
	Store StoreRef `json:"store"`
	Keys  []string `json:"keys"`
}

// Errors of Parse and Verify. Their texts are fixed: none tells anything
// of the body.
var (
	ErrMalformed    = errors.New("the body is not a notification: JSON with store (kind, namespace, name) and keys")
	ErrNoStore      = errors.New("store.kind must be SecretStore or ClusterSecretStore, store.name must be set, and store.namespace set for a SecretStore only")
	ErrNoKeys       = errors.New("keys must list at least one non-empty remote key of at most 1024 characters")
	ErrUnsigned     = errors.New("the notification is not signed: send " + TimestampHeader + ": <Unix time in seconds> and " + SignatureHeader + ": sha256=<hex HMAC-SHA256 of the timestamp, a dot and the body>")
	ErrBadSignature = errors.New("the signature was not accepted")
	ErrNoTimestamp  = errors.New("the notification has no " + TimestampHeader + ": send the Unix time in seconds, and sign it, a dot and the body")
	ErrBadTimestamp = errors.New(TimestampHeader + " is not a Unix time in whole seconds")
	ErrStale        = errors.New(TimestampHeader + " is too far from this server's clock: sign each request when it is sent, and check the sender's clock")
)

// Parse reads a notification. Keys are kept once each, in order.
func Parse(body []byte) (Notification, error) {
	var n Notification
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return Notification{}, ErrMalformed
	}
	if dec.More() {
		return Notification{}, ErrMalformed
	}
	s := n.Store
	switch {
	case s.Name == "":
		return Notification{}, ErrNoStore
	case s.Kind == v1alpha1.SecretStoreKind && s.Namespace == "":
		return Notification{}, ErrNoStore
	case s.Kind == v1alpha1.ClusterSecretStoreKind && s.Namespace != "":
		return Notification{}, ErrNoStore
	case s.Kind != v1alpha1.SecretStoreKind && s.Kind != v1alpha1.ClusterSecretStoreKind:
		return Notification{}, ErrNoStore
	}
	var keys []string
	seen := map[string]bool{}
	for _, k := range n.Keys {
		if k == "" || len(k) > maxKeyLength {
			return Notification{}, ErrNoKeys
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return Notification{}, ErrNoKeys
	}
	n.Keys = keys
	return n, nil
}

// Sign signs body under secret at the time at: it returns the values of
// TimestampHeader and SignatureHeader.
func Sign(body, secret []byte, at time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	return timestamp, "sha256=" + hex.EncodeToString(mac(timestamp, body, secret))
}

// SignLegacy is the SignatureHeader value of the legacy form, the HMAC of
// the body alone, which carries no time and can be replayed: the endpoint
// accepts it only while a transition allows it (AllowLegacySignatures).
func SignLegacy(body, secret []byte) string {
	return "sha256=" + hex.EncodeToString(mac("", body, secret))
}

// Verify checks the SignatureHeader value header of body signed at
// timestamp (the TimestampHeader value; empty for the legacy form) under
// secret, in constant time. An empty secret accepts nothing. Whether the
// timestamp is recent is CheckTimestamp's to say.
func Verify(body []byte, timestamp, header string, secret []byte) error {
	if header == "" {
		return ErrUnsigned
	}
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrBadSignature
	}
	if !hmac.Equal(got, mac(timestamp, body, secret)) {
		return ErrBadSignature
	}
	return nil
}

// maxTimestampDigits bounds the TimestampHeader: seconds since 1970 have
// ten digits until the year 2286.
const maxTimestampDigits = 12

// CheckTimestamp reads a TimestampHeader value and checks that it is
// within window of now, either way.
func CheckTimestamp(v string, now time.Time, window time.Duration) (time.Time, error) {
	if v == "" {
		return time.Time{}, ErrNoTimestamp
	}
	// Digits only: no sign, no fraction, no spaces, so that one time has
	// one spelling and the signed text is what the sender meant.
	if len(v) > maxTimestampDigits || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, ErrBadTimestamp
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, ErrBadTimestamp
	}
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > window || d < -window {
		return at, ErrStale
	}
	return at, nil
}

// mac is the HMAC-SHA256 under secret of timestamp, a dot and body, or of
// body alone without a timestamp (the legacy form). The dot ends the
// timestamp, which is digits only, so no two timestamped requests sign the
// same text; and a signature of one form is no use in the other, since
// what the legacy form signs is a body, which Parse accepts only as a JSON
// object, never as digits and a dot.
func mac(timestamp string, body, secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	if timestamp != "" {
		h.Write([]byte(timestamp))
		h.Write([]byte{'.'})
	}
	h.Write(body)
	return h.Sum(nil)
}
