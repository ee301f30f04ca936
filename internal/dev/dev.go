// Package dev runs Watchword on a local embedded control plane: a real etcd
// and kube-apiserver, the CRDs, the operator in-process and the demo of
// examples/dev: a store and an ExternalSecret, a PushSecret publishing to
// another namespace, and a rotation.
package dev

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
)

// Options configure a dev run.
type Options struct {
	AssetsDir     string
	CRDDir        string
	ExamplesDir   string
	WorkDir       string
	ExitAfterDemo bool
	Timeout       time.Duration
	Operator      operator.Options
}

// Run starts everything, applies the demo, shows the result, and waits for
// ctx to end (or returns once the demo synced, with ExitAfterDemo).
func Run(ctx context.Context, o Options, out io.Writer) error {
	examples, err := findExamples(o.ExamplesDir)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "starting etcd, kube-apiserver and kube-controller-manager on loopback…")
	cluster, err := localcluster.Start(localcluster.Options{AssetsDir: o.AssetsDir, CRDDir: o.CRDDir})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping the local control plane…")
		_ = cluster.Stop()
	}()
	kcPath, err := writeKubeconfig(cluster, o.WorkDir)
	if err != nil {
		return err
	}
	opCtx, stopOp := context.WithCancel(ctx)
	defer stopOp()
	op, err := operator.New(opCtx, cluster.Config, o.Operator)
	if err != nil {
		return err
	}
	opDone := make(chan error, 1)
	go func() { opDone <- op.Start(opCtx) }()
	// Stop the operator before the control plane under it.
	defer func() {
		stopOp()
		select {
		case <-opDone: //nolint:errcheck // stopOp ended it: its error is that cancellation
		case <-time.After(30 * time.Second):
		}
	}()

	c, err := client.New(cluster.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}
	applied, err := apply(ctx, c, examples)
	if err != nil {
		return err
	}
	for _, a := range applied {
		fmt.Fprintln(out, "applied", a)
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	esList, err := waitSynced(ctx, c, timeout)
	if err != nil {
		if o.ExitAfterDemo {
			return err
		}
		fmt.Fprintln(out, "demo not synced:", err)
	} else {
		for _, es := range esList {
			if err := show(ctx, c, out, &es); err != nil {
				return err
			}
		}
		if err := demoMore(ctx, c, out, timeout); err != nil {
			if o.ExitAfterDemo {
				return err
			}
			fmt.Fprintln(out, "demo:", err)
		}
	}
	fmt.Fprintf(out, "\nkubeconfig: %s\nlook around with:\n  %s --kubeconfig %s get externalsecrets,pushsecrets,secretstores,secrets -A\n",
		kcPath, cluster.KubectlPath(), kcPath)
	if o.ExitAfterDemo {
		fmt.Fprintln(out, "demo synced; exiting (--exit-after-demo)")
		return nil
	}
	fmt.Fprintln(out, "running until interrupted (Ctrl-C)…")
	select {
	case <-ctx.Done():
		return nil
	case err := <-opDone:
		opDone <- err // let the deferred wait see it
		return err
	}
}

func findExamples(dir string) ([]string, error) {
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "examples", "dev")); err == nil {
				dir = filepath.Join(d, "examples", "dev")
				break
			}
			if filepath.Dir(d) == d {
				return nil, errors.New("no examples/dev folder above the working directory; pass --examples")
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no YAML files in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

func writeKubeconfig(cluster *localcluster.Cluster, dir string) (string, error) {
	kc, err := cluster.Kubeconfig()
	if err != nil {
		return "", err
	}
	if err = os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, kc, 0o600)
}

// apply creates every object of the given YAML files.
func apply(ctx context.Context, c client.Client, files []string) ([]string, error) {
	var done []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(strings.TrimSpace(string(doc))) == 0 {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Create(ctx, u); err != nil {
				return nil, fmt.Errorf("creating %s %s from %s: %w", u.GetKind(), u.GetName(), filepath.Base(f), err)
			}
			done = append(done, fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()))
		}
	}
	return done, nil
}

// waitSynced waits until every ExternalSecret is Ready, or one fails.
func waitSynced(ctx context.Context, c client.Client, timeout time.Duration) ([]v1alpha1.ExternalSecret, error) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		var list v1alpha1.ExternalSecretList
		if err := c.List(ctx, &list); err != nil {
			return nil, err
		}
		ready := len(list.Items) > 0
		for _, es := range list.Items {
			cond := findReady(es.Status.Conditions)
			if cond == nil || cond.Status != metav1.ConditionTrue {
				ready = false
				if cond != nil {
					last = fmt.Sprintf("ExternalSecret %s/%s: %s: %s", es.Namespace, es.Name, cond.Reason, cond.Message)
				}
			}
		}
		if ready {
			return list.Items, nil
		}
		if time.Now().After(deadline) {
			if last == "" {
				last = "no ExternalSecret reported a condition"
			}
			return nil, fmt.Errorf("demo did not sync within %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func findReady(conds []v1alpha1.ExternalSecretCondition) *v1alpha1.ExternalSecretCondition {
	for i := range conds {
		if conds[i].Type == v1alpha1.ConditionReady {
			return &conds[i]
		}
	}
	return nil
}

// show prints the synced Secret's keys and sizes, never its values.
func show(ctx context.Context, c client.Client, out io.Writer, es *v1alpha1.ExternalSecret) error {
	fmt.Fprintf(out, "\nExternalSecret %s/%s is %s (store %s)\n", es.Namespace, es.Name, es.Status.Phase, es.Spec.SecretStoreRef.Name)
	if es.Status.Target == "" {
		return nil
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Status.Target}, &s); err != nil {
		return err
	}
	fmt.Fprintf(out, "  Secret %s/%s (type %s):\n", s.Namespace, s.Name, s.Type)
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "    %-24s %d bytes\n", k, len(s.Data[k]))
	}
	for _, v := range es.Status.Versions {
		fmt.Fprintf(out, "  read %s at version %s\n", v.Key, v.Version)
	}
	return nil
}

// demoMore shows the rest of the product once the ExternalSecrets synced:
// the PushSecrets publishing, and a rotation (a new version in the demo's
// fake store reaching its target, with the Rotated event).
func demoMore(ctx context.Context, c client.Client, out io.Writer, timeout time.Duration) error {
	var pushes v1alpha1.PushSecretList
	if err := c.List(ctx, &pushes); err != nil {
		return err
	}
	for _, ps := range pushes.Items {
		if err := poll(ctx, timeout, func() (bool, string, error) {
			var cur v1alpha1.PushSecret
			if err := c.Get(ctx, client.ObjectKeyFromObject(&ps), &cur); err != nil {
				return false, "", err
			}
			cond := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady)
			if cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == cur.Generation {
				for _, d := range cur.Status.Destinations {
					fmt.Fprintf(out, "\nPushSecret %s/%s published Secret %s to remote secret %q of %s %q\n", cur.Namespace, cur.Name, cur.Spec.SecretName, d.Name, d.StoreKind, d.StoreName)
				}
				return true, "", nil
			}
			why := "no Ready condition yet"
			if cond != nil {
				why = cond.Reason + ": " + cond.Message
			}
			return false, fmt.Sprintf("PushSecret %s/%s: %s", cur.Namespace, cur.Name, why), nil
		}); err != nil {
			return err
		}
	}
	return rotate(ctx, c, out, timeout)
}

// rotate adds a new version of the first key of the demo's fake store, and
// waits for an ExternalSecret's Rotated event.
func rotate(ctx context.Context, c client.Client, out io.Writer, timeout time.Duration) error {
	var stores v1alpha1.SecretStoreList
	if err := c.List(ctx, &stores); err != nil {
		return err
	}
	for _, s := range stores.Items {
		if s.Spec.Fake == nil || len(s.Spec.Fake.Data) == 0 {
			continue
		}
		last := s.Spec.Fake.Data[len(s.Spec.Fake.Data)-1]
		for _, d := range s.Spec.Fake.Data {
			if d.Key == s.Spec.Fake.Data[0].Key {
				last = d
			}
		}
		next := last
		next.Version = ""
		next.Value = rotatedValue(last.Value)
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, next)
		if err := c.Update(ctx, &s); err != nil {
			return fmt.Errorf("adding a version to store %s/%s: %w", s.Namespace, s.Name, err)
		}
		fmt.Fprintf(out, "\nrotating: a new version of %q in SecretStore %s/%s…\n", next.Key, s.Namespace, s.Name)
		return poll(ctx, timeout, func() (bool, string, error) {
			var events corev1.EventList
			if err := c.List(ctx, &events, client.InNamespace(s.Namespace)); err != nil {
				return false, "", err
			}
			for _, e := range events.Items {
				if e.Reason == "Rotated" && e.InvolvedObject.Kind == "ExternalSecret" {
					fmt.Fprintf(out, "  event Rotated on ExternalSecret %s: %s\n", e.InvolvedObject.Name, e.Message)
					return true, "", nil
				}
			}
			return false, "no Rotated event yet", nil
		})
	}
	return nil
}

// poll calls check until it is done, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() (done bool, why string, err error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, why, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done within %s: %s", timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rotatedValue is a new value for the demo's rotation: a JSON object gets
// a new "password" field, anything else a suffix.
func rotatedValue(v string) string {
	stamp := time.Now().UTC().Format("150405")
	var obj map[string]any
	if json.Unmarshal([]byte(v), &obj) == nil {
		if _, ok := obj["password"]; ok {
			obj["password"] = "rotated-at-" + stamp
			if b, err := json.Marshal(obj); err == nil {
				return string(b)
			}
		}
	}
	return v + "-" + stamp
}
