package gitlab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	glapi "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/watchword-dev/watchword/internal/engine"
)

// OwnerPrefix begins the description of a variable Watchword wrote; the
// owner's ID follows it. A variable's description is free text that CI
// jobs never see, and GitLab shows it next to the variable.
const OwnerPrefix = "watchword-owner="

// maxDescription is the longest description GitLab keeps.
const maxDescription = 255

// writeScope is the environment scope of the variables Watchword writes:
// the store's environment, or "*".
func (c *Client) writeScope() string {
	if c.env == "" {
		return "*"
	}
	return c.env
}

// fieldsText is the value a publication's fields are written as: a JSON
// object of string members, which a read gives back as fields.
func fieldsText(fields map[string][]byte) (string, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = string(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding the fields as JSON: %w", err)
	}
	return string(b), nil
}

// ownership decides whether owner may write (or delete) a variable whose
// description is desc.
func ownership(what, desc string, owner engine.Owner) error {
	marker, marked := strings.CutPrefix(desc, OwnerPrefix)
	switch {
	case marked && marker == owner.ID:
		return nil
	case marked:
		return fmt.Errorf("%s: it belongs to %q (its description), not to %q: %w", what, marker, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return nil
	}
	return fmt.Errorf("%s: it exists and its description carries no %s marker, so Watchword did not create it; set adopt to take it over (its description is then replaced): %w",
		what, OwnerPrefix, engine.ErrNotOwned)
}

// PutSecret writes the publication's fields, as a JSON object, to the
// project variable of the key in the store's environment scope ("*"
// without one). A new variable is created with the ownership marker as
// its description, raw (GitLab does not expand "$" in it), not masked
// (GitLab masks only a single-line value of the base64 alphabet, which a
// JSON object never is) and not protected (jobs of every branch see it).
// An existing variable is written only if its description carries the
// owner's marker (or, with adopt, none); its masked, protected and hidden
// settings are kept. Writing what it already holds makes no request.
// GitLab has no conditional write: of two writers racing, the last one's
// value stays, whole.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	scope := c.writeScope()
	what := fmt.Sprintf("writing GitLab variable %q (scope %q) of project %q", key, scope, c.project)
	if err := checkKey(what, key); err != nil {
		return "", err
	}
	if p.HasMetadata() || len(p.Tags) > 0 {
		return "", fmt.Errorf("%s: a GitLab variable keeps no labels, annotations, type or tags: %w", what, engine.ErrNotSupported)
	}
	marker := OwnerPrefix + owner.ID
	if len(marker) > maxDescription {
		return "", fmt.Errorf("%s: the ownership marker of %q would exceed the 255 characters of a variable's description: use a shorter name: %w", what, owner.ID, engine.ErrInvalidConfig)
	}
	text, err := fieldsText(p.Fields)
	if err != nil {
		return "", err
	}
	src := source{id: c.project}
	cur, err := c.get(ctx, src, key, scope, what+" (reading it first)")
	if err != nil {
		return "", err
	}
	if cur == nil {
		v, resp, cerr := c.api.ProjectVariables.CreateVariable(c.project, &glapi.CreateProjectVariableOptions{
			Key: glapi.Ptr(key), Value: glapi.Ptr(text), Description: glapi.Ptr(marker), EnvironmentScope: glapi.Ptr(scope),
			Masked: glapi.Ptr(false), Protected: glapi.Ptr(false), Raw: glapi.Ptr(true),
			VariableType: glapi.Ptr(glapi.EnvVariableType),
		}, glapi.WithContext(ctx))
		if cerr != nil {
			if statusOf(resp, cerr) == http.StatusBadRequest && taken(cerr) {
				// Another writer created it between the read and the create.
				return "", fmt.Errorf("%s: another writer created it at the same time (HTTP 400, key taken); the write is tried again: %w", what, engine.ErrUnavailable)
			}
			return "", c.classify(what, resp, cerr)
		}
		return c.version(src, &variable{Key: v.Key, Value: v.Value, Scope: v.EnvironmentScope, Type: string(v.VariableType)}), nil
	}
	if oerr := ownership(what, cur.Description, owner); oerr != nil {
		return "", oerr
	}
	if cur.Value == text && cur.Description == marker && !cur.Hidden {
		return c.version(src, cur), nil
	}
	v, resp, err := c.api.ProjectVariables.UpdateVariable(c.project, key, &glapi.UpdateProjectVariableOptions{
		Value: glapi.Ptr(text), Description: glapi.Ptr(marker), Raw: glapi.Ptr(true),
		Filter: &glapi.VariableFilter{EnvironmentScope: scope},
	}, glapi.WithContext(ctx))
	if err != nil {
		return "", c.classify(what, resp, err)
	}
	return c.version(src, &variable{Key: v.Key, Value: v.Value, Scope: v.EnvironmentScope, Type: string(v.VariableType)}), nil
}

// DeleteSecret deletes the project variable of the key in the store's
// environment scope, if its description carries the owner's marker.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	scope := c.writeScope()
	what := fmt.Sprintf("deleting GitLab variable %q (scope %q) of project %q", key, scope, c.project)
	if err := checkKey(what, key); err != nil {
		return err
	}
	cur, err := c.get(ctx, source{id: c.project}, key, scope, what+" (reading it first)")
	if err != nil || cur == nil {
		return err
	}
	if oerr := ownership(what, cur.Description, engine.Owner{ID: owner.ID}); oerr != nil {
		return oerr
	}
	resp, err := c.api.ProjectVariables.RemoveVariable(c.project, key, &glapi.RemoveProjectVariableOptions{
		Filter: &glapi.VariableFilter{EnvironmentScope: scope}}, glapi.WithContext(ctx))
	if err != nil && statusOf(resp, err) != http.StatusNotFound {
		return c.classify(what, resp, err)
	}
	return nil
}
