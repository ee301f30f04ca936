package externalsecret

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/internal/failure"
)

func TestImmutableChange(t *testing.T) {
	secret := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	many := map[string]string{}
	for i := range 12 {
		many[fmt.Sprintf("k%02d", i)] = "NEW-VALUE"
	}
	cases := []struct {
		name    string
		cur     *corev1.Secret
		desired *corev1.Secret
		want    string
	}{
		{name: "same data", cur: secret("Opaque", map[string]string{"a": "1"}), desired: secret("Opaque", map[string]string{"a": "1"})},
		{name: "a changed value", cur: secret("Opaque", map[string]string{"a": "1", "b": "2"}), desired: secret("Opaque", map[string]string{"a": "NEW-VALUE", "b": "2"}),
			want: `Secret "app" is immutable (spec.target.immutable) and the data to write differs in keys a: it keeps its data`},
		{name: "a key added and one removed", cur: secret("Opaque", map[string]string{"a": "1"}), desired: secret("Opaque", map[string]string{"b": "NEW-VALUE"}),
			want: "differs in keys a, b:"},
		{name: "many keys", cur: secret("Opaque", nil), desired: secret("Opaque", many), want: "k00, k01, k02, k03, k04, k05, k06, k07, k08, k09 and 2 more:"},
		{name: "another type", cur: secret("Opaque", map[string]string{"a": "1"}), desired: secret("kubernetes.io/tls", map[string]string{"a": "1"}),
			want: "now writes type kubernetes.io/tls, not Opaque"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := immutableChange("app", tc.cur, tc.desired)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Reason != failure.TargetImmutable || !fe.Terminal {
				t.Fatalf("err = %v, want a terminal TargetImmutable", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "NEW-VALUE") {
				t.Errorf("err = %q holds a value", err)
			}
		})
	}
}
