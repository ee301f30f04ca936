package failure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// canary stands for a secret value that a store or the API server repeats
// in an error.
const canary = "s3cr3t-CANARY-value"

type classified struct{}

func (classified) Error() string       { return "classified" }
func (classified) FailureClass() Class { return Class{Reason: TemplateError, Terminal: true} }

type storeError struct{}

func (storeError) Error() string    { return "store refused value " + canary }
func (storeError) SafeText() string { return "store refused the value (400)" }

func TestClassify(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "labels"), canary, "a valid label must be 63 characters or less"),
	})
	cases := []struct {
		name     string
		err      error
		reason   Reason
		terminal bool
	}{
		{"nil", nil, Synced, false},
		{"not found", fmt.Errorf("key %q: %w", "db", ErrNotFound), NotFound, false},
		{"permission denied", ErrPermissionDenied, PermissionDenied, false},
		{"unavailable", ErrUnavailable, StoreUnavailable, false},
		{"throttled", ErrThrottled, Throttled, false},
		{"invalid config", ErrInvalidConfig, InvalidStoreConf, true},
		{"not supported is terminal", fmt.Errorf("write: %w", ErrNotSupported), NotSupported, true},
		{"not owned", ErrNotOwned, NotOwned, true},
		{"not implemented", ErrNotImplemented, NotImplemented, true},
		{"own terminal", Terminalf(TargetConflict, "taken"), TargetConflict, true},
		{"own retry", Retryf(DependencyMissing, "waiting"), DependencyMissing, false},
		{"wrapped own", fmt.Errorf("store: %w", Terminalf(StoreNotFound, "gone")), StoreNotFound, true},
		{"classified type", fmt.Errorf("x: %w", classified{}), TemplateError, true},
		{"api conflict", apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "app", errors.New("changed")), WriteConflict, false},
		{"api invalid", invalid, KubernetesAPI, true},
		{"api forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "app", errors.New("no")), PermissionDenied, false},
		{"target write invalid", Rejected(fmt.Errorf("updating Secret %q: %w", "app", invalid), TargetRejected), TargetRejected, true},
		{"target write forbidden", Rejected(apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "app", errors.New("no")), TargetRejected), TargetRejected, false},
		{"target write conflict", Rejected(apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "app", errors.New("changed")), TargetRejected), WriteConflict, false},
		{"api other", apierrors.NewServiceUnavailable("busy"), KubernetesAPI, false},
		{"canceled", context.Canceled, ReconcileCanceled, false},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), StoreUnavailable, false},
		{"unknown", errors.New("boom"), ProviderError, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(tc.err)
			if c.Reason != tc.reason || c.Terminal != tc.terminal {
				t.Errorf("Classify = %+v, want reason %s terminal %v", c, tc.reason, tc.terminal)
			}
			if Terminal(tc.err) != tc.terminal {
				t.Errorf("Terminal = %v, want %v", Terminal(tc.err), tc.terminal)
			}
		})
	}
}

func TestRejectedRedactsAndKeepsTheCause(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "labels"), canary, "a valid label must be 63 characters or less"),
	})
	err := Rejected(fmt.Errorf("updating Secret %q: %w", "app", invalid), TargetRejected)
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("Rejected = %q repeats the value", err)
	}
	if !strings.Contains(err.Error(), `updating Secret "app": the API server answered Invalid`) {
		t.Errorf("Rejected = %q, want what was refused and why", err)
	}
	if !errors.Is(err, invalid) {
		t.Error("Rejected lost the cause")
	}
	if other := errors.New("boom"); Rejected(other, TargetRejected) != other {
		t.Error("Rejected changed an error that is not a refusal")
	}
}

func TestRedactDropsEchoedValues(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "labels"), canary, "a valid label must be 63 characters or less"),
	})
	cases := []struct {
		name string
		err  error
		// want are fragments the redacted text keeps.
		want []string
	}{
		{"api invalid, wrapped", fmt.Errorf("updating Secret %q: %w", "app", invalid),
			[]string{`updating Secret "app": the API server answered Invalid for Secret "app"`, "metadata.labels: FieldValueInvalid"}},
		{"api invalid, bare", invalid, []string{"the API server answered Invalid"}},
		{"secret too large", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{field.TooLong(field.NewPath("data"), canary, 1<<20)}),
			[]string{`Invalid for Secret "app" (data: FieldValueTooLong): a Secret holds at most 1 MiB of data in all`}},
		{"secret key invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{field.Invalid(field.NewPath("data").Key("../x"), canary, "a valid config key")}),
			[]string{`(data[../x]: FieldValueInvalid): a Secret key may hold only letters, digits, '-', '_' and '.'; rename the key`}},
		{"store error, wrapped", fmt.Errorf("remote key %q: %w", "db", storeError{}), []string{`remote key "db": store refused the value (400)`}},
		{"joined", errors.Join(errors.New("first"), invalid), []string{"first", "the API server answered Invalid"}},
		{"own message kept", fmt.Errorf("store: %w", &Error{Class: Class{Reason: TargetRejected}, Msg: "refused", Err: invalid}),
			[]string{"store: refused"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.err)
			if strings.Contains(got, canary) {
				t.Fatalf("Redact = %q repeats the value", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Redact = %q, want it to contain %q", got, w)
				}
			}
			red := Redacted(tc.err)
			if strings.Contains(red.Error(), canary) {
				t.Errorf("Redacted = %q repeats the value", red)
			}
			if Classify(red) != Classify(tc.err) {
				t.Errorf("Redacted changed the class: %+v, was %+v", Classify(red), Classify(tc.err))
			}
			if !errors.Is(red, tc.err) {
				t.Error("Redacted lost the cause")
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	class, msg := Describe(fmt.Errorf("SecretStore %q: %w", "ns/s", ErrNotSupported))
	if class.Reason != NotSupported || !class.Terminal || msg != `SecretStore "ns/s": not supported by this store` {
		t.Fatalf("Describe = %+v, %q", class, msg)
	}
}
