// Package awsfake is a strict loopback AWS for tests: Secrets Manager,
// Systems Manager Parameter Store and ECR's GetAuthorizationToken over the
// JSON 1.1 protocol (X-Amz-Target),
// and STS over the query protocol, on one HTTP endpoint. No AWS emulator
// can be installed here, so the tests drive the official SDK against this
// server, which:
//
//   - verifies every SigV4 signature with the SDK's own signer and the
//     credentials it issued: unknown access keys, forged or expired
//     session tokens, a changed body and a request date too far from now
//     are refused with the codes AWS uses;
//   - decodes every request strictly: unknown fields and wrong types are
//     a SerializationException, and the documented limits (20 IDs per
//     BatchGetSecretValue, 10 names per GetParameters, page sizes) a
//     ValidationException;
//   - checks a web identity token by a TokenReview against a Kubernetes
//     API server (Server.ReviewToken), so the token exchange is real;
//   - evaluates a small IAM: a deny list of (principal, action) with the
//     AccessDeniedException message AWS writes;
//   - counts calls by action, and the IDs or names of each batch call,
//     for the batching tests;
//   - can answer after a latency (SetLatency), as a store across a network
//     does, and can answer GetParameters and GetParameter without the
//     Selector field (OmitSelectors), as some emulators do.
//
// It is written by hand because no AWS emulator is available as a Go
// module or a Debian package here; docs/providers.md lists what was
// verified only against it.
package awsfake

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Account is the account ID of every ARN the fake makes.
const Account = "111122223333"

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	Region string

	// ReviewToken checks a web identity token and returns the subject it
	// stands for (system:serviceaccount:ns:name) and its audiences. Nil
	// refuses every web identity.
	ReviewToken func(ctx context.Context, token string) (subject string, audiences []string, err error)

	mu       sync.Mutex
	now      func() time.Time
	keys     map[string]*credential
	roles    map[string]*Role
	denied   map[[2]string]bool
	throttle map[string]bool
	calls    map[string]int
	sizes    map[string][]int
	sessions []Session
	secrets  map[string]*secret
	params   map[string]*parameter
	seq      int
	// latency and jitter delay each answer (SetLatency).
	latency, jitter time.Duration
	// omitSelectors leaves Selector out of parameter answers.
	omitSelectors bool
	// ecrLifetime is how long an ECR token lasts; ecrPasswords are the
	// passwords of the tokens issued, in order.
	ecrLifetime  time.Duration
	ecrPasswords []string
}

// credential is an access key the fake knows: a user's long-lived key or
// temporary credentials it issued (with a session token).
type credential struct {
	secret, token string
	expires       time.Time // zero: never
	principal     string
}

// Role is a role that may be assumed.
type Role struct {
	ARN string
	// WebIdentitySubjects are the subjects whose tokens may be exchanged
	// for the role (AssumeRoleWithWebIdentity), with audience
	// sts.amazonaws.com.
	WebIdentitySubjects []string
	// Principals may assume the role with AssumeRole.
	Principals []string
	// ExternalID, when set, must be passed to AssumeRole.
	ExternalID string
	// Duration of the credentials issued; zero is one hour.
	Duration time.Duration
}

// Session is one role session the fake's STS issued, for tests to inspect.
type Session struct {
	Action, Role, SessionName, Caller, ExternalID string
	Tags                                          map[string]string
}

// New starts a fake for region.
func New(region string) *Server {
	s := &Server{Region: region, now: time.Now, keys: map[string]*credential{}, roles: map[string]*Role{},
		denied: map[[2]string]bool{}, throttle: map[string]bool{}, calls: map[string]int{}, sizes: map[string][]int{},
		secrets: map[string]*secret{}, params: map[string]*parameter{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// SetClock replaces the fake's clock (for expiry tests).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// AddUser makes an IAM user with an access key and returns the key's ID
// and secret.
func (s *Server) AddUser(name string) (id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, secret = "AKIA"+randomID(16), randomID(40)
	s.keys[id] = &credential{secret: secret, principal: UserARN(name)}
	return id, secret
}

// RevokeKey deletes an access key.
func (s *Server) RevokeKey(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, id)
}

// UserARN is the ARN of an IAM user of the fake's account.
func UserARN(name string) string { return "arn:aws:iam::" + Account + ":user/" + name }

// AddRole makes a role that may be assumed.
func (s *Server) AddRole(r Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := r
	s.roles[r.ARN] = &cp
}

// Deny refuses action (such as "secretsmanager:GetSecretValue") to the
// principal, as an IAM policy without that permission would. An
// assumed-role principal is named by its role ARN.
func (s *Server) Deny(principal, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[[2]string{principal, action}] = true
}

// Allow lifts a Deny.
func (s *Server) Allow(principal, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, [2]string{principal, action})
}

// Throttle makes every call of action (such as
// "secretsmanager:GetSecretValue") fail with ThrottlingException, or stops
// doing so.
func (s *Server) Throttle(action string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle[action] = on
}

// SetLatency delays every answer (of each service, refusals included) by
// a time drawn evenly from [least, most], as a store across a network
// does; zero for both answers at once. A request whose client gave up
// stops waiting.
func (s *Server) SetLatency(least, most time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency, s.jitter = least, max(most-least, 0)
}

// OmitSelectors makes GetParameter and GetParameters answer without the
// Selector field of a parameter read at a version or label (AWS sets it
// to ":3" or ":label"), as some emulators do; the version number is
// still given.
func (s *Server) OmitSelectors(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.omitSelectors = on
}

// wait delays an answer by the latency, or until the request ends.
func (s *Server) wait(r *http.Request) {
	s.mu.Lock()
	d := s.latency
	if s.jitter > 0 {
		d += mathrand.N(s.jitter + 1)
	}
	s.mu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// BatchSizes are the numbers of IDs (BatchGetSecretValue) or names
// (GetParameters) of each call of action answered since the last
// ResetCalls, in order.
func (s *Server) BatchSizes(action string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.sizes[action]...)
}

func (s *Server) recordSize(action string, n int) {
	s.sizes[action] = append(s.sizes[action], n)
}

// Calls is how many calls of action were answered (refused ones included),
// such as "secretsmanager:BatchGetSecretValue".
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// ResetCalls clears the call counts.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
	s.sizes = map[string][]int{}
}

// Sessions are the role sessions STS issued, in order.
func (s *Server) Sessions() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Session(nil), s.sessions...)
}

// apiError is an error answer of any of the services.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "reading the body", http.StatusBadRequest)
		return
	}
	s.wait(r)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.serveJSON(w, r, target, body)
		return
	}
	s.serveSTS(w, r, body)
}

// serveJSON answers a JSON 1.1 call of Secrets Manager or SSM.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, target string, body []byte) {
	prefix, op, _ := strings.Cut(target, ".")
	var service, action string
	switch prefix {
	case "secretsmanager":
		service, action = "secretsmanager", "secretsmanager:"+op
	case "AmazonSSM":
		service, action = "ssm", "ssm:"+op
	case "AmazonEC2ContainerRegistry_V20150921":
		service, action = "ecr", "ecr:"+op
	default:
		writeJSONError(w, errorf(400, "UnknownOperationException", "unknown target %q", target))
		return
	}
	s.count(action)
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		writeJSONError(w, errorf(400, "SerializationException", "Content-Type must be application/x-amz-json-1.1"))
		return
	}
	principal, aerr := s.authenticate(r, body, service)
	if aerr == nil {
		aerr = s.authorize(principal, action, s.resourceOf(service, body))
	}
	if aerr != nil {
		writeJSONError(w, aerr)
		return
	}
	var out any
	switch service {
	case "secretsmanager":
		out, aerr = s.secretsManager(op, body, principal)
	case "ecr":
		out, aerr = s.ecr(op, body)
	default:
		out, aerr = s.ssm(op, body, principal)
	}
	if aerr != nil {
		writeJSONError(w, aerr)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", randomID(20))
	_ = json.NewEncoder(w).Encode(out)
}

func writeJSONError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", e.code)
	w.Header().Set("X-Amzn-Requestid", randomID(20))
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.message})
}

func (s *Server) count(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
}

// decode reads a JSON request into in, strictly: an unknown field, a
// value of the wrong type or trailing data is a SerializationException,
// as AWS answers.
func decode(body []byte, in any) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		return errorf(400, "SerializationException", "the request does not match the operation's input: %v", err)
	}
	if dec.More() {
		return errorf(400, "SerializationException", "trailing data after the request")
	}
	return nil
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$`)

// authenticate verifies the request's SigV4 signature by signing the same
// request again with the SDK's signer and the secret of the access key it
// names, and returns the caller's principal.
func (s *Server) authenticate(r *http.Request, body []byte, service string) (string, *apiError) {
	badKey := "UnrecognizedClientException"
	if service == "sts" {
		badKey = "InvalidClientTokenId"
	}
	m := authHeader.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "", errorf(400, "MissingAuthenticationToken", "Request is missing Authentication Token")
	}
	keyID, region, svc, signed, signature := m[1], m[3], m[4], m[5], m[6]
	s.mu.Lock()
	cred, now := s.keys[keyID], s.now()
	s.mu.Unlock()
	if cred == nil {
		return "", errorf(400, badKey, "The security token included in the request is invalid.")
	}
	if svc != service || region != s.Region {
		return "", errorf(400, "InvalidSignatureException", "Credential should be scoped to a valid region and service")
	}
	if cred.token != "" || r.Header.Get("X-Amz-Security-Token") != "" {
		if r.Header.Get("X-Amz-Security-Token") != cred.token {
			return "", errorf(400, badKey, "The security token included in the request is invalid.")
		}
		if !cred.expires.IsZero() && now.After(cred.expires) {
			return "", errorf(400, "ExpiredTokenException", "The security token included in the request is expired")
		}
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "", errorf(400, "IncompleteSignature", "X-Amz-Date is missing or malformed")
	}
	if d := now.Sub(date); d > 5*time.Minute || d < -5*time.Minute {
		return "", errorf(400, "InvalidSignatureException", "Signature expired: the request date is more than 5 minutes from the server's time")
	}
	// The request as it was signed: the same method, path, query and the
	// headers the signature covers.
	u := *r.URL
	u.Path, u.RawPath = canonicalPath(u.Path), ""
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+u.RequestURI(), bytes.NewReader(body))
	again.ContentLength = int64(len(body))
	for _, h := range strings.Split(signed, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		for _, v := range r.Header.Values(h) {
			again.Header.Add(h, v)
		}
	}
	again.Header.Del("Authorization")
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: cred.secret, SessionToken: cred.token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), svc, region, date); err != nil {
		return "", errorf(500, "InternalFailure", "signing: %v", err)
	}
	if m2 := authHeader.FindStringSubmatch(again.Header.Get("Authorization")); m2 == nil || m2[6] != signature || m2[5] != signed {
		return "", errorf(400, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided.")
	}
	return cred.principal, nil
}

// canonicalPath is a request path as SigV4 signs it for every service
// but S3: normalised as RFC 3986 says, with dot segments and repeated
// slashes removed. AWS checks a signature over "/" against a request
// sent to "//", which Vault's aws auth method sends: it joins its STS
// endpoint and the signed path with a slash.
func canonicalPath(p string) string {
	if p == "" {
		return "/"
	}
	out := path.Clean(p)
	if strings.HasSuffix(p, "/") && out != "/" {
		out += "/"
	}
	return out
}

// resourceOf is the ARN of the secret or parameter a request names, as a
// refusal names it, or "*".
func (s *Server) resourceOf(service string, body []byte) string {
	var in struct {
		SecretID string `json:"SecretId"`
		Name     string `json:"Name"`
	}
	_ = json.Unmarshal(body, &in)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case service == "secretsmanager" && in.SecretID != "":
		if sec, e := s.findSecret(in.SecretID); e == nil {
			return sec.arn
		}
		return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s", s.Region, Account, in.SecretID)
	case service == "ssm" && in.Name != "":
		return s.paramARN(in.Name)
	}
	return "*"
}

// authorize applies the deny list and throttling.
func (s *Server) authorize(principal, action, resource string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.throttle[action] {
		return errorf(400, "ThrottlingException", "Rate exceeded")
	}
	if s.denied[[2]string{roleOf(principal), action}] || s.denied[[2]string{principal, action}] {
		return &apiError{status: 400, code: "AccessDeniedException", message: fmt.Sprintf(
			"User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action", principal, action, resource, action)}
	}
	return nil
}

// roleOf is the role ARN of an assumed-role principal, or the principal.
func roleOf(principal string) string {
	rest, ok := strings.CutPrefix(principal, "arn:aws:sts::"+Account+":assumed-role/")
	if !ok {
		return principal
	}
	name, _, _ := strings.Cut(rest, "/")
	return "arn:aws:iam::" + Account + ":role/" + name
}

// serveSTS answers the query protocol of STS.
func (s *Server) serveSTS(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		writeSTSError(w, errorf(400, "InvalidAction", "STS takes a form-encoded POST"))
		return
	}
	action := form.Get("Action")
	s.count("sts:" + action)
	if form.Get("Version") != "2011-06-15" {
		writeSTSError(w, errorf(400, "InvalidAction", "Version must be 2011-06-15"))
		return
	}
	var out any
	var aerr *apiError
	switch action {
	case "AssumeRoleWithWebIdentity":
		// Unsigned: the token is the credential.
		out, aerr = s.assumeRoleWithWebIdentity(r.Context(), form)
	case "AssumeRole", "GetCallerIdentity":
		principal, e := s.authenticate(r, body, "sts")
		if e == nil {
			e = s.authorize(principal, "sts:"+action, "*")
		}
		if e != nil {
			aerr = e
			break
		}
		if action == "AssumeRole" {
			out, aerr = s.assumeRole(form, principal)
		} else {
			out, aerr = s.callerIdentity(form, principal)
		}
	default:
		aerr = errorf(400, "InvalidAction", "unknown action %q", action)
	}
	if aerr != nil {
		writeSTSError(w, aerr)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(out)
}

func writeSTSError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	type errBody struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Error     errBody  `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}{Error: errBody{Type: "Sender", Code: e.code, Message: e.message}, RequestID: randomID(20)})
}

// onlyParams refuses a form with a parameter outside allowed (tags as
// Tags.member.N.Key/Value are matched by prefix).
func onlyParams(form url.Values, allowed ...string) *apiError {
	for k := range form {
		ok := false
		for _, a := range allowed {
			if k == a || (strings.HasSuffix(a, ".") && strings.HasPrefix(k, a)) {
				ok = true
			}
		}
		if !ok {
			return errorf(400, "InvalidParameterValue", "unknown parameter %q", k)
		}
	}
	return nil
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumedRoleUser struct {
	Arn           string `xml:"Arn"`
	AssumedRoleID string `xml:"AssumedRoleId"`
}

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

// issue makes temporary credentials for a role session.
func (s *Server) issue(role *Role, sessionName string) (stsCredentials, assumedRoleUser) {
	d := role.Duration
	if d <= 0 {
		d = time.Hour
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, name, _ := strings.Cut(role.ARN, ":role/")
	principal := "arn:aws:sts::" + Account + ":assumed-role/" + name + "/" + sessionName
	id, secret, token := "ASIA"+randomID(16), randomID(40), "FwoG"+randomID(64)
	expires := s.now().Add(d)
	s.keys[id] = &credential{secret: secret, token: token, expires: expires, principal: principal}
	return stsCredentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token, Expiration: expires.UTC().Format(time.RFC3339)},
		assumedRoleUser{Arn: principal, AssumedRoleID: "AROA" + randomID(16) + ":" + sessionName}
}

var sessionNameRE = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)

func (s *Server) roleFor(form url.Values) (*Role, *apiError) {
	arn := form.Get("RoleArn")
	if len(arn) < 20 {
		return nil, errorf(400, "ValidationError", "RoleArn must be at least 20 characters")
	}
	if !sessionNameRE.MatchString(form.Get("RoleSessionName")) {
		return nil, errorf(400, "ValidationError", "RoleSessionName must match [\\w+=,.@-]{2,64}")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	role := s.roles[arn]
	if role == nil {
		return nil, errorf(403, "AccessDenied", "Not authorized to perform sts:AssumeRole")
	}
	return role, nil
}

func (s *Server) assumeRoleWithWebIdentity(ctx context.Context, form url.Values) (any, *apiError) {
	if e := onlyParams(form, "Action", "Version", "RoleArn", "RoleSessionName", "WebIdentityToken", "DurationSeconds", "Policy", "PolicyArns.", "ProviderId"); e != nil {
		return nil, e
	}
	role, e := s.roleFor(form)
	if e != nil {
		return nil, e
	}
	token := form.Get("WebIdentityToken")
	if len(token) < 4 {
		return nil, errorf(400, "ValidationError", "WebIdentityToken is required")
	}
	if s.ReviewToken == nil {
		return nil, errorf(400, "InvalidIdentityToken", "No OpenID Connect provider found in your account for this token")
	}
	subject, audiences, err := s.ReviewToken(ctx, token)
	if err != nil {
		return nil, errorf(400, "InvalidIdentityToken", "The web identity token could not be verified")
	}
	hasAudience := false
	for _, a := range audiences {
		hasAudience = hasAudience || a == "sts.amazonaws.com"
	}
	if !hasAudience {
		return nil, errorf(400, "InvalidIdentityToken", "Incorrect token audience")
	}
	allowed := false
	for _, sub := range role.WebIdentitySubjects {
		allowed = allowed || sub == subject
	}
	if !allowed {
		return nil, errorf(403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
	}
	creds, user := s.issue(role, form.Get("RoleSessionName"))
	s.mu.Lock()
	s.sessions = append(s.sessions, Session{Action: "AssumeRoleWithWebIdentity", Role: role.ARN, SessionName: form.Get("RoleSessionName"), Caller: subject})
	s.mu.Unlock()
	type result struct {
		Credentials                 stsCredentials  `xml:"Credentials"`
		SubjectFromWebIdentityToken string          `xml:"SubjectFromWebIdentityToken"`
		AssumedRoleUser             assumedRoleUser `xml:"AssumedRoleUser"`
		Audience                    string          `xml:"Audience"`
	}
	return struct {
		XMLName  xml.Name         `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleWithWebIdentityResponse"`
		Result   result           `xml:"AssumeRoleWithWebIdentityResult"`
		Metadata responseMetadata `xml:"ResponseMetadata"`
	}{Result: result{Credentials: creds, SubjectFromWebIdentityToken: subject, AssumedRoleUser: user, Audience: "sts.amazonaws.com"},
		Metadata: responseMetadata{RequestID: randomID(20)}}, nil
}

var tagParam = regexp.MustCompile(`^Tags\.member\.(\d+)\.(Key|Value)$`)

func (s *Server) assumeRole(form url.Values, caller string) (any, *apiError) {
	if e := onlyParams(form, "Action", "Version", "RoleArn", "RoleSessionName", "ExternalId", "DurationSeconds", "Policy", "PolicyArns.", "Tags.", "TransitiveTagKeys.", "SerialNumber", "TokenCode", "SourceIdentity"); e != nil {
		return nil, e
	}
	role, e := s.roleFor(form)
	if e != nil {
		return nil, e
	}
	allowed := false
	for _, p := range role.Principals {
		allowed = allowed || p == caller || p == roleOf(caller)
	}
	if !allowed || (role.ExternalID != "" && form.Get("ExternalId") != role.ExternalID) {
		return nil, &apiError{status: 403, code: "AccessDenied", message: fmt.Sprintf("User: %s is not authorized to perform: sts:AssumeRole on resource: %s", caller, role.ARN)}
	}
	tags := map[string]string{}
	keys := map[string]string{}
	for k := range form {
		if m := tagParam.FindStringSubmatch(k); m != nil {
			if m[2] == "Key" {
				keys[m[1]] = form.Get(k)
			}
		} else if strings.HasPrefix(k, "Tags.") {
			return nil, errorf(400, "InvalidParameterValue", "malformed tag parameter %q", k)
		}
	}
	for n, key := range keys {
		tags[key] = form.Get("Tags.member." + n + ".Value")
	}
	creds, user := s.issue(role, form.Get("RoleSessionName"))
	s.mu.Lock()
	s.sessions = append(s.sessions, Session{Action: "AssumeRole", Role: role.ARN, SessionName: form.Get("RoleSessionName"), Caller: caller, ExternalID: form.Get("ExternalId"), Tags: tags})
	s.mu.Unlock()
	type result struct {
		Credentials     stsCredentials  `xml:"Credentials"`
		AssumedRoleUser assumedRoleUser `xml:"AssumedRoleUser"`
	}
	return struct {
		XMLName  xml.Name         `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleResponse"`
		Result   result           `xml:"AssumeRoleResult"`
		Metadata responseMetadata `xml:"ResponseMetadata"`
	}{Result: result{Credentials: creds, AssumedRoleUser: user}, Metadata: responseMetadata{RequestID: randomID(20)}}, nil
}

func (s *Server) callerIdentity(form url.Values, caller string) (any, *apiError) {
	if e := onlyParams(form, "Action", "Version"); e != nil {
		return nil, e
	}
	type result struct {
		Arn     string `xml:"Arn"`
		UserID  string `xml:"UserId"`
		Account string `xml:"Account"`
	}
	return struct {
		XMLName  xml.Name         `xml:"https://sts.amazonaws.com/doc/2011-06-15/ GetCallerIdentityResponse"`
		Result   result           `xml:"GetCallerIdentityResult"`
		Metadata responseMetadata `xml:"ResponseMetadata"`
	}{Result: result{Arn: caller, UserID: "AIDA" + randomID(16), Account: Account}, Metadata: responseMetadata{RequestID: randomID(20)}}, nil
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}
