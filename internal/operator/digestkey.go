package operator

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
)

// The keys of the digest key Secret: the current key, and the one before
// a rotation, which still matches the digests made with it.
const (
	digestKeyField      = "key"
	digestPreviousField = "previous-key"
	// digestKeyBytes is the size of a key the operator makes.
	digestKeyBytes = 32
	// digestKeyMinBytes is the least a key given by hand may hold: the
	// key ID that every digest shows must not let anyone test guesses of
	// a short key.
	digestKeyMinBytes = 32
	// digestKeyReload is how often the Secret is read again, for a
	// rotation to take effect, unless the options say otherwise.
	digestKeyReload = time.Minute
)

// addDigestKeys returns the installation's digest keys, loaded from the
// Secret at name (made with a new random key when it does not exist) and
// read again every minute (or every), so that a rotation (docs/operations.md) takes
// effect without a restart. Without a name, the keys stay empty: digests
// are plain SHA-256.
func addDigestKeys(ctx context.Context, mgr ctrl.Manager, name types.NamespacedName, every time.Duration) (*engine.DigestKeys, error) {
	keys := &engine.DigestKeys{}
	if name.Name == "" {
		return keys, nil
	}
	c := mgr.GetAPIReader()
	w := mgr.GetClient()
	load := func(ctx context.Context) error { return loadDigestKeys(ctx, c, w, name, keys) }
	if err := load(ctx); err != nil {
		// Not fatal: the digests are plain until the key can be read,
		// and the error says what to grant or fix.
		ctrl.Log.WithName("digest-key").Error(err, "cannot load the digest key; digests in status are plain SHA-256 until it can be", "secret", name.String())
	}
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if every <= 0 {
			every = digestKeyReload
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if err := load(ctx); err != nil {
					ctrl.Log.WithName("digest-key").Error(err, "cannot read the digest key again; the last one read stays in use", "secret", name.String())
				}
			}
		}
	}))
	return keys, err
}

// loadDigestKeys reads the Secret into keys, making it first when it does
// not exist. Two replicas starting at once both try: one creates it, the
// other reads it.
func loadDigestKeys(ctx context.Context, c client.Reader, w client.Writer, name types.NamespacedName, keys *engine.DigestKeys) error {
	var s corev1.Secret
	err := c.Get(ctx, name, &s)
	if apierrors.IsNotFound(err) {
		secret := make([]byte, digestKeyBytes)
		if _, err = rand.Read(secret); err != nil {
			return err
		}
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name,
			// The label the admission policy requires of a Secret the
			// operator creates (config/policy).
			Labels: map[string]string{conditions.ManagedByLabel: conditions.ManagedByValue, "app.kubernetes.io/component": "digest-key"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{digestKeyField: secret}}
		err = w.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) {
			err = c.Get(ctx, name, &s)
		}
	}
	if err != nil {
		return fmt.Errorf("reading or making Secret %s: %s", name, apierrors.ReasonForError(err))
	}
	cur := s.Data[digestKeyField]
	if len(cur) < digestKeyMinBytes {
		return fmt.Errorf("the Secret %s: key %q must hold at least %d random bytes (the operator makes %d when the Secret does not exist)",
			name, digestKeyField, digestKeyMinBytes, digestKeyBytes)
	}
	var prev *engine.DigestKey
	if p := s.Data[digestPreviousField]; len(p) > 0 {
		k := engine.NewDigestKey(p)
		prev = &k
	}
	keys.Set(engine.NewDigestKey(cur), prev)
	return nil
}
