package awsfake

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// parameter is one Parameter Store parameter with its history.
type parameter struct {
	name     string
	versions []*psVersion // versions[i] is version i+1
	tags     []Tag
}

type psVersion struct {
	value, typ, keyID string
	labels            []string
	modified          time.Time
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)

// PutParameter writes a parameter out of band, as a user would: a new
// parameter (without tags) or its next version. typ is String,
// StringList or SecureString.
func (s *Server) PutParameter(name, value, typ string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putParam(name, value, typ, "")
}

// LabelParameter puts a label on a version of a parameter, moving it off
// any other version.
func (s *Server) LabelParameter(name string, version int, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.params[name]
	for _, v := range p.versions {
		v.labels = slices.DeleteFunc(v.labels, func(x string) bool { return x == label })
	}
	p.versions[version-1].labels = append(p.versions[version-1].labels, label)
}

// ParameterTags returns a parameter's tags.
func (s *Server) ParameterTags(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if p := s.params[name]; p != nil {
		for _, t := range p.tags {
			out[deref(t.Key)] = deref(t.Value)
		}
	}
	return out
}

func (s *Server) putParam(name, value, typ, keyID string) int {
	p := s.params[name]
	if p == nil {
		p = &parameter{name: name}
		s.params[name] = p
	}
	p.versions = append(p.versions, &psVersion{value: value, typ: typ, keyID: keyID, modified: s.now()})
	return len(p.versions)
}

func (s *Server) paramARN(name string) string {
	return fmt.Sprintf("arn:aws:ssm:%s:%s:parameter/%s", s.Region, Account, strings.TrimPrefix(name, "/"))
}

// resolveParam finds the parameter and version a name with an optional
// selector (name:3, name:label) or an ARN names; s.mu is held.
func (s *Server) resolveParam(ref string) (*parameter, int, string, *apiError) {
	name, sel := ref, ""
	if rest, ok := strings.CutPrefix(ref, "arn:aws:ssm:"+s.Region+":"+Account+":parameter/"); ok {
		name = rest
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			name, sel = rest[:i], rest[i+1:]
		}
		if _, ok := s.params["/"+name]; ok {
			name = "/" + name
		}
	} else if i := strings.LastIndex(ref, ":"); i >= 0 {
		name, sel = ref[:i], ref[i+1:]
	}
	if !paramNameRE.MatchString(name) || len(name) > 2048 {
		return nil, 0, "", errorf(400, "ValidationException", "parameter name is not valid")
	}
	p := s.params[name]
	if p == nil {
		return nil, 0, "", errorf(400, "ParameterNotFound", "")
	}
	if sel == "" {
		return p, len(p.versions), "", nil
	}
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 1 || n > len(p.versions) {
			return nil, 0, "", errorf(400, "ParameterVersionNotFound", "Systems Manager could not find version %d of %s.", n, name)
		}
		return p, n, ":" + sel, nil
	}
	for i, v := range p.versions {
		if slices.Contains(v.labels, sel) {
			return p, i + 1, ":" + sel, nil
		}
	}
	return nil, 0, "", errorf(400, "ParameterVersionLabelNotFound", "Systems Manager could not find label %s of %s.", sel, name)
}

type paramOut struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int     `json:"Version"`
	Selector         string  `json:"Selector,omitempty"`
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
}

func (s *Server) paramValue(p *parameter, n int, sel string, decrypt bool) paramOut {
	v := p.versions[n-1]
	value := v.value
	if v.typ == "SecureString" && !decrypt {
		// What AWS returns undecrypted is KMS ciphertext; an opaque
		// encoding stands for it.
		value = base64.StdEncoding.EncodeToString([]byte("kms:" + strings.Repeat("x", len(v.value))))
	}
	if s.omitSelectors {
		sel = ""
	}
	return paramOut{Name: p.name, Type: v.typ, Value: value, Version: n, Selector: sel, ARN: s.paramARN(p.name), DataType: "text", LastModifiedDate: epoch(v.modified)}
}

type paramFilter struct {
	Key    string   `json:"Key"`
	Option string   `json:"Option"`
	Values []string `json:"Values"`
}

func (s *Server) ssm(op string, body []byte, _ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case "GetParameter":
		var in struct {
			Name           string `json:"Name"`
			WithDecryption bool   `json:"WithDecryption"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		p, n, sel, e := s.resolveParam(in.Name)
		if e != nil {
			return nil, e
		}
		return map[string]any{"Parameter": s.paramValue(p, n, sel, in.WithDecryption)}, nil
	case "GetParameters":
		var in struct {
			Names          []string `json:"Names"`
			WithDecryption bool     `json:"WithDecryption"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		s.recordSize("ssm:GetParameters", len(in.Names))
		if len(in.Names) < 1 || len(in.Names) > 10 {
			return nil, errorf(400, "ValidationException", "1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10")
		}
		out := struct {
			Parameters        []paramOut `json:"Parameters"`
			InvalidParameters []string   `json:"InvalidParameters"`
		}{Parameters: []paramOut{}, InvalidParameters: []string{}}
		for _, name := range in.Names {
			p, n, sel, e := s.resolveParam(name)
			if e != nil {
				if e.code == "ValidationException" {
					return nil, e
				}
				out.InvalidParameters = append(out.InvalidParameters, name)
				continue
			}
			out.Parameters = append(out.Parameters, s.paramValue(p, n, sel, in.WithDecryption))
		}
		return out, nil
	case "GetParametersByPath":
		var in struct {
			Path             string        `json:"Path"`
			Recursive        bool          `json:"Recursive"`
			WithDecryption   bool          `json:"WithDecryption"`
			MaxResults       *int          `json:"MaxResults"`
			NextToken        string        `json:"NextToken"`
			ParameterFilters []paramFilter `json:"ParameterFilters"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if !strings.HasPrefix(in.Path, "/") || (in.Path != "/" && strings.HasSuffix(in.Path, "/")) {
			return nil, errorf(400, "ValidationException", "Path must begin with / and, unless it is /, not end with /")
		}
		limit := 10
		if in.MaxResults != nil {
			if *in.MaxResults < 1 || *in.MaxResults > 10 {
				return nil, errorf(400, "ValidationException", "MaxResults must be between 1 and 10")
			}
			limit = *in.MaxResults
		}
		if len(in.ParameterFilters) > 0 {
			return nil, errorf(400, "ValidationException", "this fake takes no ParameterFilters with GetParametersByPath")
		}
		names := s.under(in.Path, in.Recursive)
		start, end, next, e := page(in.NextToken, limit, len(names))
		if e != nil {
			return nil, e
		}
		list := []paramOut{}
		for _, n := range names[start:end] {
			p := s.params[n]
			list = append(list, s.paramValue(p, len(p.versions), "", in.WithDecryption))
		}
		out := map[string]any{"Parameters": list}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	case "DescribeParameters":
		var in struct {
			ParameterFilters []paramFilter `json:"ParameterFilters"`
			MaxResults       *int          `json:"MaxResults"`
			NextToken        string        `json:"NextToken"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		limit := 50
		if in.MaxResults != nil {
			if *in.MaxResults < 1 || *in.MaxResults > 50 {
				return nil, errorf(400, "ValidationException", "MaxResults must be between 1 and 50")
			}
			limit = *in.MaxResults
		}
		names := s.under("/", true)
		for n := range s.params {
			if !strings.HasPrefix(n, "/") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		// Filters are ANDed; the values of one filter ORed.
		for _, f := range in.ParameterFilters {
			if len(f.Values) == 0 {
				return nil, errorf(400, "InvalidFilterValue", "a filter takes at least one value")
			}
			switch {
			case f.Key == "Name" && (f.Option == "Equals" || f.Option == ""):
				names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(f.Values, n) })
			case f.Key == "Name" && f.Option == "BeginsWith":
				names = slices.DeleteFunc(names, func(n string) bool {
					return !slices.ContainsFunc(f.Values, func(v string) bool { return strings.HasPrefix(n, v) })
				})
			case f.Key == "Path" && (f.Option == "Recursive" || f.Option == "OneLevel"):
				if len(f.Values) != 1 {
					return nil, errorf(400, "InvalidFilterValue", "a Path filter takes one value")
				}
				under := s.under(f.Values[0], f.Option == "Recursive")
				names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(under, n) })
			case strings.HasPrefix(f.Key, "tag:") && (f.Option == "Equals" || f.Option == ""):
				key := strings.TrimPrefix(f.Key, "tag:")
				names = slices.DeleteFunc(names, func(n string) bool {
					return !slices.ContainsFunc(s.params[n].tags, func(t Tag) bool { return deref(t.Key) == key && slices.Contains(f.Values, deref(t.Value)) })
				})
			default:
				return nil, errorf(400, "InvalidFilterKey", "this fake filters by Name (Equals, BeginsWith), Path (Recursive, OneLevel) and tag:KEY (Equals)")
			}
		}
		start, end, next, e := page(in.NextToken, limit, len(names))
		if e != nil {
			return nil, e
		}
		list := []map[string]any{}
		for _, n := range names[start:end] {
			p := s.params[n]
			v := p.versions[len(p.versions)-1]
			md := map[string]any{"Name": n, "ARN": s.paramARN(n), "Type": v.typ, "Version": len(p.versions), "LastModifiedDate": epoch(v.modified), "DataType": "text", "Tier": "Standard"}
			if v.keyID != "" {
				md["KeyId"] = v.keyID
			}
			list = append(list, md)
		}
		out := map[string]any{"Parameters": list}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	case "PutParameter":
		var in struct {
			Name           string `json:"Name"`
			Value          string `json:"Value"`
			Type           string `json:"Type"`
			KeyID          string `json:"KeyId"`
			Overwrite      bool   `json:"Overwrite"`
			Tags           []Tag  `json:"Tags"`
			Description    string `json:"Description"`
			Tier           string `json:"Tier"`
			DataType       string `json:"DataType"`
			AllowedPattern string `json:"AllowedPattern"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if !paramNameRE.MatchString(in.Name) || len(in.Name) > 2048 || strings.Contains(in.Name, "//") || (strings.Contains(in.Name, "/") && !strings.HasPrefix(in.Name, "/")) {
			return nil, errorf(400, "ValidationException", "parameter name is not valid: a hierarchical name must begin with /")
		}
		if in.Value == "" || len(in.Value) > 4096 {
			return nil, errorf(400, "ValidationException", "Value must be 1 to 4096 characters (Standard tier)")
		}
		if in.KeyID != "" && in.Type != "SecureString" {
			return nil, errorf(400, "ValidationException", "KeyId is only for SecureString")
		}
		p, exists := s.params[in.Name]
		switch {
		case exists && !in.Overwrite:
			return nil, errorf(400, "ParameterAlreadyExists", "The parameter already exists. To overwrite this value, set the overwrite option in the request to true.")
		case exists && len(in.Tags) > 0:
			return nil, errorf(400, "ValidationException", "Invalid request: tags and overwrite can't be used together. To create a parameter with tags, please remove overwrite flag. To update tags for an existing parameter, please use AddTagsToResource or RemoveTagsFromResource.")
		case !exists && in.Type == "":
			return nil, errorf(400, "ValidationException", "Type is required for a new parameter")
		}
		if e := checkTags(in.Tags); e != nil {
			return nil, e
		}
		typ := in.Type
		if typ == "" {
			typ = p.versions[len(p.versions)-1].typ
		}
		n := s.putParam(in.Name, in.Value, typ, in.KeyID)
		if !exists {
			s.params[in.Name].tags = in.Tags
		}
		return map[string]any{"Version": n, "Tier": "Standard"}, nil
	case "ListTagsForResource", "AddTagsToResource":
		var in struct {
			ResourceType string `json:"ResourceType"`
			ResourceID   string `json:"ResourceId"`
			Tags         []Tag  `json:"Tags"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if in.ResourceType != "Parameter" {
			return nil, errorf(400, "InvalidResourceType", "this fake tags parameters only")
		}
		if (op == "ListTagsForResource") != (in.Tags == nil) {
			return nil, errorf(400, "SerializationException", "Tags belongs to AddTagsToResource only")
		}
		p := s.params[in.ResourceID]
		if p == nil {
			return nil, errorf(400, "InvalidResourceId", "The resource ID is not valid. Verify that the ID is correct.")
		}
		if op == "ListTagsForResource" {
			tags := p.tags
			if tags == nil {
				tags = []Tag{}
			}
			return map[string]any{"TagList": tags}, nil
		}
		if e := checkTags(in.Tags); e != nil {
			return nil, e
		}
		for _, t := range in.Tags {
			p.tags = slices.DeleteFunc(p.tags, func(o Tag) bool { return deref(o.Key) == deref(t.Key) })
			p.tags = append(p.tags, t)
		}
		return struct{}{}, nil
	case "DeleteParameter":
		var in struct {
			Name string `json:"Name"`
		}
		if e := decode(body, &in); e != nil {
			return nil, e
		}
		if _, ok := s.params[in.Name]; !ok {
			return nil, errorf(400, "ParameterNotFound", "")
		}
		delete(s.params, in.Name)
		return struct{}{}, nil
	}
	return nil, errorf(400, "InvalidAction", "this fake does not serve AmazonSSM.%s", op)
}

// under lists, sorted, the parameters below path (one level or all);
// s.mu is held.
func (s *Server) under(path string, recursive bool) []string {
	prefix := strings.TrimSuffix(path, "/") + "/"
	var out []string
	for n := range s.params {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok || rest == "" || (!recursive && strings.Contains(rest, "/")) {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// page is the slice [start:end) of a listing of n items for a token and
// a limit, and the next token ("" at the end).
func page(token string, limit, n int) (int, int, string, *apiError) {
	start := 0
	if token != "" {
		var err error
		if start, err = strconv.Atoi(token); err != nil || start < 0 || start > n {
			return 0, 0, "", errorf(400, "InvalidNextToken", "The specified token is not valid.")
		}
	}
	end := min(n, start+limit)
	next := ""
	if end < n {
		next = strconv.Itoa(end)
	}
	return start, end, next, nil
}

// ParameterKMSKey is the type and KMS key of a parameter's current version.
func (s *Server) ParameterKMSKey(name string) (typ, keyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.params[name]
	if p == nil {
		return "", ""
	}
	v := p.versions[len(p.versions)-1]
	return v.typ, v.keyID
}

// ValidParameterName tells whether Parameter Store accepts name for a
// new parameter (letters, digits, '_', '.', '-' and '/', at most 2048
// characters): an out-of-band seed that stands for a user's write refuses
// the others, as the service would.
func ValidParameterName(name string) bool {
	return paramNameRE.MatchString(name) && len(name) <= 2048
}
