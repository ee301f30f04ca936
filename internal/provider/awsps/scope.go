package awsps

import (
	"context"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// scoped confines ops to the hierarchy /SCOPE/: a publisher of namespace
// team-a that names /app/db (or app/db) writes /team-a/app/db. The
// engine's default scope, a "team-a." prefix, would make names that
// Parameter Store refuses ("team-a./app/db"); a path segment is its own
// way of keeping tenants apart. Keys with an empty, "." or ".." segment
// are refused by engine.PrefixKeys.
func scoped(ops engine.Ops, scope string) engine.Ops {
	in := engine.PrefixKeys(ops, "/"+scope+"/")
	out := engine.Ops{Reader: relReader{in.Reader}, Checker: in.Checker, BatchLimit: in.BatchLimit}
	if in.Batch != nil {
		out.Batch = relBatch{in.Batch}
	}
	if in.Versions != nil {
		out.Versions = relVersions{in.Versions}
	}
	if in.Writer != nil {
		out.Writer = relWriter{in.Writer}
	}
	return out
}

func rel(key string) string { return strings.TrimPrefix(key, "/") }

type relReader struct{ inner engine.Reader }

func (r relReader) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	ref.Key = rel(ref.Key)
	return r.inner.GetSecret(ctx, ref)
}

type relBatch struct{ inner engine.BatchReader }

func (r relBatch) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	in := make([]engine.Ref, len(refs))
	for i, ref := range refs {
		ref.Key = rel(ref.Key)
		in[i] = ref
	}
	return r.inner.GetSecrets(ctx, in)
}

type relVersions struct{ inner engine.VersionReader }

func (r relVersions) CurrentVersion(ctx context.Context, key string) (string, error) {
	return r.inner.CurrentVersion(ctx, rel(key))
}

type relWriter struct{ inner engine.Writer }

func (r relWriter) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	return r.inner.PutSecret(ctx, rel(key), p, owner)
}

func (r relWriter) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	return r.inner.DeleteSecret(ctx, rel(key), owner)
}
