package refreshhook

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"sync"
	"time"
)

// tokenFile is the bearer token, as the SHA-256 of the file's content,
// read again at most every secretTTL so that a rotated Secret takes effect
// without a restart.
type tokenFile struct {
	mu   sync.Mutex
	sum  [sha256.Size]byte
	err  error
	read time.Time
}

var errTokenTooShort = errors.New("too short")

// ReadToken reads a bearer token file: its content without surrounding
// white space, at least MinTokenLength characters. Its errors never hold
// the content.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("missing")
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("not readable")
	case err != nil:
		return nil, errors.New("unreadable")
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinTokenLength {
		return nil, errTokenTooShort
	}
	return b, nil
}

func (t *tokenFile) get(path string, now time.Time) ([sha256.Size]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.read.IsZero() || now.Sub(t.read) >= secretTTL || now.Before(t.read) {
		b, err := ReadToken(path)
		t.sum, t.err, t.read = sha256.Sum256(b), err, now
	}
	return t.sum, t.err
}

// checkToken compares a bearer token with the file's, in constant time:
// both are hashed first, so not even the length is compared openly.
func (h *Handler) checkToken(got string, now time.Time) *refusal {
	bad := func(reason, detail string) *refusal {
		return &refusal{status: http.StatusForbidden, message: errBadToken.Error(), reason: reason, detail: detail}
	}
	if h.BearerTokenFile == "" {
		return bad("bearer token not accepted by this instance", "")
	}
	want, err := h.token.get(h.BearerTokenFile, now)
	if err != nil {
		return bad("bearer token file unusable", err.Error())
	}
	sum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
		return bad("wrong bearer token", "")
	}
	return nil
}
