package gitlabfake

import (
	"crypto/tls"
	"net/http"
	"testing"

	glapi "gitlab.com/gitlab-org/api/client-go/v2"
)

// sdk is GitLab's SDK pointed at the fake with a token, without retries.
func sdk(t *testing.T, s *Server, token string) *glapi.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12}}}
	c, err := glapi.NewClient(token, glapi.WithBaseURL(s.URL()), glapi.WithHTTPClient(hc), glapi.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func status(resp *glapi.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}

// The fake refuses, through the SDK, what GitLab refuses, and pages as
// GitLab pages.
func TestFakeAnswersAsGitLab(t *testing.T) {
	s := Start()
	defer s.Close()
	s.AddProject(5, "team/app")
	s.AddToken("good", Token{Write: true})
	s.AddToken("reader", Token{})
	api := sdk(t, s, "good")

	if _, resp, _ := sdk(t, s, "unknown").ProjectVariables.ListVariables(5, nil); status(resp) != http.StatusUnauthorized {
		t.Errorf("an unknown token: HTTP %d", status(resp))
	}
	if _, resp, _ := sdk(t, s, "reader").ProjectVariables.CreateVariable(5, &glapi.CreateProjectVariableOptions{Key: glapi.Ptr("A"), Value: glapi.Ptr("v")}); status(resp) != http.StatusForbidden {
		t.Errorf("a read_api token writing: HTTP %d", status(resp))
	}
	if _, resp, _ := api.ProjectVariables.CreateVariable(5, &glapi.CreateProjectVariableOptions{Key: glapi.Ptr("a-b"), Value: glapi.Ptr("v")}); status(resp) != http.StatusBadRequest {
		t.Errorf("a key with '-': HTTP %d", status(resp))
	}
	if _, resp, _ := api.ProjectVariables.CreateVariable(5, &glapi.CreateProjectVariableOptions{Key: glapi.Ptr("M"), Value: glapi.Ptr("short"), Masked: glapi.Ptr(true)}); status(resp) != http.StatusBadRequest {
		t.Errorf("a masked value of 5 characters: HTTP %d", status(resp))
	}
	for _, key := range []string{"K1", "K2", "K3", "K4", "K5"} {
		if _, _, err := api.ProjectVariables.CreateVariable("team/app", &glapi.CreateProjectVariableOptions{Key: glapi.Ptr(key), Value: glapi.Ptr("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, resp, _ := api.ProjectVariables.CreateVariable(5, &glapi.CreateProjectVariableOptions{Key: glapi.Ptr("K1"), Value: glapi.Ptr("v")}); status(resp) != http.StatusBadRequest {
		t.Errorf("a taken key: HTTP %d", status(resp))
	}
	vars, resp, err := api.ProjectVariables.ListVariables(5, &glapi.ListProjectVariablesOptions{ListOptions: glapi.ListOptions{PerPage: 2, Page: 2}})
	if err != nil || len(vars) != 2 || vars[0].Key != "K3" || resp.TotalItems != 5 || resp.TotalPages != 3 || resp.NextPage != 3 || resp.PreviousPage != 1 {
		t.Errorf("page 2 of 2: %d variables, total %d, pages %d, next %d, prev %d, %v", len(vars), resp.TotalItems, resp.TotalPages, resp.NextPage, resp.PreviousPage, err)
	}
	if _, resp, _ := api.ProjectVariables.GetVariable(99, "K1", nil); status(resp) != http.StatusNotFound {
		t.Errorf("an unknown project: HTTP %d", status(resp))
	}
	// Two scopes of one key: a get without a filter is refused.
	if _, _, err = api.ProjectVariables.CreateVariable(5, &glapi.CreateProjectVariableOptions{Key: glapi.Ptr("K1"), Value: glapi.Ptr("p"), EnvironmentScope: glapi.Ptr("production")}); err != nil {
		t.Fatal(err)
	}
	if _, resp, _ := api.ProjectVariables.GetVariable(5, "K1", nil); status(resp) != http.StatusConflict {
		t.Errorf("a key in two scopes without a filter: HTTP %d", status(resp))
	}
	v, _, err := api.ProjectVariables.GetVariable(5, "K1", &glapi.GetProjectVariableOptions{Filter: &glapi.VariableFilter{EnvironmentScope: "production"}})
	if err != nil || v.Value != "p" {
		t.Errorf("the production K1: %v", err)
	}
	s.Throttle(1, 3)
	if _, resp, _ := api.ProjectVariables.GetVariable(5, "K2", nil); status(resp) != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("throttled: HTTP %d", status(resp))
	}
}
