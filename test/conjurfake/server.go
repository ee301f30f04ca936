// Package conjurfake is a strict stand-in for the REST API of CyberArk
// Conjur (Conjur cannot run here), over TLS on loopback, for the conjur
// provider's tests through Conjur's official Go SDK. It speaks what the
// provider and the SDK use: API-key authentication (GET
// /authn/{account}/login with a password, POST
// /authn/{account}/{login}/authenticate with the API key), authn-jwt (POST
// /authn-jwt/{service}/{account}[/{host}]/authenticate with a form body),
// short-lived access tokens sent as `Authorization: Token
// token="<base64>"`, variable values (GET /secrets/{account}/variable/{id}
// with the ID escaped as one path segment, ?version=N), batch reads (GET
// /secrets?variable_ids=...), and resources (GET
// /resources/{account}/variable/{id} and GET
// /resources/{account}?kind=variable). It refuses what Conjur refuses:
// 401 for a missing, wrong or expired token or a wrong credential, 404 for
// a variable the role cannot see or that has no value (of that version),
// 403 for one it may see but not fetch, 422 for a malformed version; and
// throttles or fails on demand.
package conjurfake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// keptVersions is how many values Conjur keeps of a variable.
const keptVersions = 20

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL     string
	Account string
	// CA is the PEM certificate of the server's TLS certificate.
	CA []byte

	srv *httptest.Server

	mu        sync.Mutex
	apiKeys   map[string]string   // login -> API key
	passwords map[string]string   // login -> password
	jwts      map[string]jwtEntry // service ID + "\x00" + JWT -> the host it authenticates
	subjects  map[string]string   // service ID + "\x00" + sub claim -> host
	tokens    map[string]issued   // token signature -> who and until when
	vars      map[string]*variable
	denied    map[string]bool // login + "\x00" + id: visible, not executable
	hidden    map[string]bool // login + "\x00" + id: not visible
	ttl       time.Duration
	age       time.Duration
	throttle  int
	fail      int

	// Counters, for tests.
	Authentications, Unauthorized, Reads int
}

type jwtEntry struct{ host string }

type issued struct {
	login string
	exp   time.Time
}

type variable struct {
	values      [][]byte // version i+1 at index i (the last keptVersions)
	first       int      // the version of values[0]
	annotations map[string]string
}

// Start starts a fake of account.
func Start(account string) *Server {
	s := &Server{Account: account, apiKeys: map[string]string{}, passwords: map[string]string{}, jwts: map[string]jwtEntry{}, subjects: map[string]string{},
		tokens: map[string]issued{}, vars: map[string]*variable{}, denied: map[string]bool{}, hidden: map[string]bool{}, ttl: 8 * time.Minute}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// A client that does not trust the certificate is a test's case, not
	// news for the test's log.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	s.URL = s.srv.URL
	s.CA = certPEM(s.srv)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddAPIKey lets login authenticate with apiKey (and, with a non-empty
// password, exchange the password for the API key).
func (s *Server) AddAPIKey(login, apiKey, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKeys[login] = apiKey
	if password != "" {
		s.passwords[login] = password
	}
}

// RotateAPIKey replaces login's API key; issued tokens stay valid.
func (s *Server) RotateAPIKey(login, apiKey string) { s.AddAPIKey(login, apiKey, "") }

// AddJWT lets jwt authenticate as host through authn-jwt/serviceID.
func (s *Server) AddJWT(serviceID, jwt, host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jwts[serviceID+"\x00"+jwt] = jwtEntry{host: host}
}

// AddJWTSubject lets any unexpired JWT whose sub claim is sub
// authenticate as host through authn-jwt/serviceID, as an authenticator
// whose identity comes from the token's claims does. The fake does not
// check the token's signature (a real authenticator checks it against
// the issuer's keys).
func (s *Server) AddJWTSubject(serviceID, sub, host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subjects[serviceID+"\x00"+sub] = host
}

// subjectHost is the host of a JWT's claims, if its subject is known.
func (s *Server) subjectHost(service, jwt string) (string, bool) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	if err != nil || json.Unmarshal(raw, &claims) != nil || claims.Exp < time.Now().Unix() {
		return "", false
	}
	host, ok := s.subjects[service+"\x00"+claims.Sub]
	return host, ok
}

// Set adds a value to variable id (creating it), a new version.
func (s *Server) Set(id string, value []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vars[id]
	if v == nil {
		v = &variable{first: 1, annotations: map[string]string{}}
		s.vars[id] = v
	}
	v.values = append(v.values, slices.Clone(value))
	if len(v.values) > keptVersions {
		v.values = v.values[1:]
		v.first++
	}
	return v.first + len(v.values) - 1
}

// Declare declares variable id with no value, as a policy does.
func (s *Server) Declare(id string, annotations map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vars[id] == nil {
		s.vars[id] = &variable{first: 1, annotations: map[string]string{}}
	}
	for k, v := range annotations {
		s.vars[id].annotations[k] = v
	}
}

// Remove deletes variable id (a policy that no longer declares it).
func (s *Server) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vars, id)
}

// Deny lets login see variable id but not fetch its value (403).
func (s *Server) Deny(login, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[login+"\x00"+id] = true
}

// Hide makes variable id invisible to login (404).
func (s *Server) Hide(login, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hidden[login+"\x00"+id] = true
}

// ExpireTokens makes every issued access token expired.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tokens {
		t.exp = time.Time{}
		s.tokens[k] = t
	}
}

// IssueAged makes tokens issued from now on look age old already (their
// iat in the past, no exp), as after a long pause.
func (s *Server) IssueAged(age time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.age = age
}

// Throttle answers the next n requests 429 with Retry-After.
func (s *Server) Throttle(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
}

// Fail answers the next n requests 503.
func (s *Server) Fail(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = n
}

// Counts returns the counters.
func (s *Server) Counts() (authentications, unauthorized, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Authentications, s.Unauthorized, s.Reads
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.throttle > 0:
		s.throttle--
		w.Header().Set("Retry-After", "3")
		jsonError(w, http.StatusTooManyRequests, "too_many_requests", "Rate limit exceeded")
		return
	case s.fail > 0:
		s.fail--
		jsonError(w, http.StatusServiceUnavailable, "service_unavailable", "Service Unavailable")
		return
	}
	parts := strings.Split(r.URL.EscapedPath(), "/")[1:]
	seg := func(i int) string {
		v, err := url.PathUnescape(parts[i])
		if err != nil {
			return "\x00"
		}
		return v
	}
	switch {
	case len(parts) == 3 && parts[0] == "authn" && parts[2] == "login":
		s.login(w, r, seg(1))
	case len(parts) == 4 && parts[0] == "authn" && parts[3] == "authenticate":
		s.authnAPIKey(w, r, seg(1), seg(2))
	case (len(parts) == 4 || len(parts) == 5) && parts[0] == "authn-jwt" && parts[len(parts)-1] == "authenticate":
		host := ""
		if len(parts) == 5 {
			host = seg(3)
		}
		s.authnJWT(w, r, seg(1), seg(2), host)
	case len(parts) == 4 && parts[0] == "secrets" && parts[2] == "variable":
		s.secret(w, r, seg(1), seg(3))
	case (len(parts) == 1 || len(parts) == 2 && parts[1] == "") && parts[0] == "secrets":
		s.batch(w, r)
	case len(parts) == 4 && parts[0] == "resources" && parts[2] == "variable":
		s.resource(w, r, seg(1), seg(3))
	case (len(parts) == 2 || len(parts) == 3 && parts[2] == "") && parts[0] == "resources":
		s.resources(w, r, seg(1))
	default:
		jsonError(w, http.StatusNotFound, "not_found", "No route matches")
	}
}

func jsonError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// unauthorized answers 401 with no body, as Conjur does, and counts it.
func (s *Server) unauthorized(w http.ResponseWriter) {
	s.Unauthorized++
	w.WriteHeader(http.StatusUnauthorized)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, account string) {
	user, pass, ok := r.BasicAuth()
	if r.Method != http.MethodGet || !ok || account != s.Account || s.passwords[user] == "" || s.passwords[user] != pass {
		s.unauthorized(w)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(s.apiKeys[user]))
}

func (s *Server) authnAPIKey(w http.ResponseWriter, r *http.Request, account, login string) {
	if r.Method != http.MethodPost {
		jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "POST only")
		return
	}
	body := readBody(r)
	if account != s.Account || s.apiKeys[login] == "" || body != s.apiKeys[login] {
		s.unauthorized(w)
		return
	}
	s.issue(w, login)
}

func (s *Server) authnJWT(w http.ResponseWriter, r *http.Request, service, account, host string) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		jsonError(w, http.StatusBadRequest, "bad_request", "a form body with jwt is expected")
		return
	}
	form, err := url.ParseQuery(readBody(r))
	if err != nil || len(form["jwt"]) != 1 {
		s.unauthorized(w)
		return
	}
	e, ok := s.jwts[service+"\x00"+form.Get("jwt")]
	if !ok {
		e.host, ok = s.subjectHost(service, form.Get("jwt"))
	}
	if account != s.Account || !ok || (host != "" && host != e.host) {
		s.unauthorized(w)
		return
	}
	s.issue(w, e.host)
}

func readBody(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for b.Len() < 1<<16 {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// issue answers a new access token of login: Conjur's JSON token, whose
// payload holds the login, iat and exp.
func (s *Server) issue(w http.ResponseWriter, login string) {
	s.Authentications++
	iat := time.Now().Add(-s.age)
	claims := map[string]any{"sub": login, "iat": iat.Unix()}
	exp := iat.Add(s.ttl)
	if s.age == 0 {
		claims["exp"] = exp.Unix()
	}
	payload, _ := json.Marshal(claims)
	sig := make([]byte, 32)
	_, _ = rand.Read(sig)
	token := map[string]string{
		"protected": base64.StdEncoding.EncodeToString([]byte(`{"alg":"conjur.org/slosilo/v2","kid":"fake"}`)),
		"payload":   base64.StdEncoding.EncodeToString(payload),
		"signature": hex.EncodeToString(sig),
	}
	if s.age > 0 {
		exp = time.Now().Add(time.Minute)
	}
	s.tokens[token["signature"]] = issued{login: login, exp: exp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(token)
}

// who checks the access token of a request: the login it was issued to,
// or "" after answering 401.
func (s *Server) who(w http.ResponseWriter, r *http.Request) string {
	h := r.Header.Get("Authorization")
	enc, ok := strings.CutPrefix(h, `Token token="`)
	if !ok || !strings.HasSuffix(enc, `"`) {
		s.unauthorized(w)
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(enc, `"`))
	var tok map[string]string
	if err != nil || json.Unmarshal(raw, &tok) != nil {
		s.unauthorized(w)
		return ""
	}
	t, ok := s.tokens[tok["signature"]]
	if !ok || time.Now().After(t.exp) {
		s.unauthorized(w)
		return ""
	}
	return t.login
}

func fullID(account, id string) string { return account + ":variable:" + id }

// value finds version (0: the last) of variable id for login, or answers
// the error Conjur would.
func (s *Server) value(w http.ResponseWriter, login, account, id string, version int) ([]byte, bool) {
	v := s.vars[id]
	if account != s.Account || v == nil || s.hidden[login+"\x00"+id] {
		jsonError(w, http.StatusNotFound, "not_found", fmt.Sprintf("Variable %s not found", fullID(account, id)))
		return nil, false
	}
	if s.denied[login+"\x00"+id] {
		jsonError(w, http.StatusForbidden, "forbidden", "Forbidden")
		return nil, false
	}
	if version == 0 {
		version = v.first + len(v.values) - 1
	}
	i := version - v.first
	if len(v.values) == 0 || i < 0 || i >= len(v.values) {
		jsonError(w, http.StatusNotFound, "not_found", fmt.Sprintf("CONJ00076E Variable %s is empty or not found.", fullID(account, id)))
		return nil, false
	}
	return v.values[i], true
}

func (s *Server) secret(w http.ResponseWriter, r *http.Request, account, id string) {
	login := s.who(w, r)
	if login == "" {
		return
	}
	if r.Method != http.MethodGet {
		jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "this fake serves reads only")
		return
	}
	q := r.URL.Query()
	version := 0
	for k := range q {
		if k != "version" {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "unknown parameter "+k)
			return
		}
	}
	if q.Has("version") {
		n, err := strconv.Atoi(q.Get("version"))
		if err != nil || n < 1 {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "version must be a positive integer")
			return
		}
		version = n
	}
	val, ok := s.value(w, login, account, id, version)
	if !ok {
		return
	}
	s.Reads++
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(val)
}

// batch serves GET /secrets?variable_ids=a,b: every ID fully qualified,
// the whole batch refused when one of them is.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	login := s.who(w, r)
	if login == "" {
		return
	}
	q := r.URL.Query()
	if r.Method != http.MethodGet || len(q) != 1 || q.Get("variable_ids") == "" {
		jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "variable_ids is required")
		return
	}
	out := map[string]string{}
	for _, full := range strings.Split(q.Get("variable_ids"), ",") {
		parts := strings.SplitN(full, ":", 3)
		if len(parts) != 3 || parts[1] != "variable" {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "variable IDs must be fully qualified")
			return
		}
		val, ok := s.value(w, login, parts[0], parts[2], 0)
		if !ok {
			return
		}
		out[full] = string(val)
	}
	s.Reads++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

type annotation struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Policy string `json:"policy"`
}

type secretMeta struct {
	Version   int     `json:"version"`
	ExpiresAt *string `json:"expires_at"`
}

type resourceJSON struct {
	CreatedAt   string       `json:"created_at"`
	ID          string       `json:"id"`
	Owner       string       `json:"owner"`
	Policy      string       `json:"policy"`
	Permissions []any        `json:"permissions"`
	Annotations []annotation `json:"annotations"`
	Secrets     []secretMeta `json:"secrets"`
	PolicyVers  []any        `json:"policy_versions"`
}

func (s *Server) resourceOf(id string, v *variable) resourceJSON {
	out := resourceJSON{CreatedAt: "2026-01-01T00:00:00.000+00:00", ID: fullID(s.Account, id), Owner: s.Account + ":policy:root",
		Policy: s.Account + ":policy:root", Permissions: []any{}, Annotations: []annotation{}, Secrets: []secretMeta{}, PolicyVers: []any{}}
	for _, k := range slices.Sorted(maps.Keys(v.annotations)) {
		out.Annotations = append(out.Annotations, annotation{Name: k, Value: v.annotations[k], Policy: out.Policy})
	}
	for i := range v.values {
		out.Secrets = append(out.Secrets, secretMeta{Version: v.first + i})
	}
	return out
}

func (s *Server) resource(w http.ResponseWriter, r *http.Request, account, id string) {
	login := s.who(w, r)
	if login == "" {
		return
	}
	v := s.vars[id]
	if r.Method != http.MethodGet || len(r.URL.Query()) != 0 {
		jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "a plain GET is expected")
		return
	}
	if account != s.Account || v == nil || s.hidden[login+"\x00"+id] {
		jsonError(w, http.StatusNotFound, "not_found", fmt.Sprintf("Variable %s not found", fullID(account, id)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.resourceOf(id, v))
}

// resources serves GET /resources/{account}?kind=variable&search=&limit=&offset=,
// sorted by ID, only what the role may see.
func (s *Server) resources(w http.ResponseWriter, r *http.Request, account string) {
	login := s.who(w, r)
	if login == "" {
		return
	}
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"kind", "search", "limit", "offset", "count"}, k) {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "unknown parameter "+k)
			return
		}
	}
	if r.Method != http.MethodGet || account != s.Account || q.Get("kind") != "variable" {
		jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "this fake lists variables only")
		return
	}
	limit, offset := 0, 0
	var err error
	if q.Has("limit") {
		if limit, err = strconv.Atoi(q.Get("limit")); err != nil || limit < 1 || limit > 1000 {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "limit must be 1 to 1000")
			return
		}
	}
	if q.Has("offset") {
		if offset, err = strconv.Atoi(q.Get("offset")); err != nil || offset < 0 {
			jsonError(w, http.StatusUnprocessableEntity, "unprocessable", "offset must not be negative")
			return
		}
	}
	search := strings.ToLower(q.Get("search"))
	var ids []string
	for id, v := range s.vars {
		if s.hidden[login+"\x00"+id] {
			continue
		}
		hit := search == "" || strings.Contains(strings.ToLower(id), search)
		for _, a := range v.annotations {
			hit = hit || strings.Contains(strings.ToLower(a), search)
		}
		if hit {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if q.Get("count") == "true" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"count": len(ids)})
		return
	}
	ids = ids[min(offset, len(ids)):]
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := []resourceJSON{}
	for _, id := range ids {
		out = append(out, s.resourceOf(id, s.vars[id]))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func certPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
