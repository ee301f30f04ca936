package vault

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// loginFunc logs in and returns a token with its lifetime (0: no expiry).
type loginFunc func(ctx context.Context, t transport) (token string, ttl time.Duration, renewable bool, err error)

// session holds the Vault token of one store: a static token, or one that
// a login method obtains, renews before it expires and obtains again after
// a 403.
type session struct {
	t     transport
	login loginFunc // nil for a static token
	now   func() time.Time

	mu        sync.Mutex
	token     string
	expires   time.Time // zero: never
	renewable bool
	issued    time.Time
}

func staticSession(t transport, token string) *session {
	return &session{t: t, token: token, now: time.Now}
}

func loginSession(t transport, login loginFunc) *session {
	return &session{t: t, login: login, now: time.Now}
}

// get returns a valid token, logging in or renewing as needed.
func (s *session) get(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.login == nil {
		return s.token, nil
	}
	now := s.now()
	if s.token != "" && (s.expires.IsZero() || now.Before(s.renewAt())) {
		return s.token, nil
	}
	if s.token != "" && s.renewable && now.Before(s.expires) {
		if err := s.renewLocked(ctx); err == nil {
			return s.token, nil
		}
	}
	return s.token, s.loginLocked(ctx)
}

// renewAt is two thirds into the token's life.
func (s *session) renewAt() time.Time {
	return s.issued.Add(s.expires.Sub(s.issued) * 2 / 3)
}

func (s *session) loginLocked(ctx context.Context) error {
	tok, ttl, renewable, err := s.login(ctx, s.t)
	if err != nil {
		s.token = ""
		return err
	}
	s.token, s.renewable, s.issued = tok, renewable, s.now()
	s.expires = time.Time{}
	if ttl > 0 {
		s.expires = s.issued.Add(ttl)
	}
	return nil
}

func (s *session) renewLocked(ctx context.Context) error {
	var out authResponse
	if err := s.t.do(ctx, http.MethodPost, "auth/token/renew-self", nil, s.token, map[string]any{}, &out); err != nil {
		return err
	}
	s.issued = s.now()
	s.expires = time.Time{}
	if out.Auth.LeaseDuration > 0 {
		s.expires = s.issued.Add(time.Duration(out.Auth.LeaseDuration) * time.Second)
	}
	return nil
}

// relogin drops a token that Vault refused, so that the next get logs in
// again. It reports whether a new login can help.
func (s *session) relogin(refused string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.login == nil || s.token != refused {
		return s.login != nil
	}
	s.token = ""
	return true
}

type authResponse struct {
	Auth struct {
		ClientToken   string `json:"client_token"`
		LeaseDuration int    `json:"lease_duration"`
		Renewable     bool   `json:"renewable"`
	} `json:"auth"`
}

// loginWith posts credentials to an auth method's login endpoint.
func loginWith(method, mount string, body func(ctx context.Context) (map[string]any, error)) loginFunc {
	return func(ctx context.Context, t transport) (string, time.Duration, bool, error) {
		payload, err := body(ctx)
		if err != nil {
			return "", 0, false, err
		}
		var out authResponse
		if err := t.do(ctx, http.MethodPost, "auth/"+mount+"/login", nil, "", payload, &out); err != nil {
			what := fmt.Sprintf("logging in to Vault with %s auth at auth/%s", method, mount)
			if isStatus(err, http.StatusBadRequest) {
				// Login endpoints answer 400 to credentials they reject.
				return "", 0, false, fmt.Errorf("%s: the credentials were rejected (%v): %w", what, err, engine.ErrPermissionDenied)
			}
			return "", 0, false, classify(what, err)
		}
		if out.Auth.ClientToken == "" {
			return "", 0, false, fmt.Errorf("%s login at auth/%s returned no token: %w", method, mount, engine.ErrPermissionDenied)
		}
		return out.Auth.ClientToken, time.Duration(out.Auth.LeaseDuration) * time.Second, out.Auth.Renewable, nil
	}
}
