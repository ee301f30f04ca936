// Package refreshhook is the refresh endpoint: a notification, signed with
// a store's shared secret, names keys of the store that changed, and every
// ExternalSecret that reads one of them is refreshed at once.
//
// request.go is pure: parsing a notification and checking its signature.
// server.go serves the endpoint.
package refreshhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Path is the endpoint's path.
const Path = "/hooks/refresh"

// SignatureHeader carries "sha256=<hex>": the HMAC-SHA256 of the raw body
// keyed with the store's shared secret.
const SignatureHeader = "X-Watchword-Signature"

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
	ErrUnsigned     = errors.New("the notification is not signed: send " + SignatureHeader + ": sha256=<hex HMAC-SHA256 of the body>")
	ErrBadSignature = errors.New("the signature was not accepted")
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

// Sign is the SignatureHeader value of body under secret.
func Sign(body, secret []byte) string {
	return "sha256=" + hex.EncodeToString(mac(body, secret))
}

// Verify checks the SignatureHeader value header of body under secret, in
// constant time. An empty secret accepts nothing.
func Verify(body []byte, header string, secret []byte) error {
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
	if !hmac.Equal(got, mac(body, secret)) {
		return ErrBadSignature
	}
	return nil
}

func mac(body, secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return h.Sum(nil)
}
