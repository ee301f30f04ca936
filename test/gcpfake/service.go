package gcpfake

import (
	"context"
	"crypto/rsa"
	"fmt"
	"hash/crc32"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

type principalKey struct{}

type callInfo struct {
	principal string
	authority string
	params    string
}

// authorize checks the bearer token of every call, answers a throttled
// call, and records who called which endpoint.
func (s *Server) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	md, _ := metadata.FromIncomingContext(ctx)
	ci := callInfo{authority: first(md, ":authority"), params: first(md, "x-goog-request-params")}
	s.mu.Lock()
	s.authorities = append(s.authorities, ci.authority)
	if s.throttle > 0 {
		s.throttle--
		s.calls["throttled"]++
		delay := s.throttleDelay
		s.mu.Unlock()
		st := status.New(codes.ResourceExhausted, "Quota exceeded for quota metric 'Access requests' and limit 'Access requests per minute per project'")
		if delay > 0 {
			withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			st = withInfo
		}
		return nil, st.Err()
	}
	s.mu.Unlock()
	principal, err := s.principal(strings.TrimPrefix(first(md, "authorization"), "Bearer "))
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
	}
	ci.principal = principal
	s.mu.Lock()
	s.calls[method]++
	s.mu.Unlock()
	return handler(context.WithValue(ctx, principalKey{}, ci), req)
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// principal verifies a bearer token: an access token the fake issued, or
// a self-signed JWT of a service-account key.
func (s *Server) principal(tok string) (string, error) {
	if tok == "" {
		return "", fmt.Errorf("no token")
	}
	s.mu.Lock()
	at, ok := s.tokens[tok]
	s.mu.Unlock()
	if ok {
		if !s.now().Before(at.expires) {
			return "", fmt.Errorf("expired")
		}
		return at.principal, nil
	}
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(parsed.Headers) != 1 {
		return "", fmt.Errorf("not a JWT")
	}
	var unverified struct {
		jwt.Claims
		Scope string `json:"scope"`
	}
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return "", err
	}
	s.mu.Lock()
	acct := s.accounts[unverified.Issuer]
	s.mu.Unlock()
	if acct == nil || parsed.Headers[0].KeyID != acct.keyID {
		return "", fmt.Errorf("unknown key")
	}
	var claims struct {
		jwt.Claims
		Scope string `json:"scope"`
	}
	if err := parsed.Claims(acct.key.Public().(*rsa.PublicKey), &claims); err != nil {
		return "", err
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: acct.email, Subject: acct.email, Time: s.now()}, time.Minute); err != nil {
		return "", err
	}
	if !claims.Audience.Contains("https://secretmanager.googleapis.com/") &&
		!slices.Contains(strings.Fields(claims.Scope), "https://www.googleapis.com/auth/cloud-platform") {
		return "", fmt.Errorf("neither the service's audience nor the cloud-platform scope")
	}
	return "serviceAccount:" + acct.email, nil
}

var (
	secretNameRE = regexp.MustCompile(`^projects/([^/]+)/(?:locations/([^/]+)/)?secrets/([^/]+)$`)
	versionRE    = regexp.MustCompile(`^(projects/[^/]+/(?:locations/[^/]+/)?secrets/[^/]+)/versions/([^/]+)$`)
	secretIDRE   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,255}$`)
	labelKeyRE   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// check verifies the routing header, the endpoint and the permission of
// a call on the resource name, and returns the secret's resource name.
func (s *Server) check(ctx context.Context, field, name, perm string) error {
	ci, _ := ctx.Value(principalKey{}).(callInfo)
	params, err := url.ParseQuery(ci.params)
	if err != nil || params.Get(field) != name {
		return status.Errorf(codes.InvalidArgument, "the x-goog-request-params header must carry %s=%s", field, url.QueryEscape(name))
	}
	secretName := name
	if m := versionRE.FindStringSubmatch(name); m != nil {
		secretName = m[1]
	}
	m := secretNameRE.FindStringSubmatch(secretName)
	if m == nil && field == "parent" {
		m = regexp.MustCompile(`^projects/([^/]+)(?:/locations/([^/]+))?()$`).FindStringSubmatch(name)
	}
	if m == nil {
		return status.Errorf(codes.InvalidArgument, "Invalid resource field value in the request.")
	}
	if m[1] != s.project {
		return status.Errorf(codes.PermissionDenied, "Permission '%s' denied for resource '%s' (or it may not exist).", perm, name)
	}
	want := "secretmanager.googleapis.com"
	if m[2] != "" {
		want = "secretmanager." + m[2] + ".rep.googleapis.com"
	}
	if host, _, _ := strings.Cut(ci.authority, ":"); host != want {
		return status.Errorf(codes.InvalidArgument, "resource %s must be reached through %s", name, want)
	}
	s.mu.Lock()
	allowed := s.perms[ci.principal][perm]
	s.mu.Unlock()
	if !allowed {
		return status.Errorf(codes.PermissionDenied, "Permission '%s' denied for resource '%s' (or it may not exist).", perm, name)
	}
	return nil
}

// resolve finds a version of a secret by number, latest or alias; the
// caller holds s.mu.
func (s *Server) resolve(name string) (*secret, *version, string, error) {
	m := versionRE.FindStringSubmatch(name)
	if m == nil {
		return nil, nil, "", status.Errorf(codes.InvalidArgument, "Invalid resource field value in the request.")
	}
	sec := s.secrets[m[1]]
	if sec == nil || len(sec.versions) == 0 {
		return nil, nil, "", status.Errorf(codes.NotFound, "Secret [%s] not found or has no versions.", m[1])
	}
	var n int64
	switch id := m[2]; {
	case id == "latest":
		n = int64(len(sec.versions))
	case sec.aliases[id] > 0:
		n = sec.aliases[id]
	default:
		v, err := strconv.ParseInt(id, 10, 64)
		if err != nil || v < 1 {
			return nil, nil, "", status.Errorf(codes.NotFound, "Secret Version [%s] not found.", name)
		}
		n = v
	}
	if n > int64(len(sec.versions)) {
		return nil, nil, "", status.Errorf(codes.NotFound, "Secret Version [%s] not found.", name)
	}
	return sec, sec.versions[n-1], m[1] + "/versions/" + strconv.FormatInt(n, 10), nil
}

func (s *Server) versionProto(name string, v *version) *secretmanagerpb.SecretVersion {
	return &secretmanagerpb.SecretVersion{Name: name, CreateTime: timestamppb.New(v.created), State: v.state,
		Etag: `"` + strconv.FormatInt(v.created.UnixNano(), 16) + `"`}
}

func (s *Server) secretProto(name string, sec *secret) *secretmanagerpb.Secret {
	out := &secretmanagerpb.Secret{Name: name, CreateTime: timestamppb.New(sec.created), Labels: sec.labels,
		Annotations: sec.annotations, Etag: `"` + strconv.Itoa(sec.etag) + `"`, VersionAliases: sec.aliases}
	if !strings.Contains(name, "/locations/") {
		out.Replication = &secretmanagerpb.Replication{Replication: &secretmanagerpb.Replication_Automatic_{Automatic: &secretmanagerpb.Replication_Automatic{}}}
	}
	return out
}

// AccessSecretVersion returns a version's payload.
func (s *Server) AccessSecretVersion(ctx context.Context, req *secretmanagerpb.AccessSecretVersionRequest) (*secretmanagerpb.AccessSecretVersionResponse, error) {
	if err := s.check(ctx, "name", req.GetName(), "secretmanager.versions.access"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, v, name, err := s.resolve(req.GetName())
	if err != nil {
		return nil, err
	}
	if v.state != secretmanagerpb.SecretVersion_ENABLED {
		return nil, status.Errorf(codes.FailedPrecondition, "Secret Version [%s] is in %s state.", name, v.state)
	}
	crc := int64(crc32.Checksum(v.data, crc32.MakeTable(crc32.Castagnoli)))
	return &secretmanagerpb.AccessSecretVersionResponse{Name: name, Payload: &secretmanagerpb.SecretPayload{Data: v.data, DataCrc32C: &crc}}, nil
}

// GetSecretVersion returns a version's metadata, without its payload.
func (s *Server) GetSecretVersion(ctx context.Context, req *secretmanagerpb.GetSecretVersionRequest) (*secretmanagerpb.SecretVersion, error) {
	if err := s.check(ctx, "name", req.GetName(), "secretmanager.versions.get"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, v, name, err := s.resolve(req.GetName())
	if err != nil {
		return nil, err
	}
	return s.versionProto(name, v), nil
}

// GetSecret returns a secret's metadata.
func (s *Server) GetSecret(ctx context.Context, req *secretmanagerpb.GetSecretRequest) (*secretmanagerpb.Secret, error) {
	if err := s.check(ctx, "name", req.GetName(), "secretmanager.secrets.get"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[req.GetName()]
	if sec == nil {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found.", req.GetName())
	}
	return s.secretProto(req.GetName(), sec), nil
}

func validLabels(labels map[string]string) error {
	if len(labels) > 64 {
		return status.Error(codes.InvalidArgument, "A secret may have at most 64 labels.")
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return status.Errorf(codes.InvalidArgument, "Invalid label: keys and values must be lowercase letters, digits, '_' and '-', keys starting with a letter, at most 63 characters.")
		}
	}
	return nil
}

// CreateSecret creates a secret without versions.
func (s *Server) CreateSecret(ctx context.Context, req *secretmanagerpb.CreateSecretRequest) (*secretmanagerpb.Secret, error) {
	if err := s.check(ctx, "parent", req.GetParent(), "secretmanager.secrets.create"); err != nil {
		return nil, err
	}
	if !secretIDRE.MatchString(req.GetSecretId()) {
		return nil, status.Error(codes.InvalidArgument, "Secret ID must be 1 to 255 letters, digits, '_' and '-'.")
	}
	sec := req.GetSecret()
	regional := strings.Contains(req.GetParent(), "/locations/")
	switch {
	case sec == nil:
		return nil, status.Error(codes.InvalidArgument, "Secret is required.")
	case !regional && sec.GetReplication() == nil:
		return nil, status.Error(codes.InvalidArgument, "Secret.replication is required.")
	case regional && sec.GetReplication() != nil:
		return nil, status.Error(codes.InvalidArgument, "Regional secrets do not take a replication policy.")
	}
	if err := validLabels(sec.GetLabels()); err != nil {
		return nil, err
	}
	name := req.GetParent() + "/secrets/" + req.GetSecretId()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets[name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Secret [%s] already exists.", name)
	}
	created := &secret{labels: sec.GetLabels(), annotations: sec.GetAnnotations(), created: s.now(), aliases: map[string]int64{}}
	s.secrets[name] = created
	return s.secretProto(name, created), nil
}

// UpdateSecret changes a secret's labels or annotations.
func (s *Server) UpdateSecret(ctx context.Context, req *secretmanagerpb.UpdateSecretRequest) (*secretmanagerpb.Secret, error) {
	name := req.GetSecret().GetName()
	if err := s.check(ctx, "secret.name", name, "secretmanager.secrets.update"); err != nil {
		return nil, err
	}
	mask := req.GetUpdateMask()
	if mask == nil || len(mask.GetPaths()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "update_mask is required.")
	}
	if err := validLabels(req.GetSecret().GetLabels()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found.", name)
	}
	if e := req.GetSecret().GetEtag(); e != "" && e != `"`+strconv.Itoa(sec.etag)+`"` {
		return nil, status.Error(codes.Aborted, "The etag provided in the request does not match the current etag of the secret.")
	}
	for _, p := range mask.GetPaths() {
		switch p {
		case "labels":
			sec.labels = req.GetSecret().GetLabels()
		case "annotations":
			sec.annotations = req.GetSecret().GetAnnotations()
		default:
			return nil, status.Errorf(codes.InvalidArgument, "update_mask path %q is not supported by the fake.", p)
		}
	}
	sec.etag++
	return s.secretProto(name, sec), nil
}

// AddSecretVersion adds a version with a payload.
func (s *Server) AddSecretVersion(ctx context.Context, req *secretmanagerpb.AddSecretVersionRequest) (*secretmanagerpb.SecretVersion, error) {
	if err := s.check(ctx, "parent", req.GetParent(), "secretmanager.versions.add"); err != nil {
		return nil, err
	}
	p := req.GetPayload()
	if p == nil {
		return nil, status.Error(codes.InvalidArgument, "Payload is required.")
	}
	if len(p.GetData()) > 64*1024 {
		return nil, status.Error(codes.InvalidArgument, "Secret payload data length must be at most 65536 bytes.")
	}
	if p.DataCrc32C != nil && *p.DataCrc32C != int64(crc32.Checksum(p.GetData(), crc32.MakeTable(crc32.Castagnoli))) {
		return nil, status.Error(codes.InvalidArgument, "Checksum mismatch: data_crc32c does not match the payload.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[req.GetParent()]
	if sec == nil {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found.", req.GetParent())
	}
	v := &version{data: p.GetData(), state: secretmanagerpb.SecretVersion_ENABLED, created: s.now()}
	sec.versions = append(sec.versions, v)
	return s.versionProto(req.GetParent()+"/versions/"+strconv.Itoa(len(sec.versions)), v), nil
}

// DeleteSecret deletes a secret and its versions, at once.
func (s *Server) DeleteSecret(ctx context.Context, req *secretmanagerpb.DeleteSecretRequest) (*emptypb.Empty, error) {
	if err := s.check(ctx, "name", req.GetName(), "secretmanager.secrets.delete"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[req.GetName()]
	if sec == nil {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found.", req.GetName())
	}
	if e := req.GetEtag(); e != "" && e != `"`+strconv.Itoa(sec.etag)+`"` {
		return nil, status.Error(codes.Aborted, "The etag provided in the request does not match the current etag of the secret.")
	}
	delete(s.secrets, req.GetName())
	return &emptypb.Empty{}, nil
}

// listFilterRE is one term of the filters this fake takes: a label equal
// to a value, as Secret Manager's filter syntax writes it.
var listFilterRE = regexp.MustCompile(`^labels\.([^=:\s]+)=("?)([^"\s]*)("?)$`)

// maxListPageSize is the largest page Secret Manager returns.
const maxListPageSize = 25000

// ListSecrets lists a parent's secrets in name order, a page at a time.
// Of the filter syntax this fake takes labels.KEY=VALUE terms joined by
// AND (or a space), and refuses the rest.
func (s *Server) ListSecrets(ctx context.Context, req *secretmanagerpb.ListSecretsRequest) (*secretmanagerpb.ListSecretsResponse, error) {
	if err := s.check(ctx, "parent", req.GetParent(), "secretmanager.secrets.list"); err != nil {
		return nil, err
	}
	if req.GetPageSize() < 0 || req.GetPageSize() > maxListPageSize {
		return nil, status.Errorf(codes.InvalidArgument, "page_size must be between 0 and %d.", maxListPageSize)
	}
	want := map[string]string{}
	for _, term := range strings.Fields(strings.ReplaceAll(req.GetFilter(), " AND ", " ")) {
		m := listFilterRE.FindStringSubmatch(term)
		if m == nil || m[2] != m[4] {
			return nil, status.Errorf(codes.InvalidArgument, "Invalid filter: this fake takes labels.KEY=VALUE terms joined by AND.")
		}
		want[m[1]] = m[3]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, sec := range s.secrets {
		if !strings.HasPrefix(name, req.GetParent()+"/secrets/") || strings.Contains(strings.TrimPrefix(name, req.GetParent()+"/secrets/"), "/") {
			continue
		}
		match := true
		for k, v := range want {
			if got, ok := sec.labels[k]; !ok || got != v {
				match = false
			}
		}
		if match {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start := 0
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "after-"))
		if err != nil || !strings.HasPrefix(t, "after-") || n < 0 || n > len(names) {
			return nil, status.Errorf(codes.InvalidArgument, "Invalid page token.")
		}
		start = n
	}
	size := int(req.GetPageSize())
	if size == 0 {
		size = maxListPageSize
	}
	end := min(len(names), start+size)
	out := &secretmanagerpb.ListSecretsResponse{TotalSize: int32(len(names))}
	for _, name := range names[start:end] {
		out.Secrets = append(out.Secrets, s.secretProto(name, s.secrets[name]))
	}
	if end < len(names) {
		out.NextPageToken = "after-" + strconv.Itoa(end)
	}
	return out, nil
}

// ValidSecretID tells whether Secret Manager accepts id for a new secret
// (1 to 255 letters, digits, '_' and '-'): an out-of-band seed that stands
// for a user's write refuses the others, as the service would.
func ValidSecretID(id string) bool { return secretIDRE.MatchString(id) }
