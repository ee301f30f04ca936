// Package infisicalfake is an Infisical server for tests: Infisical needs
// PostgreSQL, Redis and its Node.js server, which do not run here, so this
// speaks the part of its REST API that Watchword uses, strictly, over TLS,
// for the tests of the infisical provider, which drive it through
// Infisical's official Go SDK.
//
//	POST /api/v1/auth/universal-auth/login     {"clientId","clientSecret"} → an access token
//	POST /api/v1/auth/kubernetes-auth/login    {"identityId","jwt"} → an access token
//	GET  /api/v3/secrets/raw                   the secrets of a folder (recursive=true: and below)
//	GET  /api/v3/secrets/raw/{secretName}      one secret, its current or a given version
//
// A project is named by its slug (workspaceSlug) or its ID (workspaceId);
// environment and secretPath say where, type must be "shared". Unknown
// query parameters, a boolean that is not "true" or "false", a secretPath
// that does not start with "/" or climbs with "..", and a login body with
// unknown members are refused (400). Every secret request needs a bearer
// token from a login that has not expired nor been revoked (401); an
// identity denied a project gets 403; an unknown project, environment,
// folder, secret or version gets 404. A Kubernetes Auth login is checked
// against the token's subject claim only (Infisical asks the cluster's
// TokenReview). Errors are Infisical's JSON
// {"reqId","statusCode","message","error"}, and a 404 names what it did not
// find, echoing the request as Infisical does. Versions start at 1 and
// grow by one with each change, as Infisical's do, and each is kept.
// With expandSecretReferences=true, ${NAME} in a value is replaced by the
// value of NAME in the same folder (Infisical also expands references to
// other environments and folders, which the fake does not). Throttle
// answers the next requests with 429 and Retry-After, as Infisical's rate
// limiter does.
package infisicalfake

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running fake Infisical.
type Server struct {
	srv *httptest.Server

	mu         sync.Mutex
	identities map[string]*identity // by client ID
	tokens     map[string]*token
	projects   map[string]*project // by slug
	ttl        time.Duration
	throttle   int
	retryAfter int
	calls      map[string]int
}

type identity struct {
	secret  string          // Universal Auth's client secret
	subject string          // Kubernetes Auth's service account, system:serviceaccount:NS:NAME
	denied  map[string]bool // project slugs
}

type token struct {
	clientID string
	expires  time.Time
	revoked  bool
}

type project struct {
	id, slug string
	// secrets by environment, then folder path ("/", "/a/b"), then name.
	envs map[string]map[string]map[string]*secret
}

type secret struct {
	id       string
	versions []string // values; version n is versions[n-1]
	comment  string
}

// Start starts a fake on loopback, over TLS with a certificate of its own.
// Access tokens live an hour unless SetTokenTTL says otherwise.
func Start() *Server {
	s := &Server{identities: map[string]*identity{}, tokens: map[string]*token{}, projects: map[string]*project{},
		ttl: time.Hour, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/auth/universal-auth/login", s.login)
	mux.HandleFunc("POST /api/v1/auth/kubernetes-auth/login", s.kubernetesLogin)
	mux.HandleFunc("GET /api/v3/secrets/raw", s.authed(s.list))
	mux.HandleFunc("GET /api/v3/secrets/raw/{secretName}", s.authed(s.get))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "Not Found", fmt.Sprintf("Route %s:%s not found", r.Method, r.URL.Path))
	})
	s.srv = httptest.NewUnstartedServer(s.front(mux))
	// A client that does not trust the fake is a test's case, not news.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	return s
}

// URL is the instance's address, such as https://127.0.0.1:PORT; the API
// is under /api.
func (s *Server) URL() string { return s.srv.URL }

// CAPEM is the PEM certificate a client must trust to reach the fake.
func (s *Server) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// CertPool trusts the fake.
func (s *Server) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.srv.Certificate())
	return p
}

// Close stops the fake.
func (s *Server) Close() { s.srv.Close() }

// AddIdentity makes the fake accept a machine identity's Universal Auth
// credentials.
func (s *Server) AddIdentity(clientID, clientSecret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identities[clientID] = &identity{secret: clientSecret, denied: map[string]bool{}}
}

// AddKubernetesIdentity makes the fake accept a machine identity's
// Kubernetes Auth login with a token of the service account ns/name.
// Infisical reviews the token with the cluster (TokenReview); the fake
// checks only its subject claim, not its signature.
func (s *Server) AddKubernetesIdentity(identityID, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identities[identityID] = &identity{subject: "system:serviceaccount:" + ns + ":" + name, denied: map[string]bool{}}
}

// Deny makes the fake refuse (403) the identity's requests to a project.
func (s *Server) Deny(clientID, projectSlug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identities[clientID].denied[projectSlug] = true
}

// SetTokenTTL sets the lifetime of the access tokens issued from now on.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ttl = d
}

// RevokeTokens makes the fake refuse every access token issued so far
// (HTTP 401); a new login gets a new one.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.revoked = true
	}
}

// AddProject adds a project with its environments; it returns the
// project's ID.
func (s *Server) AddProject(slug string, envs ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &project{id: newID(), slug: slug, envs: map[string]map[string]map[string]*secret{}}
	for _, e := range envs {
		p.envs[e] = map[string]map[string]*secret{"/": {}}
	}
	s.projects[slug] = p
	return p.id
}

// Put sets a secret of a folder, making the folder (and its parents) if
// need be; a changed value is a new version.
func (s *Server) Put(projectSlug, env, folder, name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	folders := s.projects[projectSlug].envs[env]
	for f := folder; ; f = path.Dir(f) {
		if folders[f] == nil {
			folders[f] = map[string]*secret{}
		}
		if f == "/" {
			break
		}
	}
	sec := folders[folder][name]
	if sec == nil {
		sec = &secret{id: newID()}
		folders[folder][name] = sec
	}
	if n := len(sec.versions); n == 0 || sec.versions[n-1] != value {
		sec.versions = append(sec.versions, value)
	}
}

// Remove deletes a secret of a folder.
func (s *Server) Remove(projectSlug, env, folder, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.projects[projectSlug].envs[env][folder], name)
}

// Throttle makes the next n requests answer 429, with Retry-After asking
// to wait seconds.
func (s *Server) Throttle(n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle, s.retryAfter = n, seconds
}

// Calls is how many requests of a kind the fake answered: "login",
// "list", "get", "throttled", "unauthorized".
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[kind]
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fail(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{"reqId": "req-" + newID(), "statusCode": status, "message": msg, "error": kind})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// front throttles every request, as Infisical's rate limiter does.
func (s *Server) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.throttle > 0 {
			s.throttle--
			s.calls["throttled"]++
			wait := s.retryAfter
			s.mu.Unlock()
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			fail(w, http.StatusTooManyRequests, "Too Many Requests", fmt.Sprintf("Rate limit exceeded, retry in %d seconds", wait))
			return
		}
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

type caller struct {
	clientID string
	id       *identity
}

// authed checks the bearer token.
func (s *Server) authed(next func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		value, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		t := s.tokens[value]
		switch {
		case !ok || value == "" || t == nil:
			s.calls["unauthorized"]++
			s.mu.Unlock()
			fail(w, http.StatusUnauthorized, "UnauthorizedError", "Token missing or invalid")
			return
		case t.revoked:
			s.calls["unauthorized"]++
			s.mu.Unlock()
			fail(w, http.StatusUnauthorized, "UnauthorizedError", "Failed to authorize access token: token revoked")
			return
		case time.Now().After(t.expires):
			s.calls["unauthorized"]++
			s.mu.Unlock()
			fail(w, http.StatusUnauthorized, "UnauthorizedError", "Failed to authorize access token: token expired")
			return
		}
		c := caller{clientID: t.clientID, id: s.identities[t.clientID]}
		s.mu.Unlock()
		next(w, r, c)
	}
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		fail(w, http.StatusUnsupportedMediaType, "Unsupported Media Type", "Unsupported Media Type: "+r.Header.Get("Content-Type"))
		return
	}
	var body struct {
		ClientID         string `json:"clientId"`
		ClientSecret     string `json:"clientSecret"`
		OrganizationSlug string `json:"organizationSlug"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.ClientID == "" || body.ClientSecret == "" {
		fail(w, http.StatusBadRequest, "BadRequest", "Invalid request body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["login"]++
	id := s.identities[body.ClientID]
	if id == nil || id.secret == "" || id.secret != body.ClientSecret {
		s.calls["unauthorized"]++
		fail(w, http.StatusUnauthorized, "UnauthorizedError", "Invalid credentials")
		return
	}
	s.issue(w, body.ClientID)
}

// issue answers a login with a new access token. Call with s.mu held.
func (s *Server) issue(w http.ResponseWriter, id string) {
	value := "st." + newID() + newID()
	s.tokens[value] = &token{clientID: id, expires: time.Now().Add(s.ttl)}
	secs := int64(s.ttl / time.Second)
	writeJSON(w, http.StatusOK, map[string]any{"accessToken": value, "expiresIn": secs, "accessTokenMaxTTL": 30 * 24 * 3600, "tokenType": "Bearer"})
}

func (s *Server) kubernetesLogin(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		fail(w, http.StatusUnsupportedMediaType, "Unsupported Media Type", "Unsupported Media Type: "+r.Header.Get("Content-Type"))
		return
	}
	var body struct {
		IdentityID       string `json:"identityId"`
		JWT              string `json:"jwt"`
		OrganizationSlug string `json:"organizationSlug"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.IdentityID == "" || body.JWT == "" {
		fail(w, http.StatusBadRequest, "BadRequest", "Invalid request body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["login"]++
	id := s.identities[body.IdentityID]
	if id == nil || id.subject == "" {
		s.calls["unauthorized"]++
		fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Kubernetes auth method not found for identity with ID %s", body.IdentityID))
		return
	}
	if subjectOf(body.JWT) != id.subject {
		s.calls["unauthorized"]++
		fail(w, http.StatusUnauthorized, "UnauthorizedError", "Access denied: service account not allowed")
		return
	}
	s.issue(w, body.IdentityID)
}

// subjectOf is the sub claim of a JWT, unverified; "" if it has none.
func subjectOf(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// scope is the project, environment and folder of a request.
type scope struct {
	p      *project
	env    string
	folder string
	expand bool
	query  map[string]string
}

var boolParams = map[string]bool{"expandSecretReferences": true, "include_imports": true, "recursive": true}

// parse checks the query against the parameters an endpoint takes, and
// finds the project, environment and folder. It answers itself on error.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, c caller, allowed ...string) (scope, bool) {
	q := r.URL.Query()
	out := scope{query: map[string]string{}}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			fail(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("querystring has an unrecognized key %q", k))
			return out, false
		}
		if len(vs) != 1 {
			fail(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("querystring key %q is repeated", k))
			return out, false
		}
		if boolParams[k] && vs[0] != "true" && vs[0] != "false" {
			fail(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("querystring/%s must be boolean", k))
			return out, false
		}
		out.query[k] = vs[0]
	}
	if t, ok := out.query["type"]; ok && t != "shared" {
		fail(w, http.StatusBadRequest, "BadRequest", "querystring/type must be shared or personal; personal secrets need a user")
		return out, false
	}
	out.expand = out.query["expandSecretReferences"] == "true"
	env := out.query["environment"]
	folder := out.query["secretPath"]
	if folder == "" {
		folder = "/"
	}
	if env == "" {
		fail(w, http.StatusBadRequest, "BadRequest", "querystring/environment is required")
		return out, false
	}
	if !strings.HasPrefix(folder, "/") || slices.Contains(strings.Split(folder, "/"), "..") {
		fail(w, http.StatusBadRequest, "BadRequest", "querystring/secretPath must be an absolute path")
		return out, false
	}
	if folder != "/" {
		folder = strings.TrimSuffix(folder, "/")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var p *project
	switch id, slug := out.query["workspaceId"], out.query["workspaceSlug"]; {
	case id != "":
		for _, cand := range s.projects {
			if cand.id == id {
				p = cand
			}
		}
		if p == nil {
			fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Project with ID '%s' not found", id))
			return out, false
		}
	case slug != "":
		p = s.projects[slug]
		if p == nil {
			fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Project with slug '%s' not found", slug))
			return out, false
		}
	default:
		fail(w, http.StatusBadRequest, "BadRequest", "Missing workspaceId or workspaceSlug")
		return out, false
	}
	if c.id.denied[p.slug] {
		fail(w, http.StatusForbidden, "PermissionDenied", "You are not allowed to read on secrets")
		return out, false
	}
	folders, ok := p.envs[env]
	if !ok {
		fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Environment with slug '%s' in project with ID '%s' not found", env, p.id))
		return out, false
	}
	if folders[folder] == nil {
		fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Folder with path '%s' in environment with slug '%s' not found", folder, env))
		return out, false
	}
	out.p, out.env, out.folder = p, env, folder
	return out, true
}

var reference = regexp.MustCompile(`\$\{([A-Za-z0-9_.-]+)\}`)

// wire is a secret as Infisical's raw endpoints return it. Call with s.mu
// held.
func (s *Server) wire(sc scope, folder, name string, sec *secret, version int) map[string]any {
	value := sec.versions[version-1]
	if sc.expand {
		same := sc.p.envs[sc.env][folder]
		value = reference.ReplaceAllStringFunc(value, func(ref string) string {
			if o := same[ref[2:len(ref)-1]]; o != nil {
				return o.versions[len(o.versions)-1]
			}
			return ""
		})
	}
	return map[string]any{
		"id": sec.id, "_id": sec.id, "workspace": sc.p.id, "environment": sc.env,
		"version": version, "type": "shared", "secretKey": name, "secretValue": value,
		"secretComment": sec.comment, "secretPath": folder,
		"secretReminderNote": nil, "secretReminderRepeatDays": nil, "skipMultilineEncoding": false,
		"tags": []any{}, "secretMetadata": []any{},
		"createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
	}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, c caller) {
	sc, ok := s.parse(w, r, c, "workspaceId", "workspaceSlug", "environment", "secretPath",
		"expandSecretReferences", "include_imports", "recursive", "tagSlugs")
	if !ok {
		return
	}
	if _, ok := sc.query["tagSlugs"]; ok {
		// The fake keeps no tags.
		fail(w, http.StatusBadRequest, "BadRequest", "the fake keeps no tags")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["list"]++
	recursive := sc.query["recursive"] == "true"
	folders := sc.p.envs[sc.env]
	var names []string
	for f := range folders {
		if f == sc.folder || (recursive && (sc.folder == "/" || strings.HasPrefix(f, sc.folder+"/"))) {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	out := []map[string]any{}
	for _, f := range names {
		keys := make([]string, 0, len(folders[f]))
		for k := range folders[f] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sec := folders[f][k]
			out = append(out, s.wire(sc, f, k, sec, len(sec.versions)))
		}
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(map[string]any{"secrets": out, "imports": []any{}})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("ETag", fmt.Sprintf("%q", newID()))
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c caller) {
	sc, ok := s.parse(w, r, c, "workspaceId", "workspaceSlug", "environment", "secretPath",
		"expandSecretReferences", "include_imports", "type", "version")
	if !ok {
		return
	}
	name := r.PathValue("secretName")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["get"]++
	sec := sc.p.envs[sc.env][sc.folder][name]
	if sec == nil {
		fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Secret with name '%s' not found", name))
		return
	}
	version := len(sec.versions)
	if v, ok := sc.query["version"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail(w, http.StatusBadRequest, "BadRequest", "querystring/version must be a positive number")
			return
		}
		if n > len(sec.versions) {
			fail(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Secret version %d of '%s' not found", n, name))
			return
		}
		version = n
	}
	writeJSON(w, http.StatusOK, map[string]any{"secret": s.wire(sc, sc.folder, name, sec, version)})
}
