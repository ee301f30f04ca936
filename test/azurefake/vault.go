package azurefake

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// pageSize is Key Vault's largest page of a version listing.
const pageSize = 25

// serveVault answers the secrets data plane of one vault.
func (s *Server) serveVault(w http.ResponseWriter, r *http.Request, v *vault) {
	resource := "https://" + v.cloud.VaultSuffix
	challenge := fmt.Sprintf(`Bearer authorization="https://%s/%s", resource="%s"`, v.cloud.LoginHost, v.tenant, resource)
	auth := r.Header.Get("Authorization")
	if auth == "" {
		// The first request of the SDK carries no token: the challenge
		// tells it the tenant and the resource to ask a token for.
		s.count("challenge")
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "", "AKV10000: Request is missing a Bearer or PoP token.")
		return
	}
	s.mu.Lock()
	tok, known := s.tokens[strings.TrimPrefix(auth, "Bearer ")]
	s.mu.Unlock()
	switch {
	case !strings.HasPrefix(auth, "Bearer ") || !known:
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "", "AKV10032: Invalid issuer.")
		return
	case !s.now().Before(tok.expires):
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "", "AKV10022: Token expired.")
		return
	case tok.resource != resource:
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "", "AKV10022: Invalid audience.")
		return
	case tok.tenant != v.tenant:
		w.Header().Set("WWW-Authenticate", challenge)
		kvError(w, http.StatusUnauthorized, "Unauthorized", "", "AKV10032: Invalid issuer. Expected one of the tenant's issuers.")
		return
	}
	if av := r.URL.Query().Get("api-version"); !APIVersions[av] {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "The specified version ("+av+") is not recognized. Consider using the latest supported version.")
		return
	}
	s.mu.Lock()
	if s.throttle > 0 {
		s.throttle--
		s.calls["throttled"]++
		after := s.retryAfter
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(after))
		kvError(w, http.StatusTooManyRequests, "Throttled", "", "Request was not processed because too many requests were received. Reason: VaultRequestTypeLimitReached")
		return
	}
	s.mu.Unlock()

	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if r.Method == http.MethodGet && parts[0] == "secrets" && (len(parts) == 1 || (len(parts) == 2 && parts[1] == "")) {
		parts = []string{"secrets", ""} // the vault's listing: no name
	} else if len(parts) < 2 || parts[0] != "secrets" {
		kvError(w, http.StatusNotFound, "NotFound", "", "the fake serves secrets only")
		return
	}
	name, err := url.PathUnescape(parts[1])
	if err != nil || (name != "" && !validName(name)) {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "The request URI contains an invalid name: "+parts[1])
		return
	}
	rest := parts[2:]
	if len(rest) == 1 && rest[0] == "" {
		rest = nil
	}
	op, perm := "", ""
	switch {
	case name == "":
		op, perm = "listSecrets", "list"
	case r.Method == http.MethodGet && len(rest) == 1 && rest[0] == "versions":
		op, perm = "listVersions", "list"
	case r.Method == http.MethodGet && len(rest) <= 1:
		op, perm = "getSecret", "get"
	case r.Method == http.MethodPut && len(rest) == 0:
		op, perm = "setSecret", "set"
	case r.Method == http.MethodDelete && len(rest) == 0:
		op, perm = "deleteSecret", "delete"
	default:
		kvError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "", "the method is not allowed on this path")
		return
	}
	s.count(op)
	actions := map[string]string{"get": "getSecret/action", "list": "readMetadata/action", "set": "setSecret/action", "delete": "delete"}
	if !tok.perms[perm] {
		kvError(w, http.StatusForbidden, "Forbidden", "ForbiddenByRbac", fmt.Sprintf(
			"Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments or role definitions were changed recently, please observe propagation time.\r\nCaller: appid=%s;oid=00000000-0000-0000-0000-000000000000;iss=https://sts.windows.net/%s/\r\nAction: 'Microsoft.KeyVault/vaults/secrets/%s'\r\nResource: '/subscriptions/0/resourcegroups/rg/providers/microsoft.keyvault/vaults/%s/secrets/%s'",
			tok.principal, tok.tenant, actions[perm], strings.Split(v.host, ".")[0], strings.ToLower(name)))
		return
	}
	switch op {
	case "getSecret":
		ver := ""
		if len(rest) == 1 {
			ver = rest[0]
		}
		s.getSecret(w, v, name, ver)
	case "listVersions":
		s.listVersions(w, r, v, name)
	case "listSecrets":
		s.listSecrets(w, r, v)
	case "setSecret":
		s.setSecret(w, r, v, name)
	case "deleteSecret":
		s.deleteSecret(w, v, name)
	}
}

func secretID(v *vault, name, ver string) string {
	return "https://" + v.host + "/secrets/" + name + "/" + ver
}

func attributes(ver *version) map[string]any {
	return map[string]any{"enabled": ver.enabled, "created": ver.created, "updated": ver.created,
		"recoveryLevel": "Recoverable+Purgeable", "recoverableDays": 90}
}

func (s *Server) bundle(v *vault, name string, ver *version, withValue bool) map[string]any {
	out := map[string]any{"id": secretID(v, name, ver.id), "attributes": attributes(ver)}
	if withValue {
		out["value"] = ver.value
	}
	if ver.contentType != "" {
		out["contentType"] = ver.contentType
	}
	if len(ver.tags) > 0 {
		out["tags"] = ver.tags
	}
	if ver.managed {
		out["managed"] = true
		out["kid"] = "https://" + v.host + "/keys/" + name + "/" + ver.id
	}
	return out
}

func notFound(w http.ResponseWriter, name string) {
	kvError(w, http.StatusNotFound, "SecretNotFound", "", fmt.Sprintf("A secret with (name/id) %s was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command.", name))
}

func (s *Server) getSecret(w http.ResponseWriter, v *vault, name, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := v.secrets[name]
	if sec == nil || sec.deleted || len(sec.versions) == 0 {
		notFound(w, name)
		return
	}
	ver := sec.versions[len(sec.versions)-1]
	if id != "" {
		ver = nil
		for _, x := range sec.versions {
			if x.id == id {
				ver = x
			}
		}
		if ver == nil {
			notFound(w, name+"/"+id)
			return
		}
	}
	if !ver.enabled {
		kvError(w, http.StatusForbidden, "Forbidden", "SecretDisabled", "Operation get is not allowed on a disabled secret.")
		return
	}
	writeJSON(w, http.StatusOK, s.bundle(v, name, ver, true))
}

// listSecrets lists the vault's secrets, a page at a time: each one's
// ID (without a version), and the attributes and tags of its current
// version, never a value. Deleted secrets are not listed.
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request, v *vault) {
	q := r.URL.Query()
	size := pageSize
	if m := q.Get("maxresults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > pageSize {
			kvError(w, http.StatusBadRequest, "BadParameter", "", "maxresults must be between 1 and 25")
			return
		}
		size = n
	}
	skip := 0
	if t := q.Get("$skiptoken"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			kvError(w, http.StatusBadRequest, "BadParameter", "", "invalid $skiptoken")
			return
		}
		skip = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, sec := range v.secrets {
		if !sec.deleted && len(sec.versions) > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	items := []any{}
	for i := skip; i < len(names) && i < skip+size; i++ {
		sec := v.secrets[names[i]]
		item := s.bundle(v, names[i], sec.versions[len(sec.versions)-1], false)
		item["id"] = "https://" + v.host + "/secrets/" + names[i]
		delete(item, "kid")
		items = append(items, item)
	}
	out := map[string]any{"value": items, "nextLink": nil}
	if skip+size < len(names) {
		next := url.Values{"api-version": {q.Get("api-version")}, "$skiptoken": {strconv.Itoa(skip + size)}, "maxresults": {strconv.Itoa(size)}}
		out["nextLink"] = "https://" + v.host + "/secrets?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, v *vault, name string) {
	q := r.URL.Query()
	size := pageSize
	if m := q.Get("maxresults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > pageSize {
			kvError(w, http.StatusBadRequest, "BadParameter", "", "maxresults must be between 1 and 25")
			return
		}
		size = n
	}
	skip := 0
	if t := q.Get("$skiptoken"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			kvError(w, http.StatusBadRequest, "BadParameter", "", "invalid $skiptoken")
			return
		}
		skip = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := v.secrets[name]
	if sec == nil || sec.deleted || len(sec.versions) == 0 {
		notFound(w, name)
		return
	}
	// Key Vault lists versions in no documented order: the fake lists
	// them by version ID, so that a client cannot rely on the order.
	all := append([]*version(nil), sec.versions...)
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	items := []any{}
	for i := skip; i < len(all) && i < skip+size; i++ {
		items = append(items, s.bundle(v, name, all[i], false))
	}
	out := map[string]any{"value": items, "nextLink": nil}
	if skip+size < len(all) {
		next := url.Values{"api-version": {q.Get("api-version")}, "$skiptoken": {strconv.Itoa(skip + size)}, "maxresults": {strconv.Itoa(size)}}
		out["nextLink"] = "https://" + v.host + "/secrets/" + name + "/versions?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, out)
}

type setBody struct {
	Value       *string           `json:"value"`
	ContentType string            `json:"contentType"`
	Tags        map[string]string `json:"tags"`
	Attributes  *struct {
		Enabled *bool  `json:"enabled"`
		Exp     *int64 `json:"exp"`
		Nbf     *int64 `json:"nbf"`
	} `json:"attributes"`
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request, v *vault, name string) {
	var body setBody
	if err := decodeStrict(r, &body); err != nil {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "The request body is not valid: "+err.Error())
		return
	}
	if body.Value == nil {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "Property value is required.")
		return
	}
	if len(*body.Value) > 25*1024 {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "The secret value is larger than 25 KB.")
		return
	}
	if len(body.Tags) > 15 {
		kvError(w, http.StatusBadRequest, "BadParameter", "", "A secret may have at most 15 tags.")
		return
	}
	for k, t := range body.Tags {
		if len(k) > 512 || len(t) > 256 {
			kvError(w, http.StatusBadRequest, "BadParameter", "", "A tag name may have at most 512 characters and a value 256.")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := v.secrets[name]
	if sec != nil && !sec.deleted && len(sec.versions) > 0 && sec.versions[len(sec.versions)-1].managed {
		kvError(w, http.StatusForbidden, "Forbidden", "", "Secret "+name+" is managed by a certificate and cannot be set; update the certificate instead.")
		return
	}
	if sec != nil && sec.deleted {
		kvError(w, http.StatusConflict, "Conflict", "ObjectIsDeletedButRecoverable",
			fmt.Sprintf("Secret %s is currently in a deleted but recoverable state, and its name cannot be reused; in this state, the secret can only be recovered or purged.", name))
		return
	}
	if sec == nil {
		sec = &secret{}
		v.secrets[name] = sec
	}
	ver := &version{id: newID(), value: *body.Value, contentType: body.ContentType, tags: body.Tags, created: s.now().Unix(), enabled: true}
	if body.Attributes != nil && body.Attributes.Enabled != nil {
		ver.enabled = *body.Attributes.Enabled
	}
	sec.versions = append(sec.versions, ver)
	writeJSON(w, http.StatusOK, s.bundle(v, name, ver, true))
}

func (s *Server) deleteSecret(w http.ResponseWriter, v *vault, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := v.secrets[name]
	if sec == nil || sec.deleted {
		notFound(w, name)
		return
	}
	// Soft delete: the name stays taken until it is purged.
	sec.deleted = true
	cur := sec.versions[len(sec.versions)-1]
	out := s.bundle(v, name, cur, false)
	out["recoveryId"] = "https://" + v.host + "/deletedsecrets/" + name
	out["deletedDate"] = s.now().Unix()
	out["scheduledPurgeDate"] = s.now().Unix() + 90*24*3600
	writeJSON(w, http.StatusOK, out)
}

// ValidSecretName tells whether Key Vault accepts name for a new secret
// (1 to 127 letters, digits and '-'): an out-of-band seed that stands for
// a user's write refuses the others, as the service would.
func ValidSecretName(name string) bool { return validName(name) }
