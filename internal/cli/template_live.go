package cli

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// LiveTemplateInput is what `watchword template --live` renders: an
// ExternalSecret manifest whose data is read from its store.
type LiveTemplateInput struct {
	// ExternalSecret is the manifest (YAML or JSON).
	ExternalSecret []byte
	// Namespace is the ExternalSecret's namespace when its manifest names
	// none.
	Namespace string
	// ConfigMaps are ConfigMap manifests for templateFrom; a ConfigMap
	// that templateFrom names and that is not among them is read from
	// the cluster.
	ConfigMaps [][]byte
	// ShowValues prints the values of the rendered Secret; without it,
	// only keys and sizes.
	ShowValues bool
}

// LiveStore is the read side of a store's client: TemplateLive only
// reads, one remote object at a time.
type LiveStore interface {
	GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error)
}

// liveMetadata reads the metadata of ref (metadataPolicy Fetch) where the
// store keeps it, and says so where it does not, as a sync would.
func liveMetadata(ctx context.Context, store LiveStore, ref engine.Ref) (engine.Object, error) {
	m, ok := store.(engine.MetadataReader)
	if !ok {
		return engine.Object{}, fmt.Errorf("%w: metadataPolicy Fetch: the store does not have the fetchMetadata capability", engine.ErrNotSupported)
	}
	return m.GetMetadata(ctx, ref)
}

// LiveCluster gives TemplateLive what it reads from the cluster: the
// ExternalSecret's store, with a client built as the controller builds it
// (close releases it), and the ConfigMaps templateFrom names.
type LiveCluster interface {
	Store(ctx context.Context, namespace string, ref v1alpha1.StoreRef) (store LiveStore, describe string, release func(), err error)
	ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error)
}

// TemplateLive renders the target Secret of an ExternalSecret from the
// data its store holds now, read through the store's provider, and writes
// it to out as Template does: keys and sizes, values only when asked. It
// only reads: the ExternalSecret need not exist in the cluster, and
// nothing is written to the store or the cluster.
func TemplateLive(ctx context.Context, in LiveTemplateInput, cluster LiveCluster, out io.Writer) error {
	es, err := readExternalSecret(in.ExternalSecret)
	if err != nil {
		return err
	}
	ns := es.Namespace
	if ns == "" {
		ns = in.Namespace
	}
	store, describe, closeStore, err := cluster.Store(ctx, ns, es.Spec.SecretStoreRef)
	if err != nil {
		class, msg := failure.Describe(err)
		return fmt.Errorf("the ExternalSecret's store (namespace %q): %s: %s", ns, class.Reason, msg)
	}
	defer closeStore()
	objs := map[engine.Ref]engine.Object{}
	for _, ref := range engine.Refs(&es.Spec) {
		var obj engine.Object
		var gerr error
		if ref.Metadata {
			obj, gerr = liveMetadata(ctx, store, ref)
		} else {
			obj, gerr = store.GetSecret(ctx, ref)
		}
		if gerr != nil {
			// As in a condition: the reason and the redacted message,
			// since a store's error may repeat what it was sent.
			class, msg := failure.Describe(gerr)
			return fmt.Errorf("reading remote key %q from %s: %s: %s", ref.Key, describe, class.Reason, msg)
		}
		objs[ref] = obj
	}
	sources, err := configMapSources(in.ConfigMaps)
	if err != nil {
		return err
	}
	if tmpl := es.Spec.Target.Template; tmpl != nil {
		for _, from := range tmpl.TemplateFrom {
			if from.ConfigMap == nil {
				// Template Secrets are not read: the sync reports one.
				continue
			}
			name := from.ConfigMap.Name
			if _, ok := sources[name]; ok {
				continue
			}
			data, err := cluster.ConfigMap(ctx, ns, name)
			if err != nil {
				return fmt.Errorf("reading ConfigMap %s/%s that templateFrom names: %w", ns, name, err)
			}
			sources[name] = data
		}
	}
	fmt.Fprintf(out, "read from %s\n", describe)
	return render(es, objs, sources, in.ShowValues, out)
}

// ClusterReader is the LiveCluster of a cluster: stores are resolved and
// their clients built as the controller resolves and builds them (the
// store read from the API server, its credentials from the Secrets its
// spec names), with the caller's identity, which needs to read them.
type ClusterReader struct {
	Client   client.Reader
	Kube     kubernetes.Interface
	Config   *rest.Config
	Registry provider.Registry
}

// Store resolves the store an ExternalSecret of namespace names, and
// builds its client.
func (c ClusterReader) Store(ctx context.Context, namespace string, ref v1alpha1.StoreRef) (LiveStore, string, func(), error) {
	r, err := storeaccess.Resolve(ctx, c.Client, namespace, ref)
	if err != nil {
		return nil, "", nil, err
	}
	name, ops, err := storeaccess.Ops(ctx, c.Registry, c.Client, c.Kube, c.Config, r)
	if err != nil {
		return nil, "", nil, err
	}
	closeOps := func() {
		if ops.Closer != nil {
			// Nothing was written; a failure to release is no outcome.
			_ = ops.Closer.Close()
		}
	}
	var store LiveStore = ops.Reader
	if ops.Metadata != nil {
		store = liveReaders{Reader: ops.Reader, MetadataReader: ops.Metadata}
	}
	return store, r.Describe() + " (" + name + ")", closeOps, nil
}

// liveReaders is a store's reader with its metadata reader, for
// metadataPolicy Fetch.
type liveReaders struct {
	engine.Reader
	engine.MetadataReader
}

// StoredExternalSecret reads an ExternalSecret of the cluster as a
// manifest for TemplateLive: its metadata's name and namespace, and its
// spec as stored.
func StoredExternalSecret(ctx context.Context, c client.Reader, namespace, name string) ([]byte, error) {
	var es v1alpha1.ExternalSecret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &es); err != nil {
		return nil, fmt.Errorf("reading ExternalSecret %s/%s: %w", namespace, name, err)
	}
	manifest := v1alpha1.ExternalSecret{TypeMeta: es.TypeMeta, Spec: es.Spec}
	manifest.Name, manifest.Namespace = es.Name, es.Namespace
	return yaml.Marshal(manifest)
}

// ConfigMap reads a ConfigMap's data.
func (c ClusterReader) ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}
