package awsfake

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"time"
)

// DefaultECRLifetime is how long ECR's authorization tokens last.
const DefaultECRLifetime = 12 * time.Hour

// SetECRTokenLifetime sets how long the ECR tokens issued from now on
// last (zero: ECR's 12 hours), for renewal tests.
func (s *Server) SetECRTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ecrLifetime = d
}

// ECRPasswords are the passwords of the ECR tokens issued, in order.
func (s *Server) ECRPasswords() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ecrPasswords...)
}

// ECRHost is the registry host of an account in the fake's region.
func (s *Server) ECRHost(account string) string {
	return account + ".dkr.ecr." + s.Region + ".amazonaws.com"
}

var registryID = regexp.MustCompile(`^[0-9]{12}$`)

type ecrAuthorization struct {
	AuthorizationToken string  `json:"authorizationToken"`
	ExpiresAt          float64 `json:"expiresAt"`
	ProxyEndpoint      string  `json:"proxyEndpoint"`
}

// ecr answers ECR's GetAuthorizationToken as AWS does: one authorization
// per registry ID asked for (the caller's account when none), each a
// base64 AWS:PASSWORD token with its expiry in epoch seconds and the
// registry's proxy endpoint. The request is decoded strictly.
func (s *Server) ecr(op string, body []byte) (any, *apiError) {
	if op != "GetAuthorizationToken" {
		return nil, errorf(400, "UnknownOperationException", "unknown operation %s", op)
	}
	var in struct {
		RegistryIDs []string `json:"registryIds"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if len(in.RegistryIDs) > 10 {
		return nil, errorf(400, "InvalidParameterException", "registryIds has more than 10 members")
	}
	ids := in.RegistryIDs
	if len(ids) == 0 {
		ids = []string{Account}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	life := s.ecrLifetime
	if life <= 0 {
		life = DefaultECRLifetime
	}
	expires := s.now().Add(life)
	out := make([]ecrAuthorization, 0, len(ids))
	for _, id := range ids {
		if !registryID.MatchString(id) {
			return nil, errorf(400, "InvalidParameterException", "Invalid parameter at 'registryIds' failed to satisfy constraint: 'must satisfy regular expression [0-9]{12}'")
		}
		pass := "ecr-" + randomID(48)
		s.ecrPasswords = append(s.ecrPasswords, pass)
		out = append(out, ecrAuthorization{
			AuthorizationToken: base64.StdEncoding.EncodeToString([]byte("AWS:" + pass)),
			ExpiresAt:          float64(expires.UnixMilli()) / 1000,
			ProxyEndpoint:      fmt.Sprintf("https://%s", s.ECRHost(id)),
		})
	}
	return map[string]any{"authorizationData": out}, nil
}
