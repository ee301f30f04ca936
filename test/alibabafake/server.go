// Package alibabafake is a strict loopback stand-in for Alibaba Cloud KMS
// Secrets Manager, for tests driven through Alibaba's official Go SDK. No
// emulator of KMS can be installed here, so this speaks its RPC API over
// HTTP as the SDK does (version 2016-01-20, the action in x-acs-action,
// parameters in the query) and refuses what the service refuses: requests
// whose ACS3-HMAC-SHA256 signature does not verify (checked with the SDK's
// own signing function, openapi-util's GetAuthorization), a stale date, a
// reused nonce, a body that does not match its digest, unknown or disabled
// AccessKeys, actions the key's policy does not allow, unknown actions and
// unknown or repeated parameters. It serves the actions Watchword uses:
// GetSecretValue, ListSecretVersionIds, DescribeSecret, CreateSecret,
// PutSecretValue, TagResource and DeleteSecret (without a recovery
// window). It also serves STS's
// AssumeRoleWithOIDC (version 2015-04-01, anonymous, parameters in a form
// body): the OIDC token is checked by VerifyOIDCToken, and the temporary
// credentials it issues must then be sent with their security token.
package alibabafake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openapiutil "github.com/alibabacloud-go/openapi-util/service"
	"github.com/alibabacloud-go/tea/tea"
)

// APIVersion is the KMS API version the fake serves.
const APIVersion = "2016-01-20"

const algorithm = "ACS3-HMAC-SHA256"

// The version stages KMS manages itself.
const (
	Current  = "ACSCurrent"
	Previous = "ACSPrevious"
)

// params lists the parameters of each action; true marks the required.
var params = map[string]map[string]bool{
	"GetSecretValue":       {"SecretName": true, "VersionId": false, "VersionStage": false, "FetchExtendedConfig": false, "DryRun": false},
	"ListSecretVersionIds": {"SecretName": true, "IncludeDeprecated": false, "PageNumber": false, "PageSize": false},
	"DescribeSecret":       {"SecretName": true, "FetchTags": false},
	"ListSecrets":          {"FetchTags": false, "PageNumber": false, "PageSize": false, "Filters": false},
	"CreateSecret": {"SecretName": true, "SecretData": true, "VersionId": true, "SecretDataType": false, "EncryptionKeyId": false,
		"Description": false, "Tags": false, "SecretType": false, "DKMSInstanceId": false, "Policy": false, "ExtendedConfig": false,
		"EnableAutomaticRotation": false, "RotationInterval": false},
	"PutSecretValue": {"SecretName": true, "SecretData": true, "VersionId": true, "SecretDataType": false, "VersionStages": false},
	"TagResource":    {"Tags": true, "SecretName": false, "KeyId": false, "CertificateId": false},
	"DeleteSecret":   {"SecretName": true, "ForceDeleteWithoutRecovery": false, "RecoveryWindowInDays": false},
}

// Server is a fake KMS endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	keys     map[string]*accessKey
	secrets  map[string]*secret
	nonces   map[string]bool
	calls    map[string]int
	throttle int
	// Skew shifts the fake's clock, to test the check of x-acs-date.
	skew  time.Duration
	roles map[string]*oidcRole
	// CredentialLifetime is how long STS's credentials last (one hour
	// unless set before the first exchange).
	CredentialLifetime time.Duration

	// VerifyOIDCToken checks an OIDC token given to AssumeRoleWithOIDC
	// and returns its subject and audiences, as the RAM OIDC provider does
	// with the issuer's keys. Nil refuses every token.
	VerifyOIDCToken func(ctx context.Context, token string) (subject string, audiences []string, err error)
}

// Audience is the audience STS requires of an OIDC token.
const Audience = "sts.aliyuncs.com"

// AddOIDCRole adds a RAM role whose trust policy lets the OIDC provider's
// token of subject assume it, with a policy allowing actions.
func (s *Server) AddOIDCRole(roleARN, providerARN, subject string, actions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[roleARN] = &oidcRole{provider: providerARN, subject: subject, actions: actions}
}

type accessKey struct {
	secret   string
	actions  map[string]bool
	disabled bool
	// token and expires, of temporary credentials issued by STS.
	token   string
	expires time.Time
}

type oidcRole struct {
	provider, subject string
	actions           []string
}

type secret struct {
	tags     map[string]string
	binary   bool
	versions []*version
	serial   int
}

type version struct {
	id      string
	data    []byte
	stages  []string
	created time.Time
}

// New starts a fake on loopback, stopped when the test ends.
func New(t testing.TB) *Server {
	s := &Server{keys: map[string]*accessKey{}, secrets: map[string]*secret{}, nonces: map[string]bool{}, calls: map[string]int{},
		roles: map[string]*oidcRole{}, CredentialLifetime: time.Hour}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Endpoint is the URL the provider's endpoint field takes.
func (s *Server) Endpoint() string { return s.srv.URL }

// AddKey adds an AccessKey pair allowed the given actions ("kms:*" for
// all), as a RAM policy would.
func (s *Server) AddKey(id, secret string, actions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &accessKey{secret: secret, actions: map[string]bool{}}
	for _, a := range actions {
		k.actions[strings.TrimPrefix(a, "kms:")] = true
	}
	s.keys[id] = k
}

// DisableKey disables an AccessKey, as the console does.
func (s *Server) DisableKey(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[id].disabled = true
}

// PutValue adds a version of a text secret, creating the secret, as
// PutSecretValue does: the new version takes ACSCurrent, and the version
// that had it takes ACSPrevious. It returns the new version's ID.
func (s *Server) PutValue(name string, data []byte) string {
	return s.put(name, data, false)
}

// PutBinary adds a version of a binary secret.
func (s *Server) PutBinary(name string, data []byte) string {
	return s.put(name, data, true)
}

func (s *Server) put(name string, data []byte, binary bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		sec = &secret{binary: binary, tags: map[string]string{}}
		s.secrets[name] = sec
	}
	sec.serial++
	v := &version{id: "v" + strconv.Itoa(sec.serial), data: slices.Clone(data), created: time.Now().UTC()}
	for _, old := range sec.versions {
		old.stages = slices.DeleteFunc(old.stages, func(st string) bool { return st == Previous })
	}
	for _, old := range sec.versions {
		if slices.Contains(old.stages, Current) {
			old.stages = slices.DeleteFunc(old.stages, func(st string) bool { return st == Current })
			old.stages = append(old.stages, Previous)
		}
	}
	v.stages = []string{Current}
	sec.versions = append(sec.versions, v)
	return v.id
}

// SetStage moves a custom stage to a version (UpdateSecretVersionStage).
func (s *Server) SetStage(name, stage, versionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.secrets[name].versions {
		v.stages = slices.DeleteFunc(v.stages, func(st string) bool { return st == stage })
		if v.id == versionID {
			v.stages = append(v.stages, stage)
		}
	}
}

// Throttle makes the next n calls answer Throttling.User.
func (s *Server) Throttle(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
}

// Skew shifts the fake's clock by d.
func (s *Server) Skew(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew = d
}

// Calls counts the calls of an action that passed the signature and
// policy checks (throttled or not); "refused" counts the requests refused
// by those checks.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

type apiError struct {
	status  int
	code    string
	message string
}

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	reqID := fmt.Sprintf("%08X-FAKE-%d", time.Now().UnixNano()&0xffffffff, time.Now().Nanosecond())
	body, aerr := s.handle(r)
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	if aerr != nil {
		w.WriteHeader(aerr.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"RequestId": reqID, "HostId": r.Host, "Code": aerr.code, "Message": aerr.message,
			"Recommend": "https://api.aliyun.com/troubleshoot?q=" + aerr.code})
		return
	}
	body["RequestId"] = reqID
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) handle(r *http.Request) (map[string]any, *apiError) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, fail(400, "InvalidParameter", "the request body cannot be read")
	}
	if r.Header.Get("x-acs-action") == "AssumeRoleWithOIDC" {
		return s.assumeRoleWithOIDC(r, raw)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	action, query, aerr := s.authenticate(r, raw)
	if aerr != nil {
		s.calls["refused"]++
		return nil, aerr
	}
	s.calls[action]++
	if s.throttle > 0 {
		s.throttle--
		return nil, fail(400, "Throttling.User", "Request was denied due to user flow control.")
	}
	switch action {
	case "GetSecretValue":
		return s.getSecretValue(query)
	case "ListSecretVersionIds":
		return s.listSecretVersionIDs(query)
	case "DescribeSecret":
		return s.describeSecret(query)
	case "ListSecrets":
		return s.listSecrets(query)
	case "CreateSecret":
		return s.createSecret(query)
	case "PutSecretValue":
		return s.putSecretValue(query)
	case "TagResource":
		return s.tagResource(query)
	case "DeleteSecret":
		return s.deleteSecret(query)
	}
	return nil, fail(404, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
}

// authenticate checks the request's form and signature and the key's
// right to the action, and returns the action and its parameters.
func (s *Server) authenticate(r *http.Request, body []byte) (string, map[string]string, *apiError) {
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		return "", nil, fail(404, "InvalidAction.NotFound", "the RPC API is served by POST on /")
	}
	h := func(name string) string { return r.Header.Get(name) }
	action := h("x-acs-action")
	if h("x-acs-version") != APIVersion {
		return "", nil, fail(400, "InvalidVersion", "Specified parameter Version is not valid.")
	}
	if _, known := params[action]; !known {
		return "", nil, fail(404, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
	}
	date, err := time.Parse("2006-01-02T15:04:05Z", h("x-acs-date"))
	if err != nil {
		return "", nil, fail(400, "InvalidTimeStamp.Format", "Specified time stamp or date value is not well formatted.")
	}
	if now := time.Now().Add(s.skew); date.Before(now.Add(-15*time.Minute)) || date.After(now.Add(15*time.Minute)) {
		return "", nil, fail(400, "InvalidTimeStamp.Expired", "Specified time stamp or date value is expired.")
	}
	nonce := h("x-acs-signature-nonce")
	if nonce == "" {
		return "", nil, fail(400, "MissingSignatureNonce", "SignatureNonce is mandatory for this action.")
	}
	if s.nonces[nonce] {
		return "", nil, fail(400, "SignatureNonceUsed", "Specified signature nonce was used already.")
	}
	sum := sha256.Sum256(body)
	if h("x-acs-content-sha256") != hex.EncodeToString(sum[:]) {
		return "", nil, fail(400, "InvalidParameter.ContentSHA256", "the x-acs-content-sha256 header does not match the body")
	}
	cred, signed, signature, ok := parseAuthorization(h("Authorization"))
	if !ok {
		return "", nil, fail(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards.")
	}
	for _, need := range []string{"host", "x-acs-action", "x-acs-version", "x-acs-date", "x-acs-signature-nonce", "x-acs-content-sha256"} {
		if !slices.Contains(signed, need) {
			return "", nil, fail(400, "IncompleteSignature", "The header %s is not signed.", need)
		}
	}
	key := s.keys[cred]
	if key == nil {
		return "", nil, fail(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
	}
	if key.disabled {
		return "", nil, fail(400, "InvalidAccessKeyId.Inactive", "Specified access key is disabled.")
	}
	if key.token != "" {
		if !slices.Contains(signed, "x-acs-security-token") || subtle.ConstantTimeCompare([]byte(h("x-acs-security-token")), []byte(key.token)) != 1 {
			return "", nil, fail(400, "InvalidSecurityToken.Mismatch", "Specified SecurityToken mismatch with the AccessKey.")
		}
		if time.Now().Add(s.skew).After(key.expires) {
			return "", nil, fail(400, "InvalidSecurityToken.Expired", "Specified SecurityToken is expired.")
		}
	}
	// The query: each parameter once.
	query := map[string]string{}
	teaQuery := map[string]*string{}
	for k, vs := range r.URL.Query() {
		if len(vs) != 1 {
			return "", nil, fail(400, "InvalidParameter", "The parameter %s is given more than once.", k)
		}
		query[k], teaQuery[k] = vs[0], tea.String(vs[0])
	}
	// The signed headers, as the client listed them, are signed again
	// with the SDK's own function and the key's secret.
	headers := map[string]*string{}
	for _, name := range signed {
		v := r.Header.Get(name)
		if name == "host" {
			v = r.Host
		}
		headers[name] = tea.String(v)
	}
	req := &tea.Request{Method: tea.String(r.Method), Pathname: tea.String(r.URL.Path), Query: teaQuery, Headers: headers}
	want := tea.StringValue(openapiutil.GetAuthorization(req, tea.String(algorithm), tea.String(h("x-acs-content-sha256")), tea.String(cred), tea.String(key.secret)))
	_, _, wantSig, _ := parseAuthorization(want)
	if subtle.ConstantTimeCompare([]byte(wantSig), []byte(signature)) != 1 {
		return "", nil, fail(400, "SignatureDoesNotMatch", "Specified signature is not matched with our calculation.")
	}
	s.nonces[nonce] = true
	for k := range query {
		if _, known := params[action][k]; !known {
			return "", nil, fail(400, "InvalidParameter", "The parameter %s is not valid for %s.", k, action)
		}
	}
	for k, required := range params[action] {
		if required && query[k] == "" {
			return "", nil, fail(400, "MissingParameter", "The input parameter %s that is mandatory for processing this request is not supplied.", k)
		}
	}
	if !key.actions["*"] && !key.actions[action] {
		return "", nil, fail(403, "Forbidden.RAM", "User not authorized to operate on the specified resource, or this API does not support RAM.")
	}
	return action, query, nil
}

// parseAuthorization splits "ACS3-HMAC-SHA256 Credential=ID,
// SignedHeaders=a;b,Signature=HEX".
func parseAuthorization(v string) (cred string, signed []string, signature string, ok bool) {
	rest, found := strings.CutPrefix(v, algorithm+" ")
	if !found {
		return "", nil, "", false
	}
	for _, part := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = strings.Split(val, ";")
		case "Signature":
			signature = val
		}
	}
	return cred, signed, signature, cred != "" && len(signed) > 0 && signature != ""
}

func stagesJSON(v *version) map[string]any {
	return map[string]any{"VersionStage": slices.Clone(v.stages)}
}

func (s *Server) getSecretValue(q map[string]string) (map[string]any, *apiError) {
	sec := s.secrets[q["SecretName"]]
	if sec == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	if d := q["DryRun"]; d != "" && d != "false" && d != "true" {
		return nil, fail(400, "InvalidParameter", "DryRun must be true or false.")
	}
	stage, id := q["VersionStage"], q["VersionId"]
	if stage == "" && id == "" {
		stage = Current
	}
	var found *version
	for _, v := range sec.versions {
		if (id == "" || v.id == id) && (stage == "" || slices.Contains(v.stages, stage)) {
			found = v
		}
	}
	if found == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	data, dataType := string(found.data), "text"
	if sec.binary {
		data, dataType = base64.StdEncoding.EncodeToString(found.data), "binary"
	}
	return map[string]any{"SecretName": q["SecretName"], "SecretType": "Generic", "VersionId": found.id, "CreateTime": found.created.Format(time.RFC3339),
		"SecretData": data, "SecretDataType": dataType, "VersionStages": stagesJSON(found)}, nil
}

func (s *Server) listSecretVersionIDs(q map[string]string) (map[string]any, *apiError) {
	sec := s.secrets[q["SecretName"]]
	if sec == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	number, size := 1, 20
	var err error
	if v := q["PageNumber"]; v != "" {
		if number, err = strconv.Atoi(v); err != nil || number < 1 {
			return nil, fail(400, "InvalidParameter", "PageNumber must be a positive integer.")
		}
	}
	if v := q["PageSize"]; v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 100 {
			return nil, fail(400, "InvalidParameter", "PageSize must be from 1 to 100.")
		}
	}
	deprecated := q["IncludeDeprecated"]
	if deprecated != "" && deprecated != "true" && deprecated != "false" {
		return nil, fail(400, "InvalidParameter", "IncludeDeprecated must be true or false.")
	}
	var all []map[string]any
	for _, v := range sec.versions {
		if len(v.stages) == 0 && deprecated != "true" {
			continue
		}
		all = append(all, map[string]any{"VersionId": v.id, "CreateTime": v.created.Format(time.RFC3339), "VersionStages": stagesJSON(v)})
	}
	total := len(all)
	lo, hi := min((number-1)*size, total), min(number*size, total)
	return map[string]any{"SecretName": q["SecretName"], "PageNumber": number, "PageSize": size, "TotalCount": total,
		"VersionIds": map[string]any{"VersionId": all[lo:hi]}}, nil
}

// assumeRoleWithOIDC is STS's AssumeRoleWithOIDC: anonymous, its
// parameters in a form body.
func (s *Server) assumeRoleWithOIDC(r *http.Request, body []byte) (map[string]any, *apiError) {
	h := r.Header.Get
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.URL.RawQuery != "" {
		return nil, fail(400, "InvalidParameter", "AssumeRoleWithOIDC takes its parameters in a form body, by POST on /")
	}
	if h("x-acs-version") != "2015-04-01" {
		return nil, fail(400, "InvalidVersion", "Specified parameter Version is not valid.")
	}
	sum := sha256.Sum256(body)
	if h("x-acs-content-sha256") != hex.EncodeToString(sum[:]) || !strings.HasPrefix(h("Content-Type"), "application/x-www-form-urlencoded") {
		return nil, fail(400, "InvalidParameter", "the body is not a form matching x-acs-content-sha256")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fail(400, "InvalidParameter", "the body is not a form")
	}
	allowed := map[string]bool{"RoleArn": true, "OIDCProviderArn": true, "OIDCToken": true, "RoleSessionName": true, "DurationSeconds": false, "Policy": false}
	for k, vs := range form {
		if _, known := allowed[k]; !known || len(vs) != 1 {
			return nil, fail(400, "InvalidParameter", "The parameter %s is not valid or is repeated.", k)
		}
	}
	for k, required := range allowed {
		if required && form.Get(k) == "" {
			return nil, fail(400, "MissingParameter", "The input parameter %s that is mandatory for processing this request is not supplied.", k)
		}
	}
	s.mu.Lock()
	s.calls["AssumeRoleWithOIDC"]++
	role, verify := s.roles[form.Get("RoleArn")], s.VerifyOIDCToken
	s.mu.Unlock()
	if role == nil {
		return nil, fail(404, "EntityNotExist.Role", "The specified Role not exists.")
	}
	if role.provider != form.Get("OIDCProviderArn") {
		return nil, fail(404, "EntityNotExist.OIDCProvider", "The specified OIDC provider does not exist.")
	}
	if verify == nil {
		return nil, fail(400, "AuthenticationFail.OIDCToken.Invalid", "The OIDC token is invalid.")
	}
	subject, audiences, err := verify(r.Context(), form.Get("OIDCToken"))
	if err != nil || !slices.Contains(audiences, Audience) {
		return nil, fail(400, "AuthenticationFail.OIDCToken.Invalid", "The OIDC token is invalid: its signature, issuer or audience is not trusted.")
	}
	if subject != role.subject {
		return nil, fail(403, "AuthenticationFail.NoPermission", "You are not authorized to assume the role by the trust policy.")
	}
	id, secret, token := "STS.NK"+randomHex(8), randomHex(16), "CAIS"+randomHex(32)
	s.mu.Lock()
	expires := time.Now().Add(s.CredentialLifetime).UTC().Truncate(time.Second)
	s.keys[id] = &accessKey{secret: secret, actions: map[string]bool{}, token: token, expires: expires}
	for _, a := range role.actions {
		s.keys[id].actions[strings.TrimPrefix(a, "kms:")] = true
	}
	s.mu.Unlock()
	return map[string]any{
		"AssumedRoleUser": map[string]any{"Arn": form.Get("RoleArn") + "/" + form.Get("RoleSessionName"), "AssumedRoleId": "3" + randomHex(8) + ":" + form.Get("RoleSessionName")},
		"Credentials":     map[string]any{"AccessKeyId": id, "AccessKeySecret": secret, "SecurityToken": token, "Expiration": expires.Format("2006-01-02T15:04:05Z")},
		"OIDCTokenInfo":   map[string]any{"Subject": subject, "ClientIds": strings.Join(audiences, ",")},
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Tags returns a secret's tags and whether it exists.
func (s *Server) Tags(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range sec.tags {
		out[k] = v
	}
	return out, true
}

// Value returns the data of a secret's ACSCurrent version.
func (s *Server) Value(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := s.secrets[name]; sec != nil {
		for _, v := range sec.versions {
			if slices.Contains(v.stages, Current) {
				return slices.Clone(v.data), true
			}
		}
	}
	return nil, false
}

func parseTags(raw string) (map[string]string, *apiError) {
	var tags []struct {
		TagKey   *string `json:"TagKey"`
		TagValue *string `json:"TagValue"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tags); err != nil || len(tags) > 20 {
		return nil, fail(400, "InvalidParameter.Tags", "Tags must be a JSON array of at most 20 {TagKey, TagValue}.")
	}
	out := map[string]string{}
	for _, t := range tags {
		if t.TagKey == nil || t.TagValue == nil || *t.TagKey == "" || len(*t.TagKey) > 128 || len(*t.TagValue) > 128 || strings.HasPrefix(*t.TagKey, "acs:") || strings.HasPrefix(*t.TagKey, "aliyun") {
			return nil, fail(400, "InvalidParameter.Tags", "A tag needs a key of 1 to 128 characters, not starting with acs: or aliyun, and a value of at most 128.")
		}
		out[*t.TagKey] = *t.TagValue
	}
	return out, nil
}

// listSecrets lists the secrets in name order, a page at a time, with
// their tags when FetchTags is true; never a value. The fake takes no
// Filters.
func (s *Server) listSecrets(q map[string]string) (map[string]any, *apiError) {
	if q["Filters"] != "" {
		return nil, fail(400, "InvalidParameter", "this fake does not filter ListSecrets; leave Filters out")
	}
	number, size := 1, 10
	var err error
	if v := q["PageNumber"]; v != "" {
		if number, err = strconv.Atoi(v); err != nil || number < 1 {
			return nil, fail(400, "InvalidParameter", "PageNumber must be a positive integer.")
		}
	}
	if v := q["PageSize"]; v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 100 {
			return nil, fail(400, "InvalidParameter", "PageSize must be from 1 to 100.")
		}
	}
	fetch := q["FetchTags"]
	if fetch != "" && fetch != "true" && fetch != "false" {
		return nil, fail(400, "InvalidParameter", "FetchTags must be true or false.")
	}
	names := make([]string, 0, len(s.secrets))
	for n := range s.secrets {
		names = append(names, n)
	}
	slices.Sort(names)
	total := len(names)
	lo, hi := min((number-1)*size, total), min(number*size, total)
	list := []map[string]any{}
	for _, n := range names[lo:hi] {
		sec := s.secrets[n]
		created := sec.versions[0].created.Format(time.RFC3339)
		item := map[string]any{"SecretName": n, "SecretType": "Generic", "CreateTime": created, "UpdateTime": sec.versions[len(sec.versions)-1].created.Format(time.RFC3339)}
		if fetch == "true" {
			tags := []map[string]string{}
			for k, v := range sec.tags {
				tags = append(tags, map[string]string{"TagKey": k, "TagValue": v})
			}
			item["Tags"] = map[string]any{"Tag": tags}
		}
		list = append(list, item)
	}
	return map[string]any{"PageNumber": number, "PageSize": size, "TotalCount": total, "SecretList": map[string]any{"Secret": list}}, nil
}

func (s *Server) describeSecret(q map[string]string) (map[string]any, *apiError) {
	sec := s.secrets[q["SecretName"]]
	if sec == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	out := map[string]any{"SecretName": q["SecretName"], "SecretType": "Generic", "Arn": "acs:kms:cn-hangzhou:1234567890123456:secret/" + q["SecretName"]}
	if q["FetchTags"] == "true" {
		var tags []map[string]string
		for k, v := range sec.tags {
			tags = append(tags, map[string]string{"TagKey": k, "TagValue": v})
		}
		out["Tags"] = map[string]any{"Tag": tags}
	}
	return out, nil
}

func dataType(q map[string]string) (bool, *apiError) {
	switch q["SecretDataType"] {
	case "", "text":
		return false, nil
	case "binary":
		return true, nil
	}
	return false, fail(400, "InvalidParameter", "SecretDataType must be text or binary.")
}

// secretNameRE is what CreateSecret accepts as a name.
var secretNameRE = regexp.MustCompile(`^[a-zA-Z0-9_/+=.@-]{1,192}$`)

// ValidSecretName tells whether KMS accepts name for a new secret (1 to
// 192 letters, digits and _/+=.@-): an out-of-band seed that stands for a
// user's write refuses the others, as the service would.
func ValidSecretName(name string) bool { return secretNameRE.MatchString(name) }

func (s *Server) createSecret(q map[string]string) (map[string]any, *apiError) {
	name := q["SecretName"]
	if !ValidSecretName(name) {
		return nil, fail(400, "InvalidParameter", "The parameter SecretName is invalid.")
	}
	if s.secrets[name] != nil {
		return nil, fail(400, "Rejected.ResourceExist", "The resource already exists.")
	}
	binary, aerr := dataType(q)
	if aerr != nil {
		return nil, aerr
	}
	tags := map[string]string{}
	if q["Tags"] != "" {
		if tags, aerr = parseTags(q["Tags"]); aerr != nil {
			return nil, aerr
		}
	}
	data := []byte(q["SecretData"])
	if binary {
		dec, err := base64.StdEncoding.DecodeString(q["SecretData"])
		if err != nil {
			return nil, fail(400, "InvalidParameter", "SecretData of a binary secret must be base64.")
		}
		data = dec
	}
	v := &version{id: q["VersionId"], data: data, stages: []string{Current}, created: time.Now().UTC()}
	s.secrets[name] = &secret{tags: tags, binary: binary, versions: []*version{v}}
	return map[string]any{"SecretName": name, "VersionId": v.id, "Arn": "acs:kms:cn-hangzhou:1234567890123456:secret/" + name}, nil
}

func (s *Server) putSecretValue(q map[string]string) (map[string]any, *apiError) {
	sec := s.secrets[q["SecretName"]]
	if sec == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	if q["VersionStages"] != "" {
		return nil, fail(400, "InvalidParameter", "the fake moves ACSCurrent only; VersionStages is not modelled")
	}
	if binary, aerr := dataType(q); aerr != nil || binary != sec.binary {
		return nil, fail(400, "InvalidParameter", "SecretDataType must match the secret's.")
	}
	for _, v := range sec.versions {
		if v.id == q["VersionId"] {
			return nil, fail(400, "Rejected.ResourceExist", "The version already exists.")
		}
	}
	for _, old := range sec.versions {
		old.stages = slices.DeleteFunc(old.stages, func(st string) bool { return st == Previous })
	}
	for _, old := range sec.versions {
		if slices.Contains(old.stages, Current) {
			old.stages = slices.DeleteFunc(old.stages, func(st string) bool { return st == Current })
			old.stages = append(old.stages, Previous)
		}
	}
	v := &version{id: q["VersionId"], data: []byte(q["SecretData"]), stages: []string{Current}, created: time.Now().UTC()}
	sec.versions = append(sec.versions, v)
	return map[string]any{"SecretName": q["SecretName"], "VersionId": v.id, "VersionStages": stagesJSON(v)}, nil
}

func (s *Server) tagResource(q map[string]string) (map[string]any, *apiError) {
	if q["KeyId"] != "" || q["CertificateId"] != "" || q["SecretName"] == "" {
		return nil, fail(400, "InvalidParameter", "the fake tags secrets only: give SecretName alone")
	}
	sec := s.secrets[q["SecretName"]]
	if sec == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	tags, aerr := parseTags(q["Tags"])
	if aerr != nil {
		return nil, aerr
	}
	for k, v := range tags {
		sec.tags[k] = v
	}
	return map[string]any{}, nil
}

func (s *Server) deleteSecret(q map[string]string) (map[string]any, *apiError) {
	if s.secrets[q["SecretName"]] == nil {
		return nil, fail(404, "Forbidden.ResourceNotFound", "The resource not exists.")
	}
	if q["ForceDeleteWithoutRecovery"] != "true" {
		return nil, fail(400, "InvalidParameter", "the fake models only ForceDeleteWithoutRecovery=true (no recovery window)")
	}
	delete(s.secrets, q["SecretName"])
	return map[string]any{"SecretName": q["SecretName"]}, nil
}
