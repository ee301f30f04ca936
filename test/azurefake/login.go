package azurefake

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tokenLifetime is the lifetime of an access token the fake issues.
const tokenLifetime = time.Hour

// AssertionAudience is the audience Entra ID requires of a Kubernetes
// token presented as a federated client assertion.
const AssertionAudience = "api://AzureADTokenExchange"

// entraError writes Entra ID's OAuth error shape.
func entraError(w http.ResponseWriter, status int, code, aadsts, description string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": aadsts + ": " + description,
		"error_codes": []string{strings.TrimPrefix(aadsts, "AADSTS")}, "timestamp": time.Now().UTC().Format(time.RFC3339)})
}

// serveLogin answers the Entra ID endpoints of one login host: a tenant's
// OpenID configuration and its token endpoint (client credentials, with a
// client secret or a federated client assertion).
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request, host string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 4 && parts[1] == "v2.0" && parts[2] == ".well-known" && parts[3] == "openid-configuration":
		tenant := parts[0]
		base := "https://" + host + "/" + tenant
		writeJSON(w, http.StatusOK, map[string]any{
			"token_endpoint":                        base + "/oauth2/v2.0/token",
			"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
			"issuer":                                base + "/v2.0",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
			"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
		})
	case r.Method == http.MethodPost && len(parts) == 4 && parts[1] == "oauth2" && parts[2] == "v2.0" && parts[3] == "token":
		s.count("token")
		s.token(w, r, host, parts[0])
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, host, tenant string) {
	if err := r.ParseForm(); err != nil {
		entraError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144", "The request body must contain a form.")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" {
		entraError(w, http.StatusBadRequest, "unsupported_grant_type", "AADSTS70003", "The app requested an unsupported grant type.")
		return
	}
	clientID, scope := f.Get("client_id"), f.Get("scope")
	if clientID == "" {
		entraError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144", "The request body must contain the following parameter: 'client_id'.")
		return
	}
	// MSAL adds the OpenID Connect scopes, which Entra ID ignores in this
	// flow; exactly one resource scope ending in /.default must remain.
	var resources []string
	for _, sc := range strings.Fields(scope) {
		if sc != "openid" && sc != "offline_access" && sc != "profile" {
			resources = append(resources, sc)
		}
	}
	resource, ok := "", false
	if len(resources) == 1 {
		resource, ok = strings.CutSuffix(resources[0], "/.default")
	}
	if !ok {
		entraError(w, http.StatusBadRequest, "invalid_scope", "AADSTS1002012", "The provided value for scope is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier.")
		return
	}
	// Each cloud's Entra ID knows its own cloud's Key Vault only.
	if (host == Public.LoginHost && resource != "https://"+Public.VaultSuffix) || (host == Government.LoginHost && resource != "https://"+Government.VaultSuffix) {
		entraError(w, http.StatusBadRequest, "invalid_resource", "AADSTS500011", "The resource principal named "+resource+" was not found in the tenant named "+tenant+".")
		return
	}
	s.mu.Lock()
	a := s.apps[tenant+"/"+clientID]
	s.mu.Unlock()
	if a == nil {
		entraError(w, http.StatusBadRequest, "unauthorized_client", "AADSTS700016", "Application with identifier '"+clientID+"' was not found in the directory '"+tenant+"'.")
		return
	}
	secret, assertion := f.Get("client_secret"), f.Get("client_assertion")
	switch {
	case secret != "" && assertion != "":
		entraError(w, http.StatusBadRequest, "invalid_request", "AADSTS90014", "Only one client credential may be presented.")
		return
	case secret != "":
		if a.clientSecret == "" || secret != a.clientSecret {
			entraError(w, http.StatusUnauthorized, "invalid_client", "AADSTS7000215", "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '"+clientID+"'.")
			return
		}
	case assertion != "":
		if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			entraError(w, http.StatusBadRequest, "invalid_request", "AADSTS50027", "client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer.")
			return
		}
		if h, ok := certificateAssertion(assertion); ok {
			if code, description := verifyCertificateAssertion(a, h, assertion, "https://"+host+"/"+tenant+"/oauth2/v2.0/token", s.now()); code != "" {
				entraError(w, http.StatusUnauthorized, "invalid_client", code, description)
				return
			}
			break
		}
		if s.VerifyAssertion == nil {
			entraError(w, http.StatusBadRequest, "invalid_client", "AADSTS700211", "No matching federated identity record found for presented assertion issuer.")
			return
		}
		subject, audiences, err := s.VerifyAssertion(r.Context(), assertion)
		if err != nil {
			entraError(w, http.StatusBadRequest, "invalid_client", "AADSTS700211", "No matching federated identity record found for presented assertion issuer.")
			return
		}
		if !slices.Contains(audiences, AssertionAudience) {
			entraError(w, http.StatusBadRequest, "invalid_client", "AADSTS700212", "No matching federated identity record found for presented assertion audience '"+strings.Join(audiences, ",")+"'.")
			return
		}
		if a.subject == "" || subject != a.subject {
			entraError(w, http.StatusBadRequest, "invalid_client", "AADSTS700213", "No matching federated identity record found for presented assertion subject '"+subject+"'.")
			return
		}
	default:
		entraError(w, http.StatusBadRequest, "invalid_client", "AADSTS7000218", "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
		return
	}
	tok := s.issue(a, resource)
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": int(tokenLifetime.Seconds()),
		"ext_expires_in": int(tokenLifetime.Seconds()), "access_token": tok})
}

func (s *Server) issue(a *app, resource string) string {
	tok := "fake-at-" + newID()
	s.mu.Lock()
	s.tokens[tok] = token{principal: a.clientID, tenant: a.tenant, resource: resource, perms: a.perms, expires: s.now().Add(tokenLifetime)}
	s.mu.Unlock()
	return tok
}

// serveIMDS answers the managed identity token endpoint of the instance
// metadata service.
func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request) {
	s.count("imds")
	q := r.URL.Query()
	if r.Method != http.MethodGet || r.URL.Path != "/metadata/identity/oauth2/token" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Metadata") != "true" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "Required metadata header not specified"})
		return
	}
	if q.Get("api-version") != "2018-02-01" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "Invalid api-version"})
		return
	}
	resource := q.Get("resource")
	if resource != "https://"+Public.VaultSuffix && resource != "https://"+Government.VaultSuffix {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_resource", "error_description": "AADSTS500011: The resource principal named " + url.QueryEscape(resource) + " was not found"})
		return
	}
	s.mu.Lock()
	ref, ok := s.msi[q.Get("client_id")]
	var a *app
	if ok {
		a = s.apps[ref]
	}
	s.mu.Unlock()
	if a == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "Identity not found"})
		return
	}
	tok := s.issue(a, resource)
	exp := s.now().Add(tokenLifetime)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "client_id": a.clientID, "expires_in": "3599",
		"expires_on": strconv.FormatInt(exp.Unix(), 10), "ext_expires_in": "3599",
		"not_before": strconv.FormatInt(s.now().Unix(), 10), "resource": resource, "token_type": "Bearer"})
}
