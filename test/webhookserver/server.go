// Package webhookserver is a small HTTP secret API for the tests of the
// webhook provider, which talks to any HTTP API, so no vendor's server is
// the real one. It speaks plain HTTP conventions strictly: a bearer token,
// JSON documents, an ETag per version, and conditional writes (If-Match,
// If-None-Match: *) that answer 412 when they lose a race.
//
//	GET    /v1/secrets/{name}  200 {"data": {...}, "owner": "...", "version": N}, ETag "N"; 404
//	PUT    /v1/secrets/{name}  body {"data": {...}, "owner": "..."}; 200 with the document and its ETag
//	DELETE /v1/secrets/{name}  204; 404
package webhookserver

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
)

// Doc is one secret as the API keeps it.
type Doc struct {
	Data    map[string]string `json:"data"`
	Owner   string            `json:"owner,omitempty"`
	Version int               `json:"version"`
}

// Server is a running API.
type Server struct {
	URL   string
	Token string

	srv  *httptest.Server
	mu   sync.Mutex
	docs map[string]Doc
	seq  int
	// Requests counts the requests the API answered.
	Requests int
}

// Start starts an API on loopback that accepts token.
func Start(token string) *Server {
	s := &Server{Token: token, docs: map[string]Doc{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/secrets/{name...}", s.get)
	mux.HandleFunc("PUT /v1/secrets/{name...}", s.put)
	mux.HandleFunc("DELETE /v1/secrets/{name...}", s.del)
	s.srv = httptest.NewServer(s.auth(mux))
	s.URL = s.srv.URL
	return s
}

// Close stops the API.
func (s *Server) Close() { s.srv.Close() }

// Seed writes a secret as someone other than Watchword would: without an
// owner, in a new version.
func (s *Server) Seed(name string, data map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.docs[name] = Doc{Data: maps.Clone(data), Version: s.seq}
}

// Remove deletes a secret out of band.
func (s *Server) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, name)
}

// Get returns a secret as the API keeps it.
func (s *Server) Get(name string) (Doc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[name]
	return d, ok
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.Requests++
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.Token {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func etag(v int) string { return strconv.Quote(strconv.Itoa(v)) }

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	d, ok := s.Get(r.PathValue("name"))
	if !ok {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	write(w, http.StatusOK, d)
}

// precondition checks If-Match and If-None-Match against the current
// document (held under s.mu).
func precondition(r *http.Request, d Doc, exists bool) bool {
	if m := r.Header.Get("If-Match"); m != "" && (!exists || (m != "*" && m != etag(d.Version))) {
		return false
	}
	if r.Header.Get("If-None-Match") == "*" && exists {
		return false
	}
	return true
}

func (s *Server) put(w http.ResponseWriter, r *http.Request) {
	var in Doc
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil || in.Data == nil {
		http.Error(w, fmt.Sprintf(`{"error":"invalid document","got":%q}`, body), http.StatusBadRequest)
		return
	}
	name := r.PathValue("name")
	s.mu.Lock()
	cur, exists := s.docs[name]
	if !precondition(r, cur, exists) {
		s.mu.Unlock()
		http.Error(w, `{"error":"precondition failed"}`, http.StatusPreconditionFailed)
		return
	}
	s.seq++
	d := Doc{Data: in.Data, Owner: in.Owner, Version: s.seq}
	s.docs[name] = d
	s.mu.Unlock()
	write(w, http.StatusOK, d)
}

func (s *Server) del(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.docs[name]
	if !exists {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	if !precondition(r, cur, exists) {
		http.Error(w, `{"error":"precondition failed"}`, http.StatusPreconditionFailed)
		return
	}
	delete(s.docs, name)
	w.WriteHeader(http.StatusNoContent)
}

func write(w http.ResponseWriter, code int, d Doc) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", etag(d.Version))
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(d)
}
