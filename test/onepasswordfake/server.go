// Package onepasswordfake is a 1Password Connect server for tests: the
// Connect server needs a 1Password account and cannot run here, so this
// speaks its REST API (the part Watchword uses) strictly, for the tests
// of the onepassword provider, which drive it through 1Password's Go SDK.
//
//	GET    /v1/vaults[?filter=title eq "name"]               the vaults the token may use
//	GET    /v1/vaults/{vault}                                one vault
//	GET    /v1/vaults/{vault}/items[?filter=title eq "x"]    item summaries (no fields, no files)
//	POST   /v1/vaults/{vault}/items                          create an item; 200 with the item
//	GET    /v1/vaults/{vault}/items/{item}                   the whole item, fields and files
//	PUT    /v1/vaults/{vault}/items/{item}                   replace an item; 200 with the item
//	DELETE /v1/vaults/{vault}/items/{item}                   204
//	GET    /v1/vaults/{vault}/items/{item}/files[/{file}[/content]]
//
// It checks the bearer token on every request (401 without a valid one),
// refuses a vault the token may not use (403), answers 404 for an unknown
// vault or item, refuses a filter other than `title eq "..."` and a body
// that is not an item of the vault and ID of its path (400), with unknown
// members, a field type or category outside Connect's, or a field without
// a type. Errors are Connect's JSON {"status": N, "message": "..."}.
// Versions start at 1 and grow by one with each replacement, as Connect's
// do. Throttle answers the next requests with 429 and Retry-After.
package onepasswordfake

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConnectVersion is the version the fake reports in the
// 1Password-Connect-Version header, as Connect does.
const ConnectVersion = "1.7.3"

// Field is a field of an item, as Connect's JSON has it.
type Field struct {
	ID      string   `json:"id"`
	Section *Section `json:"section,omitempty"`
	Type    string   `json:"type"`
	Purpose string   `json:"purpose,omitempty"`
	Label   string   `json:"label,omitempty"`
	Value   string   `json:"value,omitempty"`
	// Members the SDK may send on a write.
	Generate bool            `json:"generate,omitempty"`
	Recipe   json.RawMessage `json:"recipe,omitempty"`
	Entropy  float64         `json:"entropy,omitempty"`
	TOTP     string          `json:"totp,omitempty"`
}

// Section is a section of an item.
type Section struct {
	ID    string `json:"id,omitempty"`
	Label string `json:"label,omitempty"`
}

// File is a file attached to an item.
type File struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Section     *Section `json:"section,omitempty"`
	Size        int      `json:"size"`
	ContentPath string   `json:"content_path"`
	content     []byte
}

type vaultRef struct {
	ID string `json:"id"`
}

// item is an item as Connect's JSON has it; the write body is decoded
// into it strictly.
type item struct {
	ID           string          `json:"id"`
	Title        string          `json:"title"`
	URLs         json.RawMessage `json:"urls,omitempty"`
	Favorite     bool            `json:"favorite,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	Version      int             `json:"version,omitempty"`
	Vault        vaultRef        `json:"vault"`
	Category     string          `json:"category,omitempty"`
	Sections     []*Section      `json:"sections,omitempty"`
	Fields       []*Field        `json:"fields,omitempty"`
	Files        []*File         `json:"files,omitempty"`
	LastEditedBy string          `json:"lastEditedBy,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
	Trashed      bool            `json:"trashed,omitempty"`
}

type vault struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Content int       `json:"contentVersion"`
	Items   int       `json:"items"`
	Created time.Time `json:"createdAt"`
	Updated time.Time `json:"updatedAt"`
}

// Server is a running fake Connect server.
type Server struct {
	// URL is the server's address, the store's connectHost.
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	token     string
	vaults    []*vault
	denied    map[string]bool
	items     map[string][]*item // by vault ID
	throttle  int
	retryWait int
	requests  map[string]int
}

// Start starts a server on loopback that accepts token.
func Start(token string) *Server {
	s := &Server{token: token, denied: map[string]bool{}, items: map[string][]*item{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/vaults", s.listVaults)
	mux.HandleFunc("GET /v1/vaults/{vault}", s.getVault)
	mux.HandleFunc("GET /v1/vaults/{vault}/items", s.listItems)
	mux.HandleFunc("POST /v1/vaults/{vault}/items", s.createItem)
	mux.HandleFunc("GET /v1/vaults/{vault}/items/{item}", s.getItem)
	mux.HandleFunc("PUT /v1/vaults/{vault}/items/{item}", s.replaceItem)
	mux.HandleFunc("DELETE /v1/vaults/{vault}/items/{item}", s.deleteItem)
	mux.HandleFunc("GET /v1/vaults/{vault}/items/{item}/files", s.listFiles)
	mux.HandleFunc("GET /v1/vaults/{vault}/items/{item}/files/{file}", s.getFile)
	mux.HandleFunc("GET /v1/vaults/{vault}/items/{item}/files/{file}/content", s.fileContent)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fail(w, http.StatusNotFound, "Invalid request path") })
	s.srv = httptest.NewServer(s.gate(mux))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// NewID makes an ID of Connect's shape: 26 lower-case letters and digits.
func NewID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 26)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// AddVault adds a vault named name and returns its ID.
func (s *Server) AddVault(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	v := &vault{ID: NewID(), Name: name, Type: "USER_CREATED", Created: now, Updated: now}
	s.vaults = append(s.vaults, v)
	return v.ID
}

// Deny makes the token lose its access to the vault of that ID: Connect
// answers 403 for it and leaves it out of the vault listing.
func (s *Server) Deny(vaultID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[vaultID] = true
}

// SetToken changes the token the server accepts: the old one is revoked.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// Throttle answers the next n requests with 429 Too Many Requests and
// Retry-After: seconds.
func (s *Server) Throttle(n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle, s.retryWait = n, seconds
}

// Requests counts the requests answered for a route pattern, such as
// "GET /v1/vaults/{vault}/items/{item}".
func (s *Server) Requests(pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[pattern]
}

// Put writes an item as a person would in 1Password: a new item with
// these fields (CONCEALED, by label) and files, or a new version of the
// item of that title. It returns the item's ID.
func (s *Server) Put(vaultID, title string, fields map[string]string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	labels := make([]string, 0, len(fields))
	for k := range fields {
		labels = append(labels, k)
	}
	slices.Sort(labels)
	var fs []*Field
	for _, l := range labels {
		fs = append(fs, &Field{ID: NewID(), Type: "CONCEALED", Label: l, Value: fields[l]})
	}
	now := time.Now().UTC()
	it := s.byTitle(vaultID, title)
	if it == nil {
		it = &item{ID: NewID(), Title: title, Vault: vaultRef{ID: vaultID}, Category: "PASSWORD", CreatedAt: now}
		s.items[vaultID] = append(s.items[vaultID], it)
	}
	it.Version++
	it.Fields, it.UpdatedAt, it.Files = fs, now, nil
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := &File{ID: NewID(), Name: n, Size: len(files[n]), content: files[n]}
		f.ContentPath = fmt.Sprintf("/v1/vaults/%s/items/%s/files/%s/content", vaultID, it.ID, f.ID)
		it.Files = append(it.Files, f)
	}
	return it.ID
}

// Remove deletes the item of that title, if any.
func (s *Server) Remove(vaultID, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[vaultID] = slices.DeleteFunc(s.items[vaultID], func(it *item) bool { return it.Title == title })
}

// Item returns the fields of the item of that title, by label, and its
// version; ok is false when there is none.
func (s *Server) Item(vaultID, title string) (fields map[string]string, version int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.byTitle(vaultID, title)
	if it == nil {
		return nil, 0, false
	}
	fields = map[string]string{}
	for _, f := range it.Fields {
		fields[f.Label] = f.Value
	}
	return fields, it.Version, true
}

func (s *Server) byTitle(vaultID, title string) *item {
	for _, it := range s.items[vaultID] {
		if it.Title == title {
			return it
		}
	}
	return nil
}

func fail(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "message": message})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// gate checks the token, counts the request and throttles it.
func (s *Server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("1Password-Connect-Version", ConnectVersion)
		s.mu.Lock()
		token, throttle, wait := s.token, s.throttle, s.retryWait
		if throttle > 0 {
			s.throttle--
		}
		s.mu.Unlock()
		auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case !ok || auth == "":
			fail(w, http.StatusUnauthorized, "Invalid bearer token")
			return
		case auth != token:
			fail(w, http.StatusUnauthorized, "Invalid token signature")
			return
		case throttle > 0:
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			fail(w, http.StatusTooManyRequests, "Too many requests")
			return
		}
		next.ServeHTTP(w, r)
		s.mu.Lock()
		s.requests[r.Pattern]++
		s.mu.Unlock()
	})
}

// vault finds the vault of the request's path, answering 403 or 404
// when the token may not use it or there is none; the caller holds mu.
func (s *Server) vault(w http.ResponseWriter, r *http.Request) *vault {
	id := r.PathValue("vault")
	for _, v := range s.vaults {
		if v.ID == id {
			if s.denied[id] {
				fail(w, http.StatusForbidden, "Authorization: token does not have access to vault")
				return nil
			}
			return v
		}
	}
	fail(w, http.StatusNotFound, "vault not found")
	return nil
}

// item finds the item of the request's path; the caller holds mu.
func (s *Server) item(w http.ResponseWriter, r *http.Request) *item {
	v := s.vault(w, r)
	if v == nil {
		return nil
	}
	id := r.PathValue("item")
	for _, it := range s.items[v.ID] {
		if it.ID == id {
			return it
		}
	}
	fail(w, http.StatusNotFound, "item not found")
	return nil
}

// titleFilter reads the only filter Watchword sends, title eq "...".
func titleFilter(r *http.Request) (title string, set, ok bool) {
	q := r.URL.Query()
	for k := range q {
		if k != "filter" {
			return "", false, false
		}
	}
	if !q.Has("filter") {
		return "", false, true
	}
	f := q.Get("filter")
	rest, found := strings.CutPrefix(f, `title eq "`)
	if !found || !strings.HasSuffix(rest, `"`) || len(rest) < 2 {
		return "", false, false
	}
	return strings.TrimSuffix(rest, `"`), true, true
}

func (s *Server) listVaults(w http.ResponseWriter, r *http.Request) {
	title, filtered, ok := titleFilter(r)
	if !ok {
		fail(w, http.StatusBadRequest, "Invalid filter")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []vault{}
	for _, v := range s.vaults {
		if !s.denied[v.ID] && (!filtered || v.Name == title) {
			c := *v
			c.Items = len(s.items[v.ID])
			out = append(out, c)
		}
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) getVault(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.vault(w, r); v != nil {
		c := *v
		c.Items = len(s.items[v.ID])
		reply(w, http.StatusOK, c)
	}
}

// summary is an item as a listing shows it: no fields, sections or files.
func summary(it *item) item {
	c := *it
	c.Fields, c.Sections, c.Files = nil, nil, nil
	return c
}

func (s *Server) listItems(w http.ResponseWriter, r *http.Request) {
	title, filtered, ok := titleFilter(r)
	if !ok {
		fail(w, http.StatusBadRequest, "Invalid filter")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vault(w, r)
	if v == nil {
		return
	}
	out := []item{}
	for _, it := range s.items[v.ID] {
		if !filtered || it.Title == title {
			out = append(out, summary(it))
		}
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.item(w, r); it != nil {
		reply(w, http.StatusOK, it)
	}
}

var (
	categories = []string{"LOGIN", "PASSWORD", "API_CREDENTIAL", "SERVER", "DATABASE", "CREDIT_CARD", "MEMBERSHIP", "PASSPORT",
		"SOFTWARE_LICENSE", "OUTDOOR_LICENSE", "SECURE_NOTE", "WIRELESS_ROUTER", "BANK_ACCOUNT", "DRIVER_LICENSE", "IDENTITY",
		"REWARD_PROGRAM", "DOCUMENT", "EMAIL_ACCOUNT", "SOCIAL_SECURITY_NUMBER", "MEDICAL_RECORD", "SSH_KEY"}
	fieldTypes = []string{"STRING", "EMAIL", "CONCEALED", "URL", "OTP", "DATE", "MONTH_YEAR", "MENU", "ADDRESS", "PHONE",
		"CREDIT_CARD_NUMBER", "CREDIT_CARD_TYPE", "GENDER", "REFERENCE", "SSH_KEY"}
	purposes = []string{"", "USERNAME", "PASSWORD", "NOTES"}
)

// body decodes an item of a write strictly, answering 400 for anything
// Connect would refuse.
func body(w http.ResponseWriter, r *http.Request) *item {
	if r.Header.Get("Content-Type") != "application/json" {
		fail(w, http.StatusBadRequest, "Content-Type must be application/json")
		return nil
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
		fail(w, http.StatusBadRequest, "Invalid request body")
		return nil
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var it item
	if err := dec.Decode(&it); err != nil || dec.More() {
		fail(w, http.StatusBadRequest, "Invalid item: the body is not an item")
		return nil
	}
	switch {
	case it.Vault.ID != r.PathValue("vault"):
		fail(w, http.StatusBadRequest, "Invalid item: vault.id does not match the request path")
		return nil
	case strings.TrimSpace(it.Title) == "":
		fail(w, http.StatusBadRequest, "Invalid item: title is required")
		return nil
	case !slices.Contains(categories, it.Category):
		fail(w, http.StatusBadRequest, "Invalid item: unknown or unsupported category")
		return nil
	case len(it.Files) > 0:
		fail(w, http.StatusBadRequest, "Invalid item: files cannot be written through Connect")
		return nil
	}
	for _, f := range it.Fields {
		if f == nil || !slices.Contains(fieldTypes, f.Type) || !slices.Contains(purposes, f.Purpose) {
			fail(w, http.StatusBadRequest, "Invalid item: a field has no valid type or purpose")
			return nil
		}
		if f.ID == "" {
			f.ID = NewID()
		}
	}
	return &it
}

func (s *Server) createItem(w http.ResponseWriter, r *http.Request) {
	it := body(w, r)
	if it == nil {
		return
	}
	if it.ID != "" || it.Version != 0 {
		fail(w, http.StatusBadRequest, "Invalid item: a new item has no id or version")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vault(w, r)
	if v == nil {
		return
	}
	now := time.Now().UTC()
	it.ID, it.Version, it.CreatedAt, it.UpdatedAt = NewID(), 1, now, now
	s.items[v.ID] = append(s.items[v.ID], it)
	reply(w, http.StatusOK, it)
}

func (s *Server) replaceItem(w http.ResponseWriter, r *http.Request) {
	it := body(w, r)
	if it == nil {
		return
	}
	if it.ID != r.PathValue("item") {
		fail(w, http.StatusBadRequest, "Invalid item: id does not match the request path")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.item(w, r)
	if cur == nil {
		return
	}
	cur.Title, cur.Category, cur.Tags, cur.Fields, cur.Sections = it.Title, it.Category, it.Tags, it.Fields, it.Sections
	cur.Version++
	cur.UpdatedAt = time.Now().UTC()
	reply(w, http.StatusOK, cur)
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.item(w, r)
	if it == nil {
		return
	}
	s.items[it.Vault.ID] = slices.DeleteFunc(s.items[it.Vault.ID], func(x *item) bool { return x == it })
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.item(w, r); it != nil {
		out := []*File{}
		out = append(out, it.Files...)
		reply(w, http.StatusOK, out)
	}
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) *File {
	it := s.item(w, r)
	if it == nil {
		return nil
	}
	for _, f := range it.Files {
		if f.ID == r.PathValue("file") {
			return f
		}
	}
	fail(w, http.StatusNotFound, "file not found")
	return nil
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.file(w, r); f != nil {
		reply(w, http.StatusOK, f)
	}
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.file(w, r); f != nil {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(f.content)
	}
}
