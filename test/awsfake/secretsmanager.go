package awsfake

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// secret is one Secrets Manager secret.
type secret struct {
	name, arn string
	versions  map[string]*smVersion
	tags      []Tag
	kmsKeyID  string
	created   time.Time
}

type smVersion struct {
	text    *string
	binary  []byte
	stages  []string
	created time.Time
	seq     int
}

// Tag is a resource tag, as both services spell it in JSON.
type Tag struct {
	Key   *string `json:"Key"`
	Value *string `json:"Value"`
}

var secretNameRE = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)

// find is the secret a SecretId names (name or ARN); s.mu is held.
func (s *Server) findSecret(id string) (*secret, *apiError) {
	if id == "" {
		return nil, errorf(400, "ValidationException", "SecretId is required")
	}
	if sec, ok := s.secrets[id]; ok {
		return sec, nil
	}
	for _, sec := range s.secrets {
		if sec.arn == id {
			return sec, nil
		}
	}
	return nil, errorf(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
}

// PutSecretString writes a secret out of band, as a user of the console
// would: a new secret (without tags) or a new AWSCURRENT version.
func (s *Server) PutSecretString(name, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := text
	return s.putVersion(name, &t, nil, "", nil)
}

// PutSecretBinary writes a binary secret out of band.
func (s *Server) PutSecretBinary(name string, b []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putVersion(name, nil, b, "", nil)
}

// SecretTags returns a secret's tags.
func (s *Server) SecretTags(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if sec := s.secrets[name]; sec != nil {
		for _, t := range sec.tags {
			out[deref(t.Key)] = deref(t.Value)
		}
	}
	return out
}

// putVersion adds a version labelled AWSCURRENT (and moves AWSPREVIOUS),
// creating the secret if needed; s.mu is held.
func (s *Server) putVersion(name string, text *string, binary []byte, id string, stages []string) string {
	sec := s.secrets[name]
	now := s.now()
	if sec == nil {
		sec = &secret{name: name, arn: fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", s.Region, Account, name, randomID(6)), versions: map[string]*smVersion{}, created: now}
		s.secrets[name] = sec
	}
	if id == "" {
		id = newUUID()
	}
	if len(stages) == 0 {
		stages = []string{"AWSCURRENT"}
	}
	s.seq++
	v := &smVersion{text: text, binary: binary, created: now, seq: s.seq}
	for _, st := range stages {
		s.moveStage(sec, st, id)
	}
	v.stages = append(v.stages, stages...)
	sec.versions[id] = v
	return id
}

// moveStage takes stage off the version that has it (AWSCURRENT's old
// version becomes AWSPREVIOUS); s.mu is held.
func (s *Server) moveStage(sec *secret, stage, to string) {
	for oid, ov := range sec.versions {
		if oid == to || !slices.Contains(ov.stages, stage) {
			continue
		}
		ov.stages = slices.DeleteFunc(ov.stages, func(x string) bool { return x == stage })
		if stage == "AWSCURRENT" {
			for _, o2 := range sec.versions {
				o2.stages = slices.DeleteFunc(o2.stages, func(x string) bool { return x == "AWSPREVIOUS" })
			}
			ov.stages = append(ov.stages, "AWSPREVIOUS")
		}
	}
}

func newUUID() string {
	b := []byte(strings.ToLower(randomHex(32)))
	return fmt.Sprintf("%s-%s-%s-%s-%s", b[0:8], b[8:12], b[12:16], b[16:20], b[20:32])
}

func randomHex(n int) string {
	const hexd = "0123456789abcdef"
	r := randomID(n)
	out := make([]byte, n)
	for i := range r {
		out[i] = hexd[int(r[i])%16]
	}
	return string(out)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

var versionIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{32,64}$`)

type secretValue struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionID     string   `json:"VersionId"`
	SecretString  *string  `json:"SecretString,omitempty"`
	SecretBinary  []byte   `json:"SecretBinary,omitempty"`
	VersionStages []string `json:"VersionStages"`
	CreatedDate   float64  `json:"CreatedDate"`
}

// value reads a version by ID or stage; s.mu is held.
func (s *Server) secretValue(sec *secret, versionID, stage string) (secretValue, *apiError) {
	if versionID != "" && !versionIDRE.MatchString(versionID) {
		return secretValue{}, errorf(400, "ValidationException", "VersionId must be 32 to 64 characters")
	}
	if versionID == "" && stage == "" {
		stage = "AWSCURRENT"
	}
	for id, v := range sec.versions {
		if (versionID == "" || id == versionID) && (stage == "" || slices.Contains(v.stages, stage)) {
			return secretValue{ARN: sec.arn, Name: sec.name, VersionID: id, SecretString: v.text, SecretBinary: v.binary,
				VersionStages: append([]string(nil), v.stages...), CreatedDate: epoch(v.created)}, nil
		}
	}
	return secretValue{}, errorf(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for VersionId or staging label.")
}

func (s *Server) secretsManager(op string, body []byte, _ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case "GetSecretValue":
		var in struct {
			SecretID     string `json:"SecretId"`
			VersionID    string `json:"VersionId"`
			VersionStage string `json:"VersionStage"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		return s.secretValue(sec, in.VersionID, in.VersionStage)
	case "BatchGetSecretValue":
		var in struct {
			SecretIDList []string `json:"SecretIdList"`
			Filters      []struct {
				Key    string   `json:"Key"`
				Values []string `json:"Values"`
			} `json:"Filters"`
			MaxResults *int   `json:"MaxResults"`
			NextToken  string `json:"NextToken"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		s.recordSize("secretsmanager:BatchGetSecretValue", len(in.SecretIDList))
		switch {
		case len(in.SecretIDList) == 0:
			return nil, errorf(400, "InvalidParameterException", "Either SecretIdList or Filters must be provided (this fake supports SecretIdList)")
		case len(in.SecretIDList) > 20:
			return nil, errorf(400, "ValidationException", "1 validation error detected: Value at 'secretIdList' failed to satisfy constraint: Member must have length less than or equal to 20")
		case len(in.Filters) > 0 || in.MaxResults != nil:
			return nil, errorf(400, "InvalidParameterException", "MaxResults and Filters cannot be used with SecretIdList")
		}
		type apiErr struct {
			SecretID  string `json:"SecretId"`
			ErrorCode string `json:"ErrorCode"`
			Message   string `json:"Message"`
		}
		out := struct {
			SecretValues []secretValue `json:"SecretValues"`
			Errors       []apiErr      `json:"Errors"`
		}{SecretValues: []secretValue{}, Errors: []apiErr{}}
		for _, id := range in.SecretIDList {
			sec, e := s.findSecret(id)
			var v secretValue
			if e == nil {
				v, e = s.secretValue(sec, "", "")
			}
			if e != nil {
				out.Errors = append(out.Errors, apiErr{SecretID: id, ErrorCode: e.code, Message: e.message})
				continue
			}
			out.SecretValues = append(out.SecretValues, v)
		}
		return out, nil
	case "DescribeSecret":
		var in struct {
			SecretID string `json:"SecretId"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		stages := map[string][]string{}
		for id, v := range sec.versions {
			if len(v.stages) > 0 {
				stages[id] = append([]string{}, v.stages...)
			}
		}
		tags := sec.tags
		if tags == nil {
			tags = []Tag{}
		}
		out := map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionIdsToStages": stages, "Tags": tags, "CreatedDate": epoch(sec.created)}
		if sec.kmsKeyID != "" {
			out["KmsKeyId"] = sec.kmsKeyID
		}
		return out, nil
	case "ListSecrets":
		var in struct {
			MaxResults             *int       `json:"MaxResults"`
			NextToken              string     `json:"NextToken"`
			IncludePlannedDeletion bool       `json:"IncludePlannedDeletion"`
			SortOrder              string     `json:"SortOrder"`
			Filters                []smFilter `json:"Filters"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 100) {
			return nil, errorf(400, "ValidationException", "MaxResults must be between 1 and 100")
		}
		if e := checkFilters(in.Filters); e != nil {
			return nil, e
		}
		names := make([]string, 0, len(s.secrets))
		for n, sec := range s.secrets {
			if sec.matches(in.Filters) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		start, _ := strconv.Atoi(in.NextToken)
		limit := 100
		if in.MaxResults != nil {
			limit = *in.MaxResults
		}
		list := []map[string]any{}
		end := min(len(names), start+limit)
		for _, n := range names[min(start, len(names)):end] {
			sec := s.secrets[n]
			stages := map[string][]string{}
			for id, v := range sec.versions {
				if len(v.stages) > 0 {
					stages[id] = append([]string{}, v.stages...)
				}
			}
			entry := map[string]any{"ARN": sec.arn, "Name": n, "SecretVersionsToStages": stages, "CreatedDate": epoch(sec.created)}
			if len(sec.tags) > 0 {
				entry["Tags"] = sec.tags
			}
			list = append(list, entry)
		}
		out := map[string]any{"SecretList": list}
		if end < len(names) {
			out["NextToken"] = strconv.Itoa(end)
		}
		return out, nil
	case "CreateSecret":
		var in struct {
			Name               string  `json:"Name"`
			SecretString       *string `json:"SecretString"`
			SecretBinary       []byte  `json:"SecretBinary"`
			KmsKeyID           string  `json:"KmsKeyId"`
			Tags               []Tag   `json:"Tags"`
			ClientRequestToken string  `json:"ClientRequestToken"`
			Description        string  `json:"Description"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if !secretNameRE.MatchString(in.Name) {
			return nil, errorf(400, "ValidationException", "Name must be 1 to 512 of A-Za-z0-9/_+=.@-")
		}
		if e := checkValue(in.SecretString, in.SecretBinary, in.ClientRequestToken); e != nil {
			return nil, e
		}
		if _, exists := s.secrets[in.Name]; exists {
			return nil, errorf(400, "ResourceExistsException", "The operation failed because the secret %s already exists.", in.Name)
		}
		if e := checkTags(in.Tags); e != nil {
			return nil, e
		}
		id := s.putVersion(in.Name, in.SecretString, in.SecretBinary, in.ClientRequestToken, nil)
		sec := s.secrets[in.Name]
		sec.tags, sec.kmsKeyID = in.Tags, in.KmsKeyID
		return map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": id}, nil
	case "PutSecretValue":
		var in struct {
			SecretID           string   `json:"SecretId"`
			SecretString       *string  `json:"SecretString"`
			SecretBinary       []byte   `json:"SecretBinary"`
			ClientRequestToken string   `json:"ClientRequestToken"`
			VersionStages      []string `json:"VersionStages"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		if e := checkValue(in.SecretString, in.SecretBinary, in.ClientRequestToken); e != nil {
			return nil, e
		}
		if v, exists := sec.versions[in.ClientRequestToken]; exists && in.ClientRequestToken != "" {
			// Idempotency: the same token with the same value is the
			// same request; with another value it is an error.
			if deref(v.text) != deref(in.SecretString) || string(v.binary) != string(in.SecretBinary) {
				return nil, errorf(400, "ResourceExistsException", "A version with this ClientRequestToken already exists with a different value")
			}
			return map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": in.ClientRequestToken, "VersionStages": v.stages}, nil
		}
		id := s.putVersion(sec.name, in.SecretString, in.SecretBinary, in.ClientRequestToken, in.VersionStages)
		return map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": id, "VersionStages": sec.versions[id].stages}, nil
	case "UpdateSecretVersionStage":
		var in struct {
			SecretID            string `json:"SecretId"`
			VersionStage        string `json:"VersionStage"`
			MoveToVersionID     string `json:"MoveToVersionId"`
			RemoveFromVersionID string `json:"RemoveFromVersionId"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		if in.MoveToVersionID != "" {
			v, ok := sec.versions[in.MoveToVersionID]
			if !ok {
				return nil, errorf(400, "InvalidParameterException", "no version %s", in.MoveToVersionID)
			}
			s.moveStage(sec, in.VersionStage, in.MoveToVersionID)
			if !slices.Contains(v.stages, in.VersionStage) {
				v.stages = append(v.stages, in.VersionStage)
			}
		} else if v, ok := sec.versions[in.RemoveFromVersionID]; ok {
			v.stages = slices.DeleteFunc(v.stages, func(x string) bool { return x == in.VersionStage })
		}
		return map[string]any{"ARN": sec.arn, "Name": sec.name}, nil
	case "TagResource":
		var in struct {
			SecretID string `json:"SecretId"`
			Tags     []Tag  `json:"Tags"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		if e := checkTags(in.Tags); e != nil {
			return nil, e
		}
		for _, t := range in.Tags {
			sec.tags = slices.DeleteFunc(sec.tags, func(o Tag) bool { return deref(o.Key) == deref(t.Key) })
			sec.tags = append(sec.tags, t)
		}
		return struct{}{}, nil
	case "DeleteSecret":
		var in struct {
			SecretID                   string `json:"SecretId"`
			ForceDeleteWithoutRecovery bool   `json:"ForceDeleteWithoutRecovery"`
			RecoveryWindowInDays       *int   `json:"RecoveryWindowInDays"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if !in.ForceDeleteWithoutRecovery {
			return nil, errorf(400, "InvalidParameterException", "this fake deletes only with ForceDeleteWithoutRecovery")
		}
		sec, e := s.findSecret(in.SecretID)
		if e != nil {
			return nil, e
		}
		delete(s.secrets, sec.name)
		return map[string]any{"ARN": sec.arn, "Name": sec.name, "DeletionDate": epoch(s.now())}, nil
	}
	return nil, errorf(400, "UnknownOperationException", "this fake does not serve secretsmanager.%s", op)
}

func checkValue(text *string, binary []byte, token string) *apiError {
	if (text == nil) == (binary == nil) {
		return errorf(400, "InvalidParameterException", "You must provide either SecretString or SecretBinary, not both")
	}
	if token != "" && !versionIDRE.MatchString(token) {
		return errorf(400, "ValidationException", "ClientRequestToken must be 32 to 64 characters")
	}
	if len(deref(text))+len(binary) > 65536 {
		return errorf(400, "ValidationException", "the secret value is larger than 65536 bytes")
	}
	return nil
}

func checkTags(tags []Tag) *apiError {
	if len(tags) > 50 {
		return errorf(400, "ValidationException", "at most 50 tags")
	}
	for _, t := range tags {
		if t.Key == nil || len(*t.Key) == 0 || len(*t.Key) > 128 || len(deref(t.Value)) > 256 {
			return errorf(400, "ValidationException", "a tag key is 1 to 128 characters and a value at most 256")
		}
	}
	return nil
}

// SecretARN is a secret's ARN, or "".
func (s *Server) SecretARN(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := s.secrets[name]; sec != nil {
		return sec.arn
	}
	return ""
}

// SecretKMSKey is the KMS key a secret was created with.
func (s *Server) SecretKMSKey(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := s.secrets[name]; sec != nil {
		return sec.kmsKeyID
	}
	return ""
}

// smFilter is a filter of ListSecrets.
type smFilter struct {
	Key    string   `json:"Key"`
	Values []string `json:"Values"`
}

// filterValueRE is the pattern AWS documents for a filter's values.
var filterValueRE = regexp.MustCompile(`^!?[a-zA-Z0-9 :_@/+=.\-!]*$`)

// checkFilters validates ListSecrets filters as AWS does; this fake
// filters by name, tag-key and tag-value, and refuses the other keys.
func checkFilters(fs []smFilter) *apiError {
	if len(fs) > 10 {
		return errorf(400, "ValidationException", "at most 10 filters")
	}
	for _, f := range fs {
		switch f.Key {
		case "name", "tag-key", "tag-value":
		case "description", "primary-region", "owning-service", "all":
			return errorf(400, "ValidationException", "this fake filters by name, tag-key and tag-value only")
		default:
			return errorf(400, "ValidationException", "Filter Key must be one of description, name, tag-key, tag-value, primary-region, owning-service, all")
		}
		if len(f.Values) < 1 || len(f.Values) > 10 {
			return errorf(400, "ValidationException", "a filter takes 1 to 10 values")
		}
		for _, v := range f.Values {
			if len(v) > 512 || !filterValueRE.MatchString(v) {
				return errorf(400, "ValidationException", "a filter value must match the documented pattern")
			}
		}
	}
	return nil
}

// matches tells whether the secret passes every filter (filters are ANDed,
// the values of one filter ORed; a value starting with '!' negates its
// prefix match; matches are case-sensitive prefixes); s.mu is held.
func (sec *secret) matches(fs []smFilter) bool {
	for _, f := range fs {
		var attrs []string
		switch f.Key {
		case "name":
			attrs = []string{sec.name}
		case "tag-key", "tag-value":
			for _, t := range sec.tags {
				if f.Key == "tag-key" {
					attrs = append(attrs, deref(t.Key))
				} else {
					attrs = append(attrs, deref(t.Value))
				}
			}
		}
		if !slices.ContainsFunc(f.Values, func(v string) bool { return valueMatches(v, attrs) }) {
			return false
		}
	}
	return true
}

func valueMatches(v string, attrs []string) bool {
	if neg, ok := strings.CutPrefix(v, "!"); ok {
		return !slices.ContainsFunc(attrs, func(a string) bool { return strings.HasPrefix(a, neg) })
	}
	return slices.ContainsFunc(attrs, func(a string) bool { return strings.HasPrefix(a, v) })
}

// ValidSecretName tells whether Secrets Manager accepts name for a new
// secret (letters, digits and /_+=.@-, at most 512 characters): an
// out-of-band seed that stands for a user's write refuses the others, as
// the service would.
func ValidSecretName(name string) bool { return secretNameRE.MatchString(name) }
