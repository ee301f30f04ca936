// Package awsps is the provider of AWS Systems Manager Parameter Store, on
// the official SDK (aws-sdk-go-v2). remoteRef.key is a parameter's name or
// ARN, or a path ending in "/" that reads every parameter under it
// (recursively) as the fields of one object; remoteRef.version is a version
// number or a label. SecureString parameters are decrypted. Reads are
// batched with GetParameters, versions checked and names listed (list.go)
// with DescribeParameters, and
// publishing writes SecureString parameters marked with an ownership tag.
package awsps

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
)

// BatchLimit is the most names one GetParameters call takes.
const BatchLimit = 10

// Factory builds Parameter Store clients.
type Factory struct {
	// HTTPClient, when set, is the SDK's HTTP client (tests).
	HTTPClient aws.HTTPClient
}

var _ provider.Factory = Factory{}

// Validate checks the block without I/O.
func (Factory) Validate(store provider.Store) error { return awsbase.Validate(store) }

// Refs names the credentials of the block.
func (Factory) Refs(store provider.Store) []provider.ObjectRef { return awsbase.Refs(store) }

// New builds the client. It does not call AWS.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	s, err := awsbase.NewSession(ctx, store, deps, f.HTTPClient)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{s: s, api: ssm.NewFromConfig(s.Config, func(o *ssm.Options) {
		o.BaseEndpoint = s.BaseEndpoint()
		s.EndpointOptions(&o.EndpointOptions.UseFIPSEndpoint, &o.EndpointOptions.UseDualStackEndpoint)
	}), tokens: awsbase.NewRegistryTokens(s)}
	return c.Ops(), nil
}

// Client reads and writes the parameters of one store.
type Client struct {
	s   *awsbase.Session
	api *ssm.Client
	// tokens issues ECR pull tokens (dataFrom registryToken).
	tokens *awsbase.RegistryTokens
}

// Ops are the client's operations.
func (c *Client) Ops() engine.Ops {
	ops := engine.Ops{Reader: c, Batch: c, BatchLimit: BatchLimit, Versions: c, Lister: c, Writer: c, Checker: c, Leaser: c.tokens}
	plain := ops
	ops.Scope = func(scope string) (engine.Ops, error) { return scoped(plain, scope), nil }
	return ops
}

// IsPath tells a path (read as every parameter under it) from a name.
func IsPath(key string) bool { return strings.HasSuffix(key, "/") }

// selector is the name with its version selector, as GetParameter takes
// it: name:3 for a version number, name:label for a label.
func selector(ref engine.Ref) string {
	if ref.Version == "" {
		return ref.Key
	}
	return ref.Key + ":" + ref.Version
}

func readWhat(ref engine.Ref) string {
	if ref.Version == "" {
		return fmt.Sprintf("reading parameter %q from AWS Parameter Store", ref.Key)
	}
	return fmt.Sprintf("reading parameter %q at version %q from AWS Parameter Store", ref.Key, ref.Version)
}

// GetSecret reads one parameter (decrypted), or every parameter under a
// path.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	if IsPath(ref.Key) {
		return c.readPath(ctx, ref)
	}
	out, err := c.api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(selector(ref)), WithDecryption: aws.Bool(true)})
	if err != nil {
		return engine.Object{}, c.s.Classify(readWhat(ref), err)
	}
	return object(out.Parameter), nil
}

func object(p *types.Parameter) engine.Object {
	o := engine.TextObject(strconv.FormatInt(p.Version, 10), []byte(aws.ToString(p.Value)))
	o.NotSecret = notSecret(p.Type)
	return o
}

// notSecret tells whether Parameter Store marks a parameter's value as not
// secret: String and StringList parameters are plain text, SecureString
// ones are encrypted with a KMS key. An answer without a type counts as
// secret.
func notSecret(t types.ParameterType) bool {
	return t == types.ParameterTypeString || t == types.ParameterTypeStringList
}

// readPath reads every parameter under a path, recursively and page by
// page, as the fields of one object: a field's name is the parameter's
// name below the path with "/" replaced by "_" (/app/prod/db/password
// under /app/prod/ is db_password). Two names that map to the same field
// are an error naming both. The version is a digest of the names and
// versions read, so that any change under the path is a new version.
func (c *Client) readPath(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	what := fmt.Sprintf("reading the parameters under path %q from AWS Parameter Store", ref.Key)
	if ref.Version != "" {
		return engine.Object{}, fmt.Errorf("%s: a path has no versions; remove remoteRef.version: %w", what, engine.ErrInvalidConfig)
	}
	fields := map[string][]byte{}
	from := map[string]string{}
	var versions []string
	plain := true // every parameter under the path is marked not secret
	in := &ssm.GetParametersByPathInput{Path: aws.String(pathArg(ref.Key)), Recursive: aws.Bool(true), WithDecryption: aws.Bool(true), MaxResults: aws.Int32(10)}
	p := ssm.NewGetParametersByPathPaginator(c.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return engine.Object{}, c.s.Classify(what, err)
		}
		for _, par := range page.Parameters {
			name := aws.ToString(par.Name)
			field := FieldName(ref.Key, name)
			if other, clash := from[field]; clash {
				return engine.Object{}, &engine.PropertyError{Key: ref.Key, Problem: fmt.Sprintf(
					"parameters %q and %q both map to key %q (\"/\" becomes \"_\"); rename one of them, or read them with data[] and secretKey", other, name, field)}
			}
			from[field] = name
			fields[field] = []byte(aws.ToString(par.Value))
			plain = plain && notSecret(par.Type)
			versions = append(versions, name+"@"+strconv.FormatInt(par.Version, 10))
		}
	}
	if len(fields) == 0 {
		return engine.Object{}, fmt.Errorf("%s: there is no parameter under it: %w", what, engine.ErrNotFound)
	}
	return engine.Object{Version: pathVersion(versions), Fields: fields, NotSecret: plain}, nil
}

// pathArg is a path as GetParametersByPath takes it: without its trailing
// "/", except the root.
func pathArg(key string) string {
	if key == "/" {
		return key
	}
	return strings.TrimSuffix(key, "/")
}

// FieldName is the Secret key of parameter name under path: the rest of
// the name with "/" replaced by "_".
func FieldName(path, name string) string {
	rest := strings.TrimPrefix(name, path)
	return strings.ReplaceAll(strings.Trim(rest, "/"), "/", "_")
}

func pathVersion(versions []string) string {
	slices.Sort(versions)
	h := sha256.Sum256([]byte(strings.Join(versions, "\n")))
	return fmt.Sprintf("path-%x", h[:10])
}

// GetSecrets reads up to BatchLimit parameters with one GetParameters call
// (with their version selectors); a path is read on its own. A call asks
// for each parameter once, so that its answer is matched to the name
// asked by the parameter's name alone (AWS gives a Selector with a
// parameter read at a version or label, some emulators do not); the
// answer's version must be the one asked, where the name asks a number.
// A pinned ref that the answer does not settle is read on its own; one
// that the answer does not mention at all is a provider error: the store
// answered, only not about it.
func (c *Client) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	items := make([]engine.BatchItem, len(refs))
	var calls [][]asked
	seen := map[string]bool{}
	for i, r := range refs {
		if IsPath(r.Key) {
			obj, err := c.GetSecret(ctx, r)
			items[i] = engine.BatchItem{Object: obj, Err: err}
			continue
		}
		a := parseAsked(selector(r))
		if seen[a.name] {
			continue
		}
		seen[a.name] = true
		calls = place(calls, a)
	}
	found := map[string]engine.BatchItem{}
	for _, call := range calls {
		if err := c.batch(ctx, call, found); err != nil {
			return nil, err
		}
	}
	for i, r := range refs {
		if IsPath(r.Key) {
			continue
		}
		item, ok := found[selector(r)]
		if !ok && r.Version != "" {
			// A single read names its version beyond doubt.
			obj, err := c.GetSecret(ctx, r)
			item, ok = engine.BatchItem{Object: obj, Err: err}, true
			found[selector(r)] = item
		}
		if !ok {
			item.Err = failure.Retryf(failure.ProviderError, "%s: AWS Parameter Store answered GetParameters without this parameter, neither as a parameter nor as an invalid one", readWhat(r))
		}
		items[i] = item
	}
	return items, nil
}

// asked is a name of a GetParameters call: as asked (name or ARN, with a
// selector), the parameter's name, and the selector without its colon
// ("" for the current version).
type asked struct{ name, param, sel string }

func parseAsked(n string) asked {
	a := asked{name: n}
	base, at := n, 0
	if strings.HasPrefix(n, "arn:") {
		if i := strings.Index(n, ":parameter/"); i >= 0 {
			at = i + len(":parameter/")
		}
	}
	if i := strings.LastIndex(n[at:], ":"); i >= 0 {
		base, a.sel = n[:at+i], n[at+i+1:]
	}
	a.param = paramName(base)
	return a
}

// paramName is the name of the parameter that key (a name or an ARN)
// names: an ARN ends in parameter/<the name without its leading "/">.
func paramName(key string) string {
	if !strings.HasPrefix(key, "arn:") {
		return key
	}
	_, name, ok := strings.Cut(key, ":parameter/")
	if !ok {
		return key
	}
	if strings.Contains(name, "/") {
		return "/" + name
	}
	return name
}

// place adds a to the first call that has room and does not ask for a's
// parameter yet, or to a new call.
func place(calls [][]asked, a asked) [][]asked {
	for i, call := range calls {
		if len(call) < BatchLimit && !slices.ContainsFunc(call, func(o asked) bool { return o.param == a.param }) {
			calls[i] = append(call, a)
			return calls
		}
	}
	return append(calls, []asked{a})
}

// batch reads the names of one call, each of another parameter, and files
// each answer under the name it answers.
func (c *Client) batch(ctx context.Context, call []asked, found map[string]engine.BatchItem) error {
	names := make([]string, len(call))
	for i, a := range call {
		names[i] = a.name
	}
	out, err := c.api.GetParameters(ctx, &ssm.GetParametersInput{Names: names, WithDecryption: aws.Bool(true)})
	if err != nil {
		return c.s.Classify(fmt.Sprintf("reading %d parameters from AWS Parameter Store in one batch", len(names)), err)
	}
	of := func(param string) (asked, bool) {
		i := slices.IndexFunc(call, func(a asked) bool { return a.param == param })
		if i < 0 {
			return asked{}, false
		}
		return call[i], true
	}
	for i := range out.Parameters {
		p := &out.Parameters[i]
		a, ok := of(aws.ToString(p.Name))
		if !ok {
			a, ok = of(paramName(aws.ToString(p.ARN)))
		}
		if ok && answers(p, a) {
			found[a.name] = engine.BatchItem{Object: object(p)}
		}
	}
	for _, n := range out.InvalidParameters {
		a, ok := asked{}, false
		if i := slices.Index(names, n); i >= 0 {
			a, ok = call[i], true
		} else {
			// Named without its selector, or as the other of name and
			// ARN: the call asks for the parameter once.
			a, ok = of(parseAsked(n).param)
		}
		if ok {
			found[a.name] = engine.BatchItem{Err: fmt.Errorf("reading parameter %q from AWS Parameter Store: it does not exist, or not at that version: %w", a.name, engine.ErrNotFound)}
		}
	}
	return nil
}

// answers tells whether p, an answer of a's parameter, is at the version
// a asks: the Selector, where the answer gives one, is a's; a version
// number asked is p's.
func answers(p *types.Parameter, a asked) bool {
	want := ""
	if a.sel != "" {
		want = ":" + a.sel
	}
	if sel := aws.ToString(p.Selector); sel != "" && sel != want {
		return false
	}
	if n, err := strconv.ParseInt(a.sel, 10, 64); err == nil && p.Version != n {
		return false
	}
	return true
}

// CurrentVersion is a parameter's version number from DescribeParameters,
// or the digest of the names and versions under a path: no value is read.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	if IsPath(key) {
		return c.pathCurrentVersion(ctx, key)
	}
	md, err := c.describe(ctx, key)
	if err != nil {
		return "", c.s.Classify(fmt.Sprintf("describing parameter %q in AWS Parameter Store", key), err)
	}
	return strconv.FormatInt(md.Version, 10), nil
}

func (c *Client) pathCurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("describing the parameters under path %q in AWS Parameter Store", key)
	in := &ssm.DescribeParametersInput{ParameterFilters: []types.ParameterStringFilter{{Key: aws.String("Path"), Option: aws.String("Recursive"), Values: []string{pathArg(key)}}}}
	var versions []string
	p := ssm.NewDescribeParametersPaginator(c.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", c.s.Classify(what, err)
		}
		for _, md := range page.Parameters {
			versions = append(versions, aws.ToString(md.Name)+"@"+strconv.FormatInt(md.Version, 10))
		}
	}
	if len(versions) == 0 {
		return "", fmt.Errorf("%s: there is no parameter under it: %w", what, engine.ErrNotFound)
	}
	return pathVersion(versions), nil
}

// errNoParameter is describe's answer for a missing parameter.
type errNoParameter struct{}

func (errNoParameter) Error() string                 { return "AWS answered ParameterNotFound" }
func (errNoParameter) ErrorCode() string             { return "ParameterNotFound" }
func (errNoParameter) ErrorMessage() string          { return "" }
func (errNoParameter) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }

// describe is the metadata of one parameter (name or ARN).
func (c *Client) describe(ctx context.Context, key string) (*types.ParameterMetadata, error) {
	// DescribeParameters filters by name.
	filterKey, value := "Name", paramName(key)
	out, err := c.api.DescribeParameters(ctx, &ssm.DescribeParametersInput{ParameterFilters: []types.ParameterStringFilter{{Key: aws.String(filterKey), Option: aws.String("Equals"), Values: []string{value}}}})
	if err != nil {
		return nil, err
	}
	for i := range out.Parameters {
		if aws.ToString(out.Parameters[i].Name) == value {
			return &out.Parameters[i], nil
		}
	}
	return nil, errNoParameter{}
}

// Check verifies the credentials without reading a secret
// (sts:GetCallerIdentity).
func (c *Client) Check(ctx context.Context) error { return c.s.Check(ctx) }

// PutSecret writes the publication's fields as a JSON object into a
// SecureString parameter (with the block's KMS key, if any): it creates the
// parameter with the ownership tag, or overwrites one that carries the
// owner's tag (or, with adopt, none), and applies the publication's tags.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing parameter %q to AWS Parameter Store", key)
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: Parameter Store keeps no labels, annotations or type; use tags: %w", what, engine.ErrNotSupported)
	}
	if IsPath(key) {
		return "", fmt.Errorf("%s: a path cannot be written; name a parameter: %w", what, engine.ErrInvalidConfig)
	}
	text, err := awsbase.FieldsText(p.Fields)
	if err != nil {
		return "", err
	}
	tags, err := awsbase.Tags(owner, p.Tags)
	if err != nil {
		return "", err
	}
	var psTags []types.Tag
	for _, t := range tags {
		psTags = append(psTags, types.Tag{Key: aws.String(t[0]), Value: aws.String(t[1])})
	}
	in := &ssm.PutParameterInput{Name: aws.String(key), Value: aws.String(text), Type: types.ParameterTypeSecureString}
	if c.s.KMSKeyID != "" {
		in.KeyId = aws.String(c.s.KMSKeyID)
	}
	if _, err = c.describe(ctx, key); err != nil {
		if err = c.s.Classify(what, err); !errors.Is(err, engine.ErrNotFound) {
			return "", err
		}
		// A concurrent creator makes this fail with ParameterAlreadyExists
		// (ErrUnavailable): the retry finds the parameter.
		in.Tags, in.Overwrite = psTags, aws.Bool(false)
		created, cerr := c.api.PutParameter(ctx, in)
		if cerr != nil {
			return "", c.s.Classify(what, cerr)
		}
		return strconv.FormatInt(created.Version, 10), nil
	}
	have, err := c.api.ListTagsForResource(ctx, &ssm.ListTagsForResourceInput{ResourceType: types.ResourceTypeForTaggingParameter, ResourceId: aws.String(key)})
	if err != nil {
		return "", c.s.Classify(what+" (reading its tags)", err)
	}
	marker, found := tagValue(have.TagList, awsbase.OwnerTag)
	if _, err = awsbase.Ownership(what, marker, found, owner); err != nil {
		return "", err
	}
	if !sameTags(have.TagList, psTags) {
		if _, err = c.api.AddTagsToResource(ctx, &ssm.AddTagsToResourceInput{ResourceType: types.ResourceTypeForTaggingParameter, ResourceId: aws.String(key), Tags: psTags}); err != nil {
			return "", c.s.Classify(what+" (tagging it)", err)
		}
	}
	in.Overwrite = aws.Bool(true)
	out, err := c.api.PutParameter(ctx, in)
	if err != nil {
		return "", c.s.Classify(what, err)
	}
	return strconv.FormatInt(out.Version, 10), nil
}

// DeleteSecret deletes a parameter that carries the owner's tag.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting parameter %q from AWS Parameter Store", key)
	have, err := c.api.ListTagsForResource(ctx, &ssm.ListTagsForResourceInput{ResourceType: types.ResourceTypeForTaggingParameter, ResourceId: aws.String(key)})
	if err != nil {
		if err = c.s.Classify(what, err); errors.Is(err, engine.ErrNotFound) {
			return nil
		}
		return err
	}
	marker, found := tagValue(have.TagList, awsbase.OwnerTag)
	if !found || marker != owner.ID {
		_, err = awsbase.Ownership(what, marker, found, engine.Owner{ID: owner.ID})
		return err
	}
	_, err = c.api.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(key)})
	if err = c.s.Classify(what, err); errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	return err
}

func tagValue(tags []types.Tag, key string) (string, bool) {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value), true
		}
	}
	return "", false
}

func sameTags(have, want []types.Tag) bool {
	for _, w := range want {
		if v, ok := tagValue(have, aws.ToString(w.Key)); !ok || v != aws.ToString(w.Value) {
			return false
		}
	}
	return true
}
