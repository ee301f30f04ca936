package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/operator"
)

// bareOperatorArg, as the first argument, runs this binary as the bare
// operator instead of the benchmark.
const bareOperatorArg = "bare-operator"

// bareOperator, when set (-operator bare), makes the sync's operator the
// bare one instead of Watchword.
var bareOperator bool

// bareWorkers is the bare operator's concurrent syncs: Watchword's
// default.
const bareWorkers = 16

// runBare is the least an operator can do for the benchmark's sync, to
// measure what any operator on this machine would reach of the
// three-write bound: one informer on ExternalSecrets (managedFields
// stripped, as Watchword's cache does), a work queue and sixteen workers.
// Each new ExternalSecret gets its target, with the labels, owner
// annotation and owner reference Watchword writes and the value the
// benchmark's store holds for its key, computed here with no store, and
// then the status the bound's status update writes, not reading the
// answer back. It watches no Secret, reads no store, sends no event and
// writes nothing else: what it spends beyond the three writes is the cost
// of being told about ExternalSecrets at all. It serves empty metrics, so
// that the benchmark sees it up.
func runBare(args []string) error {
	fs := flag.NewFlagSet(bareOperatorArg, flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	metricsAddr := fs.String("metrics-bind-address", "", "address of the (empty) metrics endpoint")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100000, 100000
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _ = http.ListenAndServe(*metricsAddr, promhttp.Handler()) }()

	k8s, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	status, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("ExternalSecret"), false, false,
		cfg, serializer.NewCodecFactory(operator.Scheme()), hc)
	if err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: operator.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.ExternalSecret{})
	if err != nil {
		return err
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer q.ShutDown()
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if es, ok := obj.(*v1alpha1.ExternalSecret); ok && es.Status.RefreshTime == nil {
			q.Add(types.NamespacedName{Namespace: es.Namespace, Name: es.Name})
		}
	}}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return errors.New("the cache did not sync")
	}
	for range bareWorkers {
		go func() {
			for {
				key, shut := q.Get()
				if shut {
					return
				}
				if err := bareSync(ctx, k8s, status, c, key); err != nil {
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// bareSync writes the target of one ExternalSecret and then its status,
// a PUT of the status subresource whose answer is not decoded: nothing
// later needs it.
func bareSync(ctx context.Context, k8s client.Client, status rest.Interface, c cache.Cache, name types.NamespacedName) error {
	var es v1alpha1.ExternalSecret
	if err := c.Get(ctx, name, &es); err != nil {
		return client.IgnoreNotFound(err)
	}
	if es.Status.RefreshTime != nil || len(es.Spec.Data) == 0 {
		return nil
	}
	var key int // the benchmark's keys are key-N, holding value-N
	if _, err := fmt.Sscanf(es.Spec.Data[0].RemoteRef.Key, "key-%d", &key); err != nil {
		return err
	}
	target := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: es.Namespace, Name: es.Name,
		Labels:      map[string]string{conditions.ManagedByLabel: conditions.ManagedByValue},
		Annotations: map[string]string{conditions.OwnerAnnotation: es.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(&es,
			v1alpha1.GroupVersion.WithKind("ExternalSecret"))},
	}, Data: map[string][]byte{es.Spec.Data[0].SecretKey: fmt.Appendf(nil, "value-%d", key)}}
	if err := k8s.Create(ctx, target); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	es.Status = syncedStatus(&es, key)
	es.Status.TargetResourceVersion = target.ResourceVersion
	return status.Put().Namespace(es.Namespace).Resource("externalsecrets").Name(es.Name).
		SubResource("status").Body(&es).Do(ctx).Error()
}
