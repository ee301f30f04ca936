package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// The control plane runs the workload controllers (Deployments,
// ReplicaSets, StatefulSets, DaemonSets) but no scheduler and no kubelet,
// so their pods would stay Pending and no rollout would finish. The test
// node stands in for both, for the namespaces of the tests that ask for
// it: one Node object (shared, so that a DaemonSet has exactly one pod),
// and per namespace a loop that binds the Pending pods to it, reports
// them Running and Ready (or Running and not Ready, when a test wants a
// rollout to get stuck), and finishes the deletion of the pods being
// deleted, as a kubelet does once their containers have stopped. No
// container runs. Everything the workload controllers then write
// (ReplicaSets, pod replacement, status) is their own.

// testNodeName is the one test node of the suite.
const testNodeName = "watchword-test-node"

var testNodeOnce struct {
	sync.Once
	err error
}

// registerTestNode creates the Node, Ready, once for the suite. Nothing
// marks it unreachable later: the node lifecycle controller does not run.
func registerTestNode() error {
	testNodeOnce.Do(func() {
		now := metav1.Now()
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: testNodeName, Labels: map[string]string{"kubernetes.io/hostname": testNodeName}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000"), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")},
				Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000"), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "TestNodeReady",
					LastHeartbeatTime: now, LastTransitionTime: now}},
			},
		}
		ctx := context.Background()
		created, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return
		}
		if err != nil {
			testNodeOnce.err = fmt.Errorf("registering the test node: %w", err)
			return
		}
		// Status is not taken on create.
		created.Status = n.Status
		if created, err = kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			testNodeOnce.err = fmt.Errorf("reporting the test node Ready: %w", err)
			return
		}
		// The API server taints a new node not-ready (TaintNodesByCondition)
		// until the node lifecycle controller, which does not run here,
		// sees it Ready: a DaemonSet would place no pod on it.
		created.Spec.Taints = nil
		if _, err = kube.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			testNodeOnce.err = fmt.Errorf("removing the not-ready taint of the test node: %w", err)
		}
	})
	return testNodeOnce.err
}

// podRunner runs the pods of one namespace on the test node.
type podRunner struct {
	ns     string
	lister cacheLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// stalled holds, per value of the pods' "app" label, the pods that
	// existed when stall was called: the pods made after them are
	// reported Running but not Ready until release.
	stalled map[string]map[types.UID]bool
	// draining: the test is over; the runner only finishes deletions.
	draining bool
}

type cacheLister interface {
	GetByKey(key string) (item any, exists bool, err error)
	List() []any
}

// runPods runs the pods of ns on the test node until the test ends. Then
// it goes on finishing the deletion of the namespace's pods, so that the
// namespace can go, for at most drainFor.
func runPods(t *testing.T, ns string) *podRunner {
	t.Helper()
	must(t, registerTestNode())
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	r := &podRunner{ns: ns, lister: inf.GetStore(), stalled: map[string]map[types.UID]bool{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r.next() {
		}
	}()
	t.Cleanup(func() {
		r.mu.Lock()
		r.draining = true
		r.mu.Unlock()
		// The namespace is deleted after this; its pods are deleted with
		// it, and each deletion waits for this runner to finish it.
		go func() {
			for deadline := time.Now().Add(drainFor); time.Now().Before(deadline); time.Sleep(time.Second) {
				if _, err := kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					break
				}
			}
			r.queue.ShutDown()
			close(stop)
			<-done
			factory.Shutdown()
		}()
	})
	return r
}

// drainFor bounds how long a runner goes on after its test, finishing
// the deletion of the namespace's pods.
const drainFor = 2 * time.Minute

func (r *podRunner) next() bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(key); err != nil {
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync does for one pod what the scheduler or the kubelet would do next.
func (r *podRunner) sync(key string) error {
	obj, exists, err := r.lister.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod := obj.(*corev1.Pod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := kube.CoreV1().Pods(pod.Namespace)
	r.mu.Lock()
	draining := r.draining
	r.mu.Unlock()
	switch {
	case pod.DeletionTimestamp != nil:
		// The containers have stopped: the kubelet deletes the pod for good.
		err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case draining:
		return nil
	case pod.Spec.NodeName == "":
		err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: testNodeName}}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case pod.Spec.NodeName != testNodeName:
		return nil
	}
	ready := r.ready(pod)
	if pod.Status.Phase == corev1.PodRunning && podReady(pod) == ready {
		return nil
	}
	pod = pod.DeepCopy()
	pod.Status = runningStatus(pod, ready)
	_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// A newer version is on its way, and with it another sync.
		return nil
	}
	return err
}

// ready tells whether the pod is to be reported Ready.
func (r *podRunner) ready(pod *corev1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, ok := r.stalled[pod.Labels["app"]]
	return !ok || before[pod.UID]
}

// stall keeps the pods of app (their "app" label) made from now on
// Running but not Ready, as when a new version does not come up: a
// rollout that needs them does not finish.
func (r *podRunner) stall(app string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := map[types.UID]bool{}
	for _, obj := range r.lister.List() {
		if pod := obj.(*corev1.Pod); pod.Labels["app"] == app {
			before[pod.UID] = true
		}
	}
	r.stalled[app] = before
}

// release reports the pods of app Ready again.
func (r *podRunner) release(app string) {
	r.mu.Lock()
	delete(r.stalled, app)
	r.mu.Unlock()
	for _, obj := range r.lister.List() {
		if pod := obj.(*corev1.Pod); pod.Labels["app"] == app {
			r.queue.Add(pod.Namespace + "/" + pod.Name)
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningStatus is the status a kubelet reports for the pod once its
// containers run (and pass their readiness checks when ready).
func runningStatus(pod *corev1.Pod, ready bool) corev1.PodStatus {
	now := metav1.Now()
	started := pod.Status.StartTime
	if started == nil {
		started = &now
	}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		for _, c := range pod.Status.Conditions {
			if c.Type == t && c.Status == s {
				return c
			}
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: started,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, corev1.ConditionTrue),
			cond(corev1.PodInitialized, corev1.ConditionTrue),
			cond(corev1.ContainersReady, readyStatus),
			cond(corev1.PodReady, readyStatus),
		},
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: *started, FinishedAt: *started}}})
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: ready, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *started}}})
	}
	return st
}
