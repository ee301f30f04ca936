package vault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// session holds the Vault token of one store: a static token, or one that
// a login method obtains, renews before it expires and obtains again after
// a 403.
type session struct {
	t     transport
	login *login // nil for a static token
	now   func() time.Time

	mu        sync.Mutex
	token     string
	expires   time.Time // zero: never
	renewable bool
	issued    time.Time
	// whoToken is the token that who describes; whoInvalid tells that
	// Vault did not let it look itself up (expired or revoked).
	whoToken, who string
	whoInvalid    bool
}

func staticSession(t transport, token string) *session {
	return &session{t: t, token: token, now: time.Now}
}

func loginSession(t transport, l *login) *session {
	return &session{t: t, login: l, now: time.Now}
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
	tok, ttl, renewable, err := s.login.do(ctx, s.t)
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

// login is one way of obtaining a token: an auth method, its mount, who
// logs in (for messages) and the body of the login request.
type login struct {
	method, mount string
	// endpoint is the login path under the mount; empty: "login".
	endpoint string
	// as describes who logs in, such as a service account; empty when
	// the credentials tell nothing that may be shown.
	as   string
	body func(ctx context.Context) (map[string]any, error)
}

// serviceAccountLogin logs in with a token requested for a service
// account, as the Kubernetes and JWT auth methods both do.
func serviceAccountLogin(method, mount, role string, sa v1alpha1.ServiceAccountSelector, store provider.Store, deps provider.Deps) *login {
	as := fmt.Sprintf("service account %q", store.NamespaceOf(sa.Namespace)+"/"+sa.Name)
	if role != "" {
		as += fmt.Sprintf(" with role %q", role)
	}
	return &login{method: method, mount: mount, as: as, body: func(ctx context.Context) (map[string]any, error) {
		jwt, _, err := deps.ServiceAccountToken(ctx, sa)
		if err != nil {
			return nil, err
		}
		return map[string]any{"role": role, "jwt": jwt}, nil
	}}
}

// String describes the login for messages: never a credential.
func (l *login) String() string {
	s := fmt.Sprintf("%s auth at auth/%s", l.method, l.mount)
	if l.as != "" {
		s += " as " + l.as
	}
	return s
}

// do posts the credentials to the login endpoint and returns a token with
// its lifetime (0: no expiry).
func (l *login) do(ctx context.Context, t transport) (string, time.Duration, bool, error) {
	payload, err := l.body(ctx)
	if err != nil {
		return "", 0, false, err
	}
	var out authResponse
	if err := t.do(ctx, http.MethodPost, "auth/"+l.mount+"/"+orDefault(l.endpoint, "login"), nil, "", payload, &out); err != nil {
		what := "logging in to Vault with " + l.String()
		var ae *apiError
		if errors.As(err, &ae) && (ae.status == http.StatusBadRequest || ae.status == http.StatusForbidden || ae.status == http.StatusUnauthorized) {
			// Login endpoints answer 400 or 403 to credentials they
			// reject. Vault's own text is left out: it can echo input.
			return "", 0, false, fmt.Errorf("%s: the credentials were rejected (HTTP %d): %w", what, ae.status, engine.ErrUnauthenticated)
		}
		return "", 0, false, classify(what, err)
	}
	if out.Auth.ClientToken == "" {
		return "", 0, false, fmt.Errorf("logging in to Vault with %s returned no token: %w", l, engine.ErrPermissionDenied)
	}
	return out.Auth.ClientToken, time.Duration(out.Auth.LeaseDuration) * time.Second, out.Auth.Renewable, nil
}

// describe names who the session's token is, for a refusal: what Vault's
// lookup-self tells of the token (its display name, entity and policies;
// never the token) and how it was obtained. The lookup is made once per
// token. invalid tells that the token cannot even look itself up: Vault
// refused the credential itself, not one request.
func (s *session) describe(ctx context.Context, token string) (who string, invalid bool) {
	s.mu.Lock()
	if s.whoToken == token && s.who != "" {
		defer s.mu.Unlock()
		return s.who, s.whoInvalid
	}
	s.mu.Unlock()
	origin := "vault.auth.tokenSecretRef"
	if s.login != nil {
		origin = s.login.String()
	}
	var out struct {
		Data struct {
			DisplayName string   `json:"display_name"`
			EntityID    string   `json:"entity_id"`
			Policies    []string `json:"policies"`
		} `json:"data"`
	}
	who = "the token from " + origin + " (Vault does not let it look itself up: it may have expired or been revoked)"
	err := s.t.do(ctx, http.MethodGet, "auth/token/lookup-self", nil, token, nil, &out)
	invalid = isStatus(err, http.StatusForbidden) || isStatus(err, http.StatusUnauthorized)
	if err == nil {
		d := out.Data
		var parts []string
		if d.EntityID != "" {
			parts = append(parts, "entity "+d.EntityID)
		}
		if len(d.Policies) > 0 {
			parts = append(parts, "policies "+strings.Join(d.Policies, ", "))
		}
		who = fmt.Sprintf("token %q", d.DisplayName)
		if len(parts) > 0 {
			who += " (" + strings.Join(parts, "; ") + ")"
		}
		who += " from " + origin
	}
	s.mu.Lock()
	s.whoToken, s.who, s.whoInvalid = token, who, invalid
	s.mu.Unlock()
	return who, invalid
}
