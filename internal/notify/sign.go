package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a generic webhook's request. The signature has the form
// of the refresh endpoint's (docs/operations.md), so that one receiver's
// code can check both.
const (
	// SignatureHeader carries "sha256=<hex>": the HMAC-SHA256, keyed with
	// the signing key, of the TimestampHeader's value, a dot and the raw
	// body.
	SignatureHeader = "X-Watchword-Signature"
	// TimestampHeader carries when the request was signed, in whole
	// seconds since the Unix epoch. It is signed too: a receiver refuses a
	// request whose time is far from its clock (five minutes is usual),
	// and one whose ID it has seen, so that a captured request cannot be
	// sent again.
	TimestampHeader = "X-Watchword-Timestamp"
	// DeliveryHeader carries the notification's ID, the same on every
	// attempt and every receiver.
	DeliveryHeader = "X-Watchword-Delivery"
	// EventHeader carries the notification's type.
	EventHeader = "X-Watchword-Event"
)

// ErrBadSignature is Verify's answer to a signature it does not accept.
var ErrBadSignature = errors.New("the signature was not accepted")

// Sign signs body under key at the time at: the values of TimestampHeader
// and SignatureHeader. Each attempt is signed anew, at its own time.
func Sign(body, key []byte, at time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	return timestamp, "sha256=" + hex.EncodeToString(mac(timestamp, body, key))
}

// Verify checks the SignatureHeader value sig of body signed at timestamp
// under key, in constant time; and that timestamp is within window of
// now, either way. It is what a receiver written in Go does
// (docs/notifications.md has a stand-alone copy).
func Verify(body []byte, timestamp, sig string, key []byte, now time.Time, window time.Duration) error {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || len(key) == 0 || timestamp == "" || strings.Trim(timestamp, "0123456789") != "" {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || !hmac.Equal(got, mac(timestamp, body, key)) {
		return ErrBadSignature
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(secs, 0)); d > window || d < -window {
		return ErrBadSignature
	}
	return nil
}

// mac is the HMAC-SHA256 under key of timestamp, a dot and body.
func mac(timestamp string, body, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
