// Package gitlabfake is a strict loopback stand-in for the part of
// GitLab's REST API v4 that the gitlab provider uses: the CI/CD variables
// of projects and of groups, and a project's ancestor groups. It exists
// because GitLab cannot run here; tests drive it only through GitLab's
// official Go SDK (gitlab.com/gitlab-org/api/client-go), over HTTPS with
// the fake's own CA.
//
// It answers as GitLab does (its API documentation for project-level and
// group-level variables, and the SDK's types):
//
//	GET    /api/v4/projects/:id/variables          offset pages (page, per_page ≤ 100), X-Total, X-Total-Pages, X-Per-Page, X-Page, X-Next-Page, X-Prev-Page, Link
//	GET    /api/v4/projects/:id/variables/:key     filter[environment_scope]; 409 when the key is in several scopes and no filter is given
//	POST   /api/v4/projects/:id/variables          JSON body; 201; 400 {"message":{"key":["(KEY) has already been taken"]}}
//	PUT    /api/v4/projects/:id/variables/:key     JSON body with filter.environment_scope
//	DELETE /api/v4/projects/:id/variables/:key     filter[environment_scope]; 204
//	GET    /api/v4/projects/:id/groups             the project's group and its ancestors
//	GET    /api/v4/groups/:id/variables[/:key]     as for projects
//
// It is strict: the PRIVATE-TOKEN header (or an OAuth bearer token) must
// hold a known, unrevoked token (401 otherwise); a token without the api
// scope may not write (403); a project or group the token cannot see is
// 404 (GitLab does not tell it exists); a variable key must match
// [A-Za-z0-9_]{1,255}; a body must be JSON with only the documented
// fields; a masked value must meet GitLab's masking rules; a description
// has at most 255 characters; an unknown query parameter is refused (the
// real server ignores it: the fake refuses it so that a test notices a
// parameter the provider did not mean to send).
package gitlabfake

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Variable is one CI/CD variable as GitLab keeps it.
type Variable struct {
	Key              string `json:"key"`
	Value            string `json:"value"`
	VariableType     string `json:"variable_type"`
	Protected        bool   `json:"protected"`
	Masked           bool   `json:"masked"`
	Hidden           bool   `json:"hidden"`
	Raw              bool   `json:"raw"`
	EnvironmentScope string `json:"environment_scope"`
	Description      string `json:"description"`
}

// owner is a project or a group: its variables.
type owner struct {
	id     int
	path   string
	groups []int // a project's group and its ancestors, nearest first
	vars   []*Variable
}

// Token is an access token the fake accepts.
type Token struct {
	// Name is the token's name (GitLab shows it, never its value).
	Name string
	// Write is the api scope; without it the token has read_api only.
	Write bool
	// Sees are the project and group IDs the token may reach; nil: all.
	Sees    []int
	revoked bool
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu         sync.Mutex
	projects   map[int]*owner
	groups     map[int]*owner
	tokens     map[string]*Token
	throttle   int
	retryAfter int
	calls      map[string]int
}

// Start starts a fake on loopback, over TLS with a certificate of its own.
func Start() *Server {
	s := &Server{projects: map[int]*owner{}, groups: map[int]*owner{}, tokens: map[string]*Token{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v4/{kind}/{id}/variables", s.list)
	mux.HandleFunc("GET /api/v4/{kind}/{id}/variables/{key}", s.get)
	mux.HandleFunc("POST /api/v4/{kind}/{id}/variables", s.create)
	mux.HandleFunc("PUT /api/v4/{kind}/{id}/variables/{key}", s.update)
	mux.HandleFunc("DELETE /api/v4/{kind}/{id}/variables/{key}", s.remove)
	mux.HandleFunc("GET /api/v4/projects/{id}/groups", s.projectGroups)
	s.srv = httptest.NewTLSServer(s.front(mux))
	return s
}

// URL is the instance's address, such as https://127.0.0.1:PORT.
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

// AddToken makes the fake accept a token.
func (s *Server) AddToken(value string, t Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[value] = &t
}

// Revoke makes the fake refuse a token from now on (HTTP 401).
func (s *Server) Revoke(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tokens[value]; t != nil {
		t.revoked = true
	}
}

// AddProject makes a project with an ID, a full path and its groups (its
// own group first, then that group's ancestors), which must exist.
func (s *Server) AddProject(id int, path string, groups ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[id] = &owner{id: id, path: path, groups: groups}
}

// AddGroup makes a group with an ID and a full path.
func (s *Server) AddGroup(id int, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = &owner{id: id, path: path}
}

// SetProjectVariable sets a variable of a project out of band, replacing
// the one of the same key and scope (an empty scope is "*").
func (s *Server) SetProjectVariable(project int, v Variable) { s.set(s.projects, project, v) }

// SetGroupVariable sets a variable of a group out of band.
func (s *Server) SetGroupVariable(group int, v Variable) { s.set(s.groups, group, v) }

func (s *Server) set(m map[int]*owner, id int, v Variable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := m[id]
	if o == nil {
		panic(fmt.Sprintf("gitlabfake: no owner %d", id))
	}
	if v.EnvironmentScope == "" {
		v.EnvironmentScope = "*"
	}
	if v.VariableType == "" {
		v.VariableType = "env_var"
	}
	for i, have := range o.vars {
		if have.Key == v.Key && have.EnvironmentScope == v.EnvironmentScope {
			o.vars[i] = &v
			return
		}
	}
	o.vars = append(o.vars, &v)
}

// DeleteProjectVariable removes a variable of a project out of band (every
// scope when scope is empty).
func (s *Server) DeleteProjectVariable(project int, key, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.projects[project]
	kept := o.vars[:0]
	for _, v := range o.vars {
		if v.Key != key || (scope != "" && v.EnvironmentScope != scope) {
			kept = append(kept, v)
		}
	}
	o.vars = kept
}

// ProjectVariable returns a variable of a project as GitLab keeps it.
func (s *Server) ProjectVariable(project int, key, scope string) (Variable, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if scope == "" {
		scope = "*"
	}
	for _, v := range s.projects[project].vars {
		if v.Key == key && v.EnvironmentScope == scope {
			return *v, true
		}
	}
	return Variable{}, false
}

// Throttle makes the next n requests answer 429, with Retry-After (and
// GitLab's RateLimit-* headers) asking to wait seconds.
func (s *Server) Throttle(n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle, s.retryAfter = n, seconds
}

// Calls is how many requests of a kind the fake answered: "list", "get",
// "create", "update", "delete", "groups", "throttled", "unauthorized".
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[kind]
}

type ctxKey struct{}

func contextWith(r *http.Request, t Token) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, t)
}

func tokenOf(r *http.Request) Token {
	t, _ := r.Context().Value(ctxKey{}).(Token)
	return t
}

// front authenticates, counts and throttles every request.
func (s *Server) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		value := r.Header.Get("PRIVATE-TOKEN")
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && value == "" {
			value = b
		}
		s.mu.Lock()
		t := s.tokens[value]
		if value == "" || t == nil || t.revoked {
			s.calls["unauthorized"]++
			s.mu.Unlock()
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
			return
		}
		if s.throttle > 0 {
			s.throttle--
			s.calls["throttled"]++
			wait := s.retryAfter
			s.mu.Unlock()
			// Rack::Attack's answer on GitLab.com: plain text, with the
			// RateLimit headers GitLab documents.
			h := w.Header()
			h.Set("Retry-After", strconv.Itoa(wait))
			h.Set("RateLimit-Limit", "600")
			h.Set("RateLimit-Observed", "601")
			h.Set("RateLimit-Remaining", "0")
			h.Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Duration(wait)*time.Second).Unix(), 10))
			h.Set("RateLimit-ResetTime", time.Now().Add(time.Duration(wait)*time.Second).UTC().Format(http.TimeFormat))
			h.Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "Retry later\n")
			return
		}
		tok := *t
		s.mu.Unlock()
		if r.Method != http.MethodGet && !tok.Write {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": "insufficient_scope",
				"error_description": "The request requires higher privileges than provided by the access token.", "scope": "api"})
			return
		}
		// Every answer carries the rate limit, as GitLab.com's do.
		w.Header().Set("RateLimit-Limit", "600")
		next.ServeHTTP(w, r.WithContext(contextWith(r, tok)))
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func message(w http.ResponseWriter, status int, msg any) {
	writeJSON(w, status, map[string]any{"message": msg})
}

// owner finds the project or group of the request, as the token sees it:
// by numeric ID or URL-encoded full path. It answers 404 itself.
func (s *Server) owner(w http.ResponseWriter, r *http.Request) (*owner, bool) {
	tok := tokenOf(r)
	var m map[int]*owner
	what := "Project"
	switch r.PathValue("kind") {
	case "projects":
		m = s.projects
	case "groups":
		m, what = s.groups, "Group"
	default:
		message(w, http.StatusNotFound, "404 Not Found")
		return nil, false
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range m {
		if strconv.Itoa(o.id) != id && o.path != id {
			continue
		}
		if tok.Sees != nil && !contains(tok.Sees, o.id) {
			break
		}
		return o, true
	}
	message(w, http.StatusNotFound, "404 "+what+" Not Found")
	return nil, false
}

func contains(ids []int, id int) bool {
	for _, i := range ids {
		if i == id {
			return true
		}
	}
	return false
}

var keyShape = regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`)

// query refuses a parameter outside allowed.
func query(w http.ResponseWriter, r *http.Request, allowed ...string) (url.Values, bool) {
	q := r.URL.Query()
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			message(w, http.StatusBadRequest, fmt.Sprintf("gitlabfake: unexpected query parameter %q", k))
			return nil, false
		}
	}
	return q, true
}

func (s *Server) count(kind string) {
	s.mu.Lock()
	s.calls[kind]++
	s.mu.Unlock()
}

// shown is a variable as the API shows it: a hidden one without value.
func shown(v *Variable) map[string]any {
	out := map[string]any{"key": v.Key, "value": v.Value, "variable_type": v.VariableType, "protected": v.Protected,
		"masked": v.Masked, "hidden": v.Hidden, "raw": v.Raw, "environment_scope": v.EnvironmentScope, "description": v.Description}
	if v.Hidden {
		out["value"] = nil
	}
	if v.Description == "" {
		out["description"] = nil
	}
	return out
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.count("list")
	q, ok := query(w, r, "page", "per_page")
	if !ok {
		return
	}
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	page, per := 1, 20
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			message(w, http.StatusBadRequest, "page is invalid")
			return
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			message(w, http.StatusBadRequest, "per_page is invalid")
			return
		}
		per = min(n, 100)
	}
	s.mu.Lock()
	all := append([]*Variable(nil), o.vars...)
	s.mu.Unlock()
	total := len(all)
	pages := max(1, (total+per-1)/per)
	from := min((page-1)*per, total)
	to := min(from+per, total)
	items := make([]map[string]any, 0, to-from)
	for _, v := range all[from:to] {
		items = append(items, shown(v))
	}
	h := w.Header()
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Page", strconv.Itoa(page))
	next, prev := "", ""
	if page < pages {
		next = strconv.Itoa(page + 1)
	}
	if page > 1 {
		prev = strconv.Itoa(page - 1)
	}
	h.Set("X-Next-Page", next)
	h.Set("X-Prev-Page", prev)
	base := s.srv.URL + r.URL.Path + "?per_page=" + strconv.Itoa(per) + "&page="
	links := []string{fmt.Sprintf(`<%s%d>; rel="first"`, base, 1), fmt.Sprintf(`<%s%d>; rel="last"`, base, pages)}
	if next != "" {
		links = append(links, fmt.Sprintf(`<%s%s>; rel="next"`, base, next))
	}
	if prev != "" {
		links = append(links, fmt.Sprintf(`<%s%s>; rel="prev"`, base, prev))
	}
	h.Set("Link", strings.Join(links, ", "))
	writeJSON(w, http.StatusOK, items)
}

// find is the variable of key in the scope (any scope when scope is
// empty): GitLab's find_variable, which refuses a key held in several
// scopes without a filter.
func find(o *owner, key, scope string) (*Variable, int, string) {
	var found []*Variable
	for _, v := range o.vars {
		if v.Key == key && (scope == "" || v.EnvironmentScope == scope) {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return nil, http.StatusNotFound, "404 Variable Not Found"
	case 1:
		return found[0], 0, ""
	}
	return nil, http.StatusConflict, "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'"
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.count("get")
	q, ok := query(w, r, "filter[environment_scope]")
	if !ok {
		return
	}
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	v, status, msg := find(o, r.PathValue("key"), q.Get("filter[environment_scope]"))
	var out map[string]any
	if v != nil {
		out = shown(v)
	}
	s.mu.Unlock()
	if v == nil {
		message(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// body is what a create or update may send: the documented parameters.
type body struct {
	Key              *string `json:"key"`
	Value            *string `json:"value"`
	Description      *string `json:"description"`
	EnvironmentScope *string `json:"environment_scope"`
	Masked           *bool   `json:"masked"`
	MaskedAndHidden  *bool   `json:"masked_and_hidden"`
	Protected        *bool   `json:"protected"`
	Raw              *bool   `json:"raw"`
	VariableType     *string `json:"variable_type"`
	Filter           *struct {
		EnvironmentScope string `json:"environment_scope"`
	} `json:"filter"`
}

func decode(w http.ResponseWriter, r *http.Request) (*body, bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		message(w, http.StatusUnsupportedMediaType, "gitlabfake: the body must be JSON")
		return nil, false
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	var b body
	if err := dec.Decode(&b); err != nil {
		message(w, http.StatusBadRequest, "gitlabfake: the body is not the documented JSON")
		return nil, false
	}
	return &b, true
}

// maskable is GitLab's rule for a masked value: one line of at least 8
// characters, of the base64 alphabet and @ : . ~ - _ + = /.
var maskable = regexp.MustCompile(`^[A-Za-z0-9@:.~\-_+=/]{8,}$`)

// apply checks b and writes it into v; it returns GitLab's message for a
// refused field.
func apply(v *Variable, b *body) map[string][]string {
	if b.Value != nil {
		v.Value = *b.Value
	}
	if b.Description != nil {
		v.Description = *b.Description
	}
	if b.EnvironmentScope != nil {
		v.EnvironmentScope = *b.EnvironmentScope
	}
	if b.Masked != nil {
		v.Masked = *b.Masked
	}
	if b.MaskedAndHidden != nil && *b.MaskedAndHidden {
		v.Masked, v.Hidden = true, true
	}
	if b.Protected != nil {
		v.Protected = *b.Protected
	}
	if b.Raw != nil {
		v.Raw = *b.Raw
	}
	if b.VariableType != nil {
		v.VariableType = *b.VariableType
	}
	bad := map[string][]string{}
	if v.VariableType != "env_var" && v.VariableType != "file" {
		bad["variable_type"] = []string{"does not have a valid value"}
	}
	if len(v.Value) > 10000 {
		bad["value"] = []string{"is too long (maximum is 10000 characters)"}
	}
	if v.Masked && !maskable.MatchString(v.Value) {
		bad["value"] = append(bad["value"], "is invalid")
	}
	if len([]rune(v.Description)) > 255 {
		bad["description"] = []string{"is too long (maximum is 255 characters)"}
	}
	if v.EnvironmentScope == "" || len(v.EnvironmentScope) > 255 {
		bad["environment_scope"] = []string{"is invalid"}
	}
	return bad
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	s.count("create")
	if _, ok := query(w, r); !ok {
		return
	}
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	b, ok := decode(w, r)
	if !ok {
		return
	}
	if b.Filter != nil {
		message(w, http.StatusBadRequest, "gitlabfake: filter is not a parameter of a create")
		return
	}
	if b.Key == nil || b.Value == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "key is missing, value is missing"})
		return
	}
	if !keyShape.MatchString(*b.Key) {
		message(w, http.StatusBadRequest, map[string][]string{"key": {"can contain only letters, digits and '_'."}})
		return
	}
	v := &Variable{Key: *b.Key, VariableType: "env_var", EnvironmentScope: "*"}
	if bad := apply(v, b); len(bad) > 0 {
		message(w, http.StatusBadRequest, bad)
		return
	}
	s.mu.Lock()
	if _, status, _ := find(o, v.Key, v.EnvironmentScope); status != http.StatusNotFound {
		s.mu.Unlock()
		message(w, http.StatusBadRequest, map[string][]string{"key": {"(" + v.Key + ") has already been taken"}})
		return
	}
	o.vars = append(o.vars, v)
	out := shown(v)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	s.count("update")
	if _, ok := query(w, r); !ok {
		return
	}
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	b, ok := decode(w, r)
	if !ok {
		return
	}
	if b.Key != nil && *b.Key != r.PathValue("key") {
		message(w, http.StatusBadRequest, "gitlabfake: a variable's key cannot change")
		return
	}
	scope := ""
	if b.Filter != nil {
		scope = b.Filter.EnvironmentScope
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, status, msg := find(o, r.PathValue("key"), scope)
	if v == nil {
		message(w, status, msg)
		return
	}
	next := *v
	if bad := apply(&next, b); len(bad) > 0 {
		message(w, http.StatusBadRequest, bad)
		return
	}
	if next.EnvironmentScope != v.EnvironmentScope {
		if clash, st, _ := find(o, next.Key, next.EnvironmentScope); clash != nil || st == http.StatusConflict {
			message(w, http.StatusBadRequest, map[string][]string{"key": {"(" + next.Key + ") has already been taken"}})
			return
		}
	}
	*v = next
	writeJSON(w, http.StatusOK, shown(v))
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	s.count("delete")
	q, ok := query(w, r, "filter[environment_scope]")
	if !ok {
		return
	}
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, status, msg := find(o, r.PathValue("key"), q.Get("filter[environment_scope]"))
	if v == nil {
		message(w, status, msg)
		return
	}
	kept := o.vars[:0]
	for _, have := range o.vars {
		if have != v {
			kept = append(kept, have)
		}
	}
	o.vars = kept
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) projectGroups(w http.ResponseWriter, r *http.Request) {
	s.count("groups")
	if _, ok := query(w, r, "page", "per_page"); !ok {
		return
	}
	r.SetPathValue("kind", "projects")
	o, ok := s.owner(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	out := make([]map[string]any, 0, len(o.groups))
	for _, id := range o.groups {
		g := s.groups[id]
		name := g.path[strings.LastIndex(g.path, "/")+1:]
		out = append(out, map[string]any{"id": g.id, "name": name, "full_name": g.path, "full_path": g.path,
			"avatar_url": nil, "web_url": s.srv.URL + "/groups/" + g.path})
	}
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-Total", strconv.Itoa(len(out)))
	h.Set("X-Total-Pages", "1")
	h.Set("X-Per-Page", "20")
	h.Set("X-Page", "1")
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	writeJSON(w, http.StatusOK, out)
}
