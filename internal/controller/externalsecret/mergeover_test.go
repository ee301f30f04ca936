package externalsecret

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/internal/conditions"
)

// TestMergeOverKeysOfAnotherOwner: a Merge may write keys the Secret does
// not hold, keys an ExternalSecret merged before (its own; another's are
// refused by the claims check that follows), and any key once the
// Secret's owner allows it; a key the Secret held before any merge is
// refused, named, with the annotation that allows it.
func TestMergeOverKeysOfAnotherOwner(t *testing.T) {
	secret := func(annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Annotations: annotations},
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "merged": []byte("m")}}
	}
	claims := map[string][]string{"other": {"merged"}}
	for _, tc := range []struct {
		name      string
		s         *corev1.Secret
		ours      []string
		fragments []string // nil: allowed
	}{
		{"new keys", secret(nil), []string{"ca.crt", "extra"}, nil},
		{"keys an ExternalSecret merged", secret(nil), []string{"merged"}, nil},
		{"one key of the owner", secret(nil), []string{"ca.crt", "tls.key"}, []string{`key "tls.key" of Secret "tls" already holds`, conditions.AllowWriteAnnotation}},
		{"two keys of the owner", secret(nil), []string{"tls.crt", "tls.key"}, []string{`keys "tls.crt", "tls.key" of Secret "tls" already hold`}},
		{"the owner allows it", secret(map[string]string{conditions.AllowWriteAnnotation: "true"}), []string{"tls.key"}, nil},
		{"an annotation that allows nothing", secret(map[string]string{conditions.AllowWriteAnnotation: "yes"}), []string{"tls.key"}, []string{`key "tls.key"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMergeOver(tc.s, claims, tc.ours)
			if tc.fragments == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("allowed")
			}
			for _, f := range tc.fragments {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("%q lacks %q", err.Error(), f)
				}
			}
			if strings.Contains(err.Error(), `"k"`) {
				t.Errorf("the error repeats a value: %q", err.Error())
			}
		})
	}
}
