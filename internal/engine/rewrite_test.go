package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func transform(tmpl string) v1alpha1.ExternalSecretRewrite {
	return v1alpha1.ExternalSecretRewrite{Transform: &v1alpha1.RewriteTransform{Template: tmpl}}
}

// TestRewriteTransform: a transform renders each key as .value, in order
// with the regexp rules; two keys that end the same are refused by name;
// a template that fails is a TemplateError naming the rule.
func TestRewriteTransform(t *testing.T) {
	objs := map[Ref]Object{
		{Key: "app"}:    {Fields: map[string][]byte{"db-user": []byte("u"), "db-password": []byte("SECRET-P")}},
		{Key: "clash"}:  {Fields: map[string][]byte{"Token": []byte("a"), "TOKEN": []byte("b")}},
		{Key: "p/one"}:  {Value: []byte("1")},
		{Key: "p/two"}:  {Value: []byte("2")},
		{Key: "spaced"}: {Fields: map[string][]byte{"x": []byte("v")}},
	}
	cases := []struct {
		name    string
		entry   v1alpha1.ExternalSecretDataFrom
		found   Found
		want    map[string]string
		wantErr string
	}{
		{name: "upper", entry: v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "app"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{transform("{{ .value | upper }}")}},
			want: map[string]string{"DB-USER": "u", "DB-PASSWORD": "SECRET-P"}},
		{name: "after a regexp, before another", entry: v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "app"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("^db-", ""), transform(`{{ .value | replace "-" "_" | upper }}`), rewrite("^", "APP_")}},
			want: map[string]string{"APP_USER": "u", "APP_PASSWORD": "SECRET-P"}},
		{name: "on a find, before '/' becomes '_'", entry: v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "p/"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{transform(`{{ .value | trimPrefix "p/" | printf "n-%s" }}`)}},
			found: Found{0: {"p/one", "p/two"}}, want: map[string]string{"n-one": "1", "n-two": "2"}},
		{name: "collision refused by name", entry: v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "clash"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{transform("{{ .value | lower }}")}},
			wantErr: `dataFrom[0]: field "TOKEN" of remote key "clash" and field "Token" of remote key "clash" both become Secret key "token"`},
		{name: "not a Secret key", entry: v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "spaced"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{transform("a key {{ .value }}")}},
			wantErr: `becomes Secret key "a key x", which is not one`},
		{name: "a template that fails", entry: v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "app"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("x", "y"), transform("{{ .value | nosuchfunc }}")}},
			wantErr: `template "dataFrom[0].rewrite[1].transform": does not parse`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{tc.entry}}
			res, err := RenderFound(spec, objs, tc.found, nil, time.Time{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "SECRET-P") {
					t.Errorf("the error %q holds a value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Data) != len(tc.want) {
				t.Errorf("keys = %v, want %v", res.Data, tc.want)
			}
			for k, v := range tc.want {
				if string(res.Data[k]) != v {
					t.Errorf("%s = %q, want %q", k, res.Data[k], v)
				}
			}
		})
	}
	var te *TemplateError
	spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "app"},
		Rewrite: []v1alpha1.ExternalSecretRewrite{transform("{{ .nothing.here }}")}}}}
	if _, err := RenderFound(spec, objs, nil, nil, time.Time{}); !errors.As(err, &te) {
		t.Errorf("err = %v, want a TemplateError", err)
	}
}
