package gcpfake

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// tokenLifetime is how long an access token lasts unless
// SetTokenLifetime says otherwise for its principal.
const tokenLifetime = time.Hour

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// issue makes an access token of principal, and says how long it lasts.
func (s *Server) issue(principal string) (string, time.Duration) {
	tok := "ya29.fake-" + newID()
	s.mu.Lock()
	life, ok := s.lifetimes[principal]
	if !ok {
		life = tokenLifetime
	}
	s.tokens[tok] = accessToken{principal: principal, expires: s.now().Add(life)}
	s.mu.Unlock()
	return tok, life
}

// SetTokenLifetime makes the access tokens issued to principal from now on
// last d instead of an hour (a test's way to see a token expire soon).
func (s *Server) SetTokenLifetime(principal string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetimes[principal] = d
}

// TokenPrincipal tells whose access token tok is, if the fake issued it
// and it has not expired.
func (s *Server) TokenPrincipal(tok string) (string, bool) {
	s.mu.Lock()
	at, ok := s.tokens[tok]
	s.mu.Unlock()
	if !ok || !s.now().Before(at.expires) {
		return "", false
	}
	return at.principal, true
}

// serveWeb answers the Security Token Service's token exchange and IAM
// Credentials' generateAccessToken.
func (s *Server) serveWeb(w http.ResponseWriter, r *http.Request) {
	host, _, _ := strings.Cut(r.Host, ":")
	switch {
	case host == "sts.googleapis.com" && r.Method == http.MethodPost && r.URL.Path == "/v1/token":
		s.count("sts")
		s.exchange(w, r)
	case host == "iamcredentials.googleapis.com" && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":generateAccessToken"):
		s.count("generateAccessToken")
		s.generateAccessToken(w, r)
	default:
		s.serveIAM(w, r)
	}
}

func (s *Server) count(what string) {
	s.mu.Lock()
	s.calls[what]++
	s.mu.Unlock()
}

func stsError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}

// exchange is the token exchange of workload identity federation: a
// subject token of a registered pool provider for a federated access
// token.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		stsError(w, "invalid_request", "The request body must be a form.")
		return
	}
	f := r.PostForm
	switch {
	case f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
		stsError(w, "unsupported_grant_type", "Invalid grant_type.")
		return
	case f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
		stsError(w, "invalid_request", "Invalid requested_token_type.")
		return
	case f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt" && f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token":
		stsError(w, "invalid_request", "Invalid subject_token_type.")
		return
	}
	audience := f.Get("audience")
	s.mu.Lock()
	known := s.pools[audience]
	s.mu.Unlock()
	if !known {
		stsError(w, "invalid_target", "The target service indicated by the \"audience\" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn't exist.")
		return
	}
	if s.VerifySubjectToken == nil {
		stsError(w, "invalid_grant", "The subject token could not be verified.")
		return
	}
	subject, auds, err := s.VerifySubjectToken(r.Context(), f.Get("subject_token"))
	if err != nil {
		stsError(w, "invalid_grant", "The subject token could not be verified.")
		return
	}
	// A provider's default allowed audience is its full name with https:.
	if !slices.Contains(auds, "https:"+audience) {
		stsError(w, "invalid_grant", "The audience in ID Token ["+strings.Join(auds, ",")+"] does not match the expected audience.")
		return
	}
	tok, life := s.issue(FederatedPrincipal(audience, subject))
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer",
		"expires_in": int(life.Seconds())})
}

// generateAccessToken issues a token of a service account to a principal
// allowed to impersonate it.
func (s *Server) generateAccessToken(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	principal, err := s.principal(tok)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "status": "UNAUTHENTICATED",
			"message": "Request had invalid authentication credentials."}})
		return
	}
	email := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/projects/-/serviceAccounts/"), ":generateAccessToken")
	var body struct {
		Scope     []string `json:"scope"`
		Lifetime  string   `json:"lifetime"`
		Delegates []string `json:"delegates"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Scope) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT",
			"message": "Invalid request: scope is required."}})
		return
	}
	s.mu.Lock()
	allowed := s.imperson[principal][email]
	s.mu.Unlock()
	if !allowed {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{"code": 403, "status": "PERMISSION_DENIED",
			"message": "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist)."}})
		return
	}
	tok, life := s.issue("serviceAccount:" + email)
	writeJSON(w, http.StatusOK, map[string]any{"accessToken": tok, "expireTime": s.now().Add(life).UTC().Format(time.RFC3339)})
}
